import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Envelope, IdParams, Slice, ok } from '../http/schemas.js'
import { Category, CategoryParams, CreateCategoryBody, Product, ProductListQuery } from './schemas.js'
import { createCategory, getActiveProduct, getCategories, getCategory, listActiveProducts } from './service.js'

/** The public catalog: active products and the categories. Creating a category needs an admin. */
export const productRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['products']
  const currency = app.config.currency

  const list = {
    config: { access: 'public' as const },
    schema: {
      tags,
      querystring: ProductListQuery,
      response: { 200: Envelope(Slice(Product)) },
    },
  }
  app.get('/api/v1/products', {
    ...list,
    schema: {
      ...list.schema,
      operationId: 'listProducts',
      summary: 'List active products, newest first',
      description: 'Active products only, newest first, in the cursor (slice) shape. Filters: categoryId (with its subcategories), q, minPrice, maxPrice.',
    },
  }, async (request) => ok(await listActiveProducts(app.db, currency, request.query)))

  app.get('/api/v1/products/search', {
    ...list,
    schema: {
      ...list.schema,
      operationId: 'searchProducts',
      summary: 'Search active products',
      description: 'The same filters as the list. `q` matches words that start words of the name or description, through a full-text index.',
    },
  }, async (request) => ok(await listActiveProducts(app.db, currency, request.query)))

  app.get('/api/v1/products/:id', {
    config: { access: 'public', errors: ['PRODUCT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getProduct',
      summary: 'Get an active product',
      description: 'Inactive products do not exist on public paths (404).',
      params: IdParams,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await getActiveProduct(app.db, currency, request.params.id)))

  app.get('/api/v1/products/categories', {
    config: { access: 'public' },
    schema: {
      tags,
      operationId: 'listCategories',
      summary: 'List every category, by name',
      description: 'A plain array of every category, ordered by name; parentId links a subcategory to its parent.',
      response: { 200: Envelope(Type.Array(Category)) },
    },
  }, async () => ok(await getCategories(app.db)))

  app.get('/api/v1/products/categories/:categoryId', {
    config: { access: 'public', errors: ['CATEGORY_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getCategory',
      summary: 'Get a category',
      description: 'An unknown category is 404 CATEGORY_NOT_FOUND.',
      params: CategoryParams,
      response: { 200: Envelope(Category) },
    },
  }, async (request) => ok(await getCategory(app.db, request.params.categoryId)))

  app.post('/api/v1/products/categories', {
    config: { access: 'admin', sends: ['Location'] },
    schema: {
      tags,
      operationId: 'createCategory',
      summary: 'Create a category (admin)',
      description: 'Admins only. An unknown parentId is 400 naming the field.',
      body: CreateCategoryBody,
      response: { 201: Envelope(Category) },
    },
  }, async (request, reply) => {
    const category = await createCategory(app.db, request.body)
    return reply.code(201).header('Location', `/api/v1/products/categories/${category.categoryId}`).send(ok(category))
  })
}
