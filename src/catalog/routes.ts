import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, IdParams, ok } from '../http/schemas.js'
import { Product } from './schemas.js'
import { getActiveProduct } from './service.js'

export const productRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/v1/products/:id', {
    config: { access: 'public' },
    schema: {
      tags: ['products'],
      summary: 'Get an active product',
      params: IdParams,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await getActiveProduct(app.db, app.config.currency, request.params.id)))
}
