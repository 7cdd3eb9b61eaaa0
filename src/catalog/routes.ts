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
    schema: { ...list.schema, summary: 'List active products, newest first' },
  }, async (request) => ok(await listActiveProducts(app.db, currency, request.query)))

  app.get('/api/v1/products/search', {
    ...list,
    schema: {
      ...list.schema,
      summary: 'Search active products',
      description: 'The same filters as the list. `q` matches words that start words of the name or description, through a full-text index.',
    },
  }, async (request) => ok(await listActiveProducts(app.db, currency, request.query)))

  app.get('/api/v1/products/:id', {
    config: { access: 'public' },
    schema: {
      tags,
      summary: 'Get an active product',
      params: IdParams,
      response: { 200: Envelope(Product) },
    },
  }, async (request) => ok(await getActiveProduct(app.db, currency, request.params.id)))

  app.get('/api/v1/products/categories', {
    config: { access: 'public' },
    schema: {
      tags,
      summary: 'List every category, by name',
      response: { 200: Envelope(Type.Array(Category)) },
    },
  }, async () => ok(await getCategories(app.db)))

  app.get('/api/v1/products/categories/:categoryId', {
    config: { access: 'public' },
    schema: {
      tags,
      summary: 'Get a category',
      params: CategoryParams,
      response: { 200: Envelope(Category) },
    },
  }, async (request) => ok(await getCategory(app.db, request.params.categoryId)))

  app.post('/api/v1/products/categories', {
    config: { access: 'admin' },
    schema: {
      tags,
      summary: 'Create a category (admin)',
      body: CreateCategoryBody,
      response: { 201: Envelope(Category) },
    },
  }, async (request, reply) => {
    const category = await createCategory(app.db, request.body)
    return reply.code(201).header('Location', `/api/v1/products/categories/${category.categoryId}`).send(ok(category))
  })
}
