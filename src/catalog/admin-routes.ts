import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, ok } from '../http/schemas.js'
import { CreateProductBody, Product } from './schemas.js'
import { createProduct } from './service.js'

export const adminProductRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/v1/admin/products', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Create a product',
      body: CreateProductBody,
      response: { 201: Envelope(Product) },
    },
  }, async (request, reply) => {
    const product = await createProduct(app.db, app.config.currency, request.body)
    return reply.code(201).header('Location', `/api/v1/admin/products/${product.productId}`).send(ok(product))
  })
}
