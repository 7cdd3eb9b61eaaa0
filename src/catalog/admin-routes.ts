import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, IdParams, Page, ok } from '../http/schemas.js'
import { AdminProductListQuery, CreateProductBody, PatchProductBody, Product, PutProductBody } from './schemas.js'
import { changeProduct, createProduct, getProduct, pageAllProducts } from './service.js'

/** The back office's catalog: every product, inactive ones included. */
export const adminProductRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['admin']
  const currency = app.config.currency

  app.post('/api/v1/admin/products', {
    config: { access: 'admin', sends: ['Location'] },
    schema: {
      tags,
      operationId: 'adminCreateProduct',
      summary: 'Create a product',
      description: 'Prices are in minor units of the deployment’s currency; status defaults to ACTIVE. An unknown categoryId is 400.',
      body: CreateProductBody,
      response: { 201: Envelope(Product) },
    },
  }, async (request, reply) => {
    const product = await createProduct(app.db, currency, request.body)
    return reply.code(201).header('Location', `/api/v1/admin/products/${product.productId}`).send(ok(product))
  })

  app.get('/api/v1/admin/products', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'adminListProducts',
      summary: 'List every product (page shape)',
      description: 'Every product, inactive ones included, in the offset (page) shape; filters status, categoryId, q, minPrice, maxPrice; sort by createdAt, name, price or stockQuantity.',
      querystring: AdminProductListQuery,
      response: { 200: Envelope(Page(Product)) },
    },
  }, async (request) => ok(await pageAllProducts(app.db, currency, request.query)))

  app.get('/api/v1/admin/products/:id', {
    config: { access: 'admin', errors: ['PRODUCT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'adminGetProduct',
      summary: 'Get a product, inactive ones included',
      description: 'Any product, inactive ones included.',
      params: IdParams,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await getProduct(app.db, currency, request.params.id)))

  app.put('/api/v1/admin/products/:id', {
    config: { access: 'admin', errors: ['PRODUCT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'adminReplaceProduct',
      summary: 'Replace a product',
      description: 'All six fields are required; description and categoryId may be null. Placed orders keep the prices they were placed at.',
      params: IdParams,
      body: PutProductBody,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await changeProduct(app.db, currency, request.params.id, request.body)))

  app.patch('/api/v1/admin/products/:id', {
    config: { access: 'admin', errors: ['PRODUCT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'adminUpdateProduct',
      summary: 'Change some fields of a product (price, stock, status, …)',
      description: 'Absent fields are unchanged; description and categoryId may be set to null.',
      params: IdParams,
      body: PatchProductBody,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await changeProduct(app.db, currency, request.params.id, request.body)))
}
