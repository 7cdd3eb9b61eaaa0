import assert from 'node:assert/strict'
import { before, after, describe, it } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../helper.js'

// The operations the foundation serves; the document must list each with its method.
const OPERATIONS = [
  'get /api/v1/health',
  'post /api/v1/members',
  'post /api/v1/auth/login',
  'post /api/v1/auth/refresh',
  'post /api/v1/auth/logout',
  'get /oauth2/authorization/{id}',
  'get /login/oauth2/code/{id}',
  'get /api/v1/members/me',
  'get /api/v1/members/{id}',
  'patch /api/v1/members/{id}',
  'patch /api/v1/members/password/change',
  'post /api/v1/members/password/reset',
  'post /api/v1/members/email/verify',
  'post /api/v1/members/me/api-keys',
  'get /api/v1/members/me/api-keys',
  'patch /api/v1/members/me/api-keys/{keyId}/revoke',
  'get /api/v1/products',
  'get /api/v1/products/search',
  'get /api/v1/products/{id}',
  'get /api/v1/products/categories',
  'post /api/v1/products/categories',
  'get /api/v1/products/categories/{categoryId}',
  'post /api/v1/admin/products',
  'get /api/v1/admin/products',
  'get /api/v1/admin/products/{id}',
  'put /api/v1/admin/products/{id}',
  'patch /api/v1/admin/products/{id}',
  'get /api/v1/admin/members',
  'get /api/v1/admin/members/search',
  'get /api/v1/admin/members/{id}',
  'patch /api/v1/admin/members/{id}',
  'get /api/v1/admin/orders',
  'get /api/v1/admin/orders/search',
  'get /api/v1/admin/orders/export',
  'get /api/v1/admin/events',
  'get /api/v1/admin/events/{eventId}',
  'post /api/v1/admin/webhook-endpoints',
  'get /api/v1/admin/webhook-endpoints',
  'get /api/v1/admin/webhook-endpoints/{id}',
  'patch /api/v1/admin/webhook-endpoints/{id}',
  'patch /api/v1/admin/webhook-endpoints/{id}/rotate-secret',
  'patch /api/v1/admin/webhook-endpoints/{id}/delete',
  'get /api/v1/admin/webhook-endpoints/{id}/deliveries',
  'patch /api/v1/admin/webhook-deliveries/{id}/retry',
  'get /api/v1/admin/orders/{id}',
  'patch /api/v1/admin/orders/{id}',
  'get /api/v1/payments/history',
  'get /api/v1/payments/{id}',
  'patch /api/v1/payments/{id}/process',
  'patch /api/v1/payments/{id}/refund',
  'post /api/v1/orders',
  'get /api/v1/orders',
  'get /api/v1/orders/search',
  'get /api/v1/orders/{id}',
  'put /api/v1/orders/{id}',
  'patch /api/v1/orders/{id}',
  'get /api/v1/orders/{id}/items',
  'get /api/v1/orders/{id}/history',
  'patch /api/v1/orders/{id}/confirm',
  'patch /api/v1/orders/{id}/cancel',
  'patch /api/v1/orders/{id}/delete',
]

describe('GET /v3/api-docs', () => {
  let app: FastifyInstance
  let doc: any

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    const res = await app.inject({ url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    doc = res.json()
  })
  after(() => app.close())

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(doc.openapi, '3.1.0')
    const result = await new Validator().validate(doc)
    assert.deepEqual(result, { valid: true })
  })

  it('lists every operation, and only those (no 405 stand-ins, no docs route)', () => {
    const listed = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map(method => `${method} ${path}`))
    assert.deepEqual(listed.sort(), [...OPERATIONS].sort())
  })

  it('describes every error answer with the shared error envelope', () => {
    assert.deepEqual(doc.components.schemas.ErrorEnvelope.properties.error, { $ref: '#/components/schemas/Problem' })
    assert.deepEqual(doc.components.schemas.Problem.required,
      ['type', 'title', 'status', 'detail', 'instance', 'code', 'timestamp'])
    for (const operation of OPERATIONS) {
      const [method, path] = operation.split(' ') as [string, string]
      const responses = doc.paths[path][method].responses
      for (const status of ['4XX', '5XX']) {
        assert.deepEqual(responses[status].content, { 'application/problem+json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } }, `${operation} ${status}`)
      }
    }
  })

  it('marks public operations as needing no credential and the others as taking a bearer token or an API key', () => {
    const open = [
      'get /api/v1/health', 'post /api/v1/members', 'post /api/v1/auth/login', 'post /api/v1/auth/refresh',
      'post /api/v1/members/password/reset', 'post /api/v1/members/email/verify', 'get /api/v1/products/{id}',
      'get /api/v1/products', 'get /api/v1/products/search', 'get /api/v1/products/categories',
      'get /api/v1/products/categories/{categoryId}', 'get /oauth2/authorization/{id}', 'get /login/oauth2/code/{id}',
    ]
    for (const operation of OPERATIONS) {
      const [method, path] = operation.split(' ') as [string, string]
      assert.deepEqual(doc.paths[path][method].security, open.includes(operation) ? [] : [{ bearerAuth: [] }, { apiKeyAuth: [] }], operation)
    }
  })

  it('uses the same schemas that validate requests', () => {
    const body = doc.paths['/api/v1/orders'].post.requestBody.content['application/json'].schema
    assert.equal(body.additionalProperties, false)
    assert.deepEqual(body.required, ['customerId', 'items'])
    assert.deepEqual(body.properties.items.minItems, 1)
    assert.deepEqual(body.properties.items.maxItems, 100)
    const params = doc.paths['/api/v1/orders/search'].get.parameters.map((p: { name: string }) => p.name)
    assert.deepEqual(params.sort(), ['createdFrom', 'createdTo', 'cursor', 'maxTotal', 'minTotal', 'page', 'productId', 'size', 'status'])
  })

  it('documents the export as CSV, not an envelope', () => {
    const ok = doc.paths['/api/v1/admin/orders/export'].get.responses['200']
    assert.deepEqual(Object.keys(ok.content), ['text/csv'])
    assert.deepEqual(ok.content['text/csv'].schema, { type: 'string' })
  })
})
