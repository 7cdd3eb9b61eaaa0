import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, IdParams, ok } from '../http/schemas.js'
import { CreateProductBody, Product } from './schemas.js'
import { createProduct, getProduct } from './service.js'

export const adminProductRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['admin']

  app.post('/api/v1/admin/products', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Create a product',
      body: CreateProductBody,
      response: { 201: Envelope(Product) },
    },
  }, async (request, reply) => {
    const product = await createProduct(app.db, app.config.currency, request.body)
    return reply.code(201).header('Location', `/api/v1/admin/products/${product.productId}`).send(ok(product))
  })

  app.get('/api/v1/admin/products/:id', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Get a product, inactive ones included',
      params: IdParams,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await getProduct(app.db, app.config.currency, request.params.id)))
}
