import assert from 'node:assert/strict'
import { before, after, describe, it } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { FastifyInstance } from 'fastify'
import { Ajv } from 'ajv'
import { buildApp } from '../../src/app.js'
import { ERRORS, type ErrorCode } from '../../src/errors.js'
import { OPERATIONAL } from '../../src/ops/docs/operational.js'
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
  'patch /api/v1/members/me/identities/{provider}/unlink',
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
  'get /api/v1/orders/{id}/fulfillments',
  'get /api/v1/orders/{id}/fulfillments/{fulfillmentId}',
  'post /api/v1/admin/orders/{id}/fulfillments',
  'patch /api/v1/admin/orders/{id}/fulfillments/{fulfillmentId}/deliver',
  'patch /api/v1/admin/orders/{id}/fulfillments/{fulfillmentId}/cancel',
  'post /api/v1/orders/{id}/returns',
  'get /api/v1/orders/{id}/returns',
  'get /api/v1/orders/{id}/returns/{returnId}',
  'patch /api/v1/orders/{id}/returns/{returnId}/cancel',
  'get /api/v1/admin/returns',
  'patch /api/v1/admin/returns/{returnId}/reject',
  'patch /api/v1/admin/returns/{returnId}/receive',
  'post /api/v1/orders/{id}/edits',
  'get /api/v1/orders/{id}/edits',
  'get /api/v1/orders/{id}/edits/{editId}',
  'patch /api/v1/orders/{id}/confirm',
  'patch /api/v1/orders/{id}/cancel',
  'patch /api/v1/orders/{id}/delete',
]

// The operational and docs endpoints, documented from src/ops/docs/operational.ts.
const OPERATIONAL_OPERATIONS = [
  'get /actuator/health',
  'get /actuator/health/liveness',
  'get /actuator/health/readiness',
  'get /actuator/info',
  'get /actuator/prometheus',
  'get /actuator/metrics',
  'get /actuator/metrics/{name}',
  'get /v3/api-docs',
  'get /docs/index.html',
  'get /docs',
  'get /swagger-ui.html',
]

type Doc = any

/** Every operation of the document as [key, operation]. */
function operations (doc: Doc): Array<[string, any]> {
  return Object.entries(doc.paths as Record<string, Record<string, any>>)
    .flatMap(([path, item]) => Object.entries(item).map(([method, operation]): [string, any] => [`${method} ${path}`, operation]))
}

/** The document, with each operation's `$ref`s to components.responses replaced by the response. */
function inlineResponses (doc: Doc): Doc {
  const copy = structuredClone(doc)
  for (const [, operation] of operations(copy)) {
    for (const [status, response] of Object.entries<any>(operation.responses)) {
      if (response.$ref) operation.responses[status] = copy.components.responses[response.$ref.split('/').at(-1)]
    }
  }
  return copy
}

/** The error codes an error response lists (the enum of its allOf narrowing of ErrorEnvelope). */
function codesOf (response: any): string[] {
  const schema = response.content['application/problem+json'].schema
  assert.deepEqual(schema.allOf[0], { $ref: '#/components/schemas/ErrorEnvelope' })
  return schema.allOf[1].properties.error.properties.code.enum
}

/** The document without the examples of its media types (test/ops/openapi-examples.test.ts checks those). */
function withoutExamples (doc: Doc): Doc {
  const copy = structuredClone(doc)
  for (const [, operation] of [...operations(copy), ...operations({ paths: copy.webhooks ?? {} })]) {
    const bodies = [operation.requestBody, ...Object.values<any>(operation.responses)]
    for (const media of bodies.flatMap(body => Object.values<any>(body?.content ?? {}))) {
      delete media.example
      delete media.examples
    }
  }
  return copy
}

/** Every object in `value` (schemas, operations, …), depth first. */
function * walk (value: unknown): Generator<Record<string, unknown>> {
  if (value === null || typeof value !== 'object') return
  if (!Array.isArray(value)) yield value as Record<string, unknown>
  for (const child of Object.values(value)) yield * walk(child)
}

describe('GET /v3/api-docs', () => {
  let app: FastifyInstance
  let served: any
  let doc: any

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    const res = await app.inject({ url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    served = res.json()
    doc = inlineResponses(served)
  })
  after(() => app.close())

  it('is a valid OpenAPI 3.1 document', async () => {
    assert.equal(served.openapi, '3.1.0')
    const result = await new Validator().validate(served)
    assert.deepEqual(result, { valid: true })
  })

  it('writes each error response once, under components.responses, and refers to it', () => {
    const names = Object.keys(served.components.responses)
    assert.ok(names.includes('Error404_ORDER_NOT_FOUND_RESOURCE_NOT_FOUND'), names.join(', '))
    const bodies = Object.values(served.components.responses).map(response => JSON.stringify(response))
    assert.equal(new Set(bodies).size, bodies.length)
    for (const [key, operation] of operations(served)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (Number(status) >= 400 && response.content?.['application/json'] === undefined) assert.match(response.$ref, /^#\/components\/responses\/Error\d{3}_/, `${key} ${status}`)
      }
    }
    const text = JSON.stringify(served)
    for (const name of names) assert.ok(text.includes(`"#/components/responses/${name}"`), name)
  })

  it('lists every operation and the operational and docs endpoints, and only those (no 405 stand-ins)', () => {
    const listed = operations(doc).map(([key]) => key)
    assert.deepEqual(listed.sort(), [...OPERATIONS, ...OPERATIONAL_OPERATIONS].sort())
    for (const key of OPERATIONAL_OPERATIONS) {
      const [method, path] = key.split(' ') as [string, string]
      assert.deepEqual(doc.paths[path][method].tags, ['operations'], key)
    }
  })

  it('describes every error answer with the shared error envelope, per status, with the codes of that status as an enum', () => {
    assert.deepEqual(doc.components.schemas.ErrorEnvelope.properties.error, { $ref: '#/components/schemas/Problem' })
    assert.deepEqual(doc.components.schemas.Problem.required,
      ['type', 'title', 'status', 'detail', 'instance', 'code', 'timestamp'])
    assert.deepEqual(doc.components.schemas.Problem.properties.code, { $ref: '#/components/schemas/ErrorCode' })
    assert.deepEqual(doc.components.schemas.ErrorCode.enum, Object.keys(ERRORS))
    for (const [key, operation] of operations(doc)) {
      const statuses = Object.keys(operation.responses)
      assert.ok(!statuses.includes('4XX') && !statuses.includes('5XX'), `${key}: no ranges`)
      for (const status of statuses.filter(status => Number(status) >= 400)) {
        const response = operation.responses[status]
        if (response.content?.['application/problem+json'] === undefined) continue // health's 503 {status: DOWN}
        const codes = codesOf(response)
        assert.ok(codes.length > 0, `${key} ${status}`)
        for (const code of codes) assert.equal(ERRORS[code as ErrorCode]?.status, Number(status), `${key} ${status} ${code}`)
      }
      assert.deepEqual(codesOf(operation.responses['500']), ['INTERNAL_ERROR'], key)
    }
  })

  it('derives the error statuses from the route: access rule, schemas, headers, rate limit, and the route’s own codes', () => {
    const codes = (key: string, status: number) => {
      const [method, path] = key.split(' ') as [string, string]
      const response = doc.paths[path][method].responses[status]
      return response ? codesOf(response) : []
    }
    for (const [key, operation] of operations(doc).filter(([key]) => OPERATIONS.includes(key))) {
      const publicOperation = operation.security.length === 0
      assert.equal(operation.responses['401'] !== undefined, !publicOperation || ['post /api/v1/auth/login', 'post /api/v1/auth/refresh', 'get /login/oauth2/code/{id}'].includes(key), key)
      if (!publicOperation) assert.ok(operation.responses['401'].headers['WWW-Authenticate'], key)
      if (key.startsWith('get /api/') || operation.requestBody) assert.ok(codes(key, 400).includes('VALIDATION_FAILED'), key)
      if (operation.requestBody) {
        assert.ok(codes(key, 400).includes('MALFORMED_REQUEST'), key)
        assert.deepEqual(codes(key, 413), ['PAYLOAD_TOO_LARGE'], key)
        assert.deepEqual(codes(key, 415), ['UNSUPPORTED_MEDIA_TYPE'], key)
      }
      const headers = (operation.parameters ?? []).filter((p: any) => p.in === 'header').map((p: any) => p.name)
      if (headers.includes('idempotency-key')) {
        assert.ok(codes(key, 409).includes('IDEMPOTENCY_KEY_IN_FLIGHT'), key)
        assert.deepEqual(codes(key, 422), ['IDEMPOTENCY_KEY_REUSED'], key)
      }
      assert.equal(codes(key, 412).includes('PRECONDITION_FAILED'), headers.includes('if-match'), key)
      assert.deepEqual(codes(key, 503), ['SERVICE_UNAVAILABLE'], key)
      assert.ok(operation.responses['503'].headers['Retry-After'], key)
    }
    assert.deepEqual(codes('get /api/v1/orders/{id}', 404), ['ORDER_NOT_FOUND', 'RESOURCE_NOT_FOUND'])
    assert.deepEqual(codes('patch /api/v1/orders/{id}/confirm', 400), ['VALIDATION_FAILED', 'MALFORMED_REQUEST', 'INVALID_ORDER_STATUS'])
    assert.deepEqual(codes('patch /api/v1/orders/{id}/confirm', 403), ['ACCESS_DENIED'])
    assert.deepEqual(codes('patch /api/v1/payments/{id}/process', 402), ['PAYMENT_DECLINED'])
    assert.deepEqual(codes('get /api/v1/admin/events', 410), ['CURSOR_EXPIRED'])
    assert.deepEqual(codes('post /api/v1/auth/login', 403), ['ACCOUNT_SUSPENDED'])
    assert.deepEqual(codes('post /api/v1/auth/login', 429), ['TOO_MANY_REQUESTS'])
    assert.deepEqual(codes('post /api/v1/members/me/api-keys', 409), ['API_KEY_LIMIT_REACHED'])
    assert.deepEqual(codes('get /api/v1/products', 403), [], 'public: no 403')
  })

  it('names every schema that appears twice: envelopes, lists and resources are components referenced by $ref', () => {
    const schemas = doc.components.schemas
    for (const name of [
      'Order', 'OrderSummary', 'OrderItem', 'OrderHistoryEntry', 'OrderStatus', 'Product', 'Category', 'Member', 'MyAccount', 'Payment',
      'Problem', 'ErrorEnvelope', 'ErrorCode', 'InvalidParam', 'Event', 'EventOrder', 'WebhookEndpoint', 'WebhookEndpointWithSecret',
      'WebhookDelivery', 'TokenPair', 'ApiKey', 'CreatedApiKey', 'OrderEnvelope', 'EmptyEnvelope', 'OrderSummarySlice',
      'OrderSummarySliceEnvelope', 'OrderSummaryPage', 'OrderSummaryPageEnvelope', 'ProductSlice', 'ProductPage', 'PaymentSlice',
      'MemberPage', 'EventSlice', 'WebhookEndpointPage', 'WebhookDeliveryPage', 'Health', 'BuildInfo', 'Metric',
    ]) assert.ok(schemas[name], name)
    assert.deepEqual(schemas.OrderEnvelope.properties.data, { $ref: '#/components/schemas/Order' })
    assert.deepEqual(schemas.OrderSummarySlice.properties.content.items, { $ref: '#/components/schemas/OrderSummary' })
    assert.deepEqual(schemas.Order.properties.status, { $ref: '#/components/schemas/OrderStatus' })
    assert.deepEqual(schemas.Event.properties.data.properties.payment.anyOf[0], { $ref: '#/components/schemas/Payment' })
    const { allowedActions: _allowedActions, fulfillments: _fulfillments, ...orderFields } = schemas.Order.properties
    assert.deepEqual(schemas.EventOrder.properties, orderFields)
    // Every JSON success answer under /api is a reference to a named envelope.
    for (const [key, operation] of operations(doc).filter(([key]) => OPERATIONS.includes(key))) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        const schema = response.content?.['application/json']?.schema
        if (Number(status) < 300 && schema && key !== 'get /api/v1/health') assert.match(schema.$ref ?? '', /^#\/components\/schemas\/\w+Envelope$/, `${key} ${status}`)
      }
    }
    // The order is written out once: in its component (its examples aside).
    const text = JSON.stringify(withoutExamples(doc))
    assert.equal(text.split('"allowedActions":').length - 1, 1)
    assert.equal(text.split('"itemCount":').length - 1, 1)
    // No schema of three or more properties is written out twice anywhere in the document.
    const seen = new Map<string, number>()
    for (const node of walk(doc)) {
      const properties = node.properties as Record<string, unknown> | undefined
      if (properties && typeof properties === 'object' && Object.keys(properties).length >= 3 && node.type === 'object') {
        const shape = JSON.stringify(node)
        seen.set(shape, (seen.get(shape) ?? 0) + 1)
      }
    }
    assert.deepEqual([...seen].filter(([, count]) => count > 1), [])
    // Every component is referenced.
    for (const name of Object.keys(schemas)) assert.ok(text.includes(`"#/components/schemas/${name}"`), `${name} is referenced`)
  })

  it('declares the response headers the operations send', () => {
    const response = (key: string, status: number | string) => {
      const [method, path] = key.split(' ') as [string, string]
      return doc.paths[path][method].responses[String(status)]
    }
    const headers = (key: string, status: number | string) => Object.keys(response(key, status)?.headers ?? {})
    for (const key of ['post /api/v1/orders', 'post /api/v1/products/categories', 'post /api/v1/admin/products', 'post /api/v1/members', 'post /api/v1/admin/webhook-endpoints']) {
      assert.ok(headers(key, 201).includes('Location'), key)
    }
    assert.ok(!headers('post /api/v1/auth/login', 201).includes('Location'))
    for (const key of ['get /api/v1/orders/{id}', 'put /api/v1/orders/{id}', 'patch /api/v1/orders/{id}', 'patch /api/v1/orders/{id}/confirm',
      'patch /api/v1/orders/{id}/cancel', 'patch /api/v1/orders/{id}/delete', 'get /api/v1/admin/orders/{id}', 'patch /api/v1/admin/orders/{id}']) {
      assert.ok(headers(key, 200).includes('ETag'), key)
    }
    assert.ok(headers('post /api/v1/orders', 201).includes('ETag'))
    for (const key of ['get /api/v1/orders/{id}', 'get /api/v1/admin/orders/{id}']) {
      const [method, path] = key.split(' ') as [string, string]
      assert.deepEqual(headers(key, 304), ['X-Request-Id', 'Cache-Control', 'ETag'], key)
      assert.equal(response(key, 304).content, undefined, key)
      assert.ok(doc.paths[path][method].parameters.some((p: any) => p.in === 'header' && p.name === 'if-none-match'), key)
    }
    assert.equal(response('get /api/v1/orders', 304), undefined)
    for (const key of ['post /api/v1/orders', 'patch /api/v1/payments/{id}/process', 'patch /api/v1/payments/{id}/refund']) {
      assert.ok(headers(key, 200).includes('Idempotent-Replayed'), key)
    }
    for (const key of ['post /api/v1/auth/login', 'post /api/v1/members', 'post /api/v1/members/password/reset']) {
      for (const status of [201, 429]) {
        for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) assert.ok(headers(key, status).includes(name), `${key} ${status} ${name}`)
      }
      assert.ok(headers(key, 429).includes('Retry-After'), key)
    }
    assert.ok(headers('get /api/v1/admin/orders/export', 200).includes('Content-Disposition'))
    assert.ok(headers('get /login/oauth2/code/{id}', 302).includes('Location'))
    for (const [key, operation] of operations(doc)) {
      for (const [status, answer] of Object.entries<any>(operation.responses)) {
        assert.deepEqual(answer.headers['X-Request-Id'], { $ref: '#/components/headers/X-Request-Id' }, `${key} ${status}`)
      }
    }
    for (const name of Object.keys(doc.components.headers)) assert.ok(JSON.stringify(doc.paths).includes(`"#/components/headers/${name}"`), name)
  })

  it('types path ids as positive 64-bit integers', () => {
    for (const [key, operation] of operations(doc)) {
      for (const parameter of (operation.parameters ?? []).filter((p: any) => p.in === 'path')) {
        if (key.includes('/oauth2/') || key.endsWith('/metrics/{name}') || key.includes('/identities/{provider}/')) {
          assert.equal(parameter.schema.type, 'string', key)
          continue
        }
        assert.deepEqual(parameter.schema, { type: 'integer', format: 'int64', minimum: 1, pattern: '^[1-9][0-9]{0,18}$' }, `${key} ${parameter.name}`)
      }
    }
  })

  it('states the query, header and body rules the service enforces', () => {
    const parameter = (key: string, name: string) => {
      const [method, path] = key.split(' ') as [string, string]
      return doc.paths[path][method].parameters.find((p: any) => p.name === name)
    }
    const matches = (schema: any, value: string) => new RegExp(schema.pattern, 'u').test(value)
    for (const key of ['get /api/v1/orders', 'get /api/v1/orders/search', 'get /api/v1/admin/orders', 'get /api/v1/admin/orders/export']) {
      const status = parameter(key, 'status').schema
      for (const good of ['PLACED', 'PLACED,CONFIRMED', 'PENDING, DELETED']) assert.ok(matches(status, good), `${key} ${good}`)
      for (const bad of ['placed', 'PLACED,', 'SHIPPED', 'PLACED;CONFIRMED']) assert.ok(!matches(status, bad), `${key} ${bad}`)
    }
    const type = parameter('get /api/v1/admin/events', 'type').schema
    assert.ok(matches(type, 'order.placed,payment.failed') && !matches(type, 'order.shipped') && !matches(type, 'orderXplaced'))
    for (const key of ['get /api/v1/products', 'get /api/v1/products/search', 'get /api/v1/admin/products']) {
      const q = parameter(key, 'q').schema
      assert.ok(matches(q, 'espresso') && matches(q, '--é') && !matches(q, '-- ;'), key)
    }
    const createdFrom = parameter('get /api/v1/orders/search', 'createdFrom').schema
    assert.equal(createdFrom.format, 'date-time')
    assert.ok(matches(createdFrom, '2026-11-22T09:30:00.000Z') && matches(createdFrom, '2026-11-22T09:30:00+01:00'))
    assert.ok(!matches(createdFrom, '2026-11-22') && !matches(createdFrom, '2026-11-22T09:30:00'))
    for (const key of ['post /api/v1/orders', 'patch /api/v1/payments/{id}/process', 'patch /api/v1/payments/{id}/refund']) {
      const header = parameter(key, 'idempotency-key').schema
      assert.deepEqual([header.minLength, header.maxLength], [1, 255], key)
      assert.ok(matches(header, 'a b~') && !matches(header, 'tab\there') && !matches(header, 'é'), key)
    }
    const reset = doc.paths['/api/v1/members/password/reset'].post.requestBody.content['application/json'].schema
    assert.deepEqual(reset.oneOf.map((branch: any) => [branch.required, branch.additionalProperties]),
      [[['email'], false], [['token', 'newPassword'], false]])
    const login = doc.paths['/api/v1/auth/login'].post.requestBody.content['application/json'].schema
    assert.deepEqual(login.oneOf.map((branch: any) => branch.required), [['email', 'password'], ['loginCode']])
    for (const key of ['patch /api/v1/orders/{id}/confirm', 'patch /api/v1/payments/{id}/refund', 'post /api/v1/auth/logout']) {
      const [method, path] = key.split(' ') as [string, string]
      const body = doc.paths[path][method].requestBody
      assert.equal(body.required, false, key)
      assert.match(body.description, /empty body sent with `Content-Type: application\/json` is 400 MALFORMED_REQUEST/, key)
    }
    assert.equal(doc.paths['/api/v1/orders'].post.requestBody.required, true)
  })

  it('states the rules that relate two inputs in the description and x- extensions', () => {
    const search = doc.paths['/api/v1/products/search'].get
    assert.deepEqual(search['x-constraints'].map((c: any) => [c.rule, ...c.parameters]), [['at-most', 'minPrice', 'maxPrice'], ['not-both', 'cursor', 'page']])
    assert.match(search.description, /MinPrice must not be above maxPrice/)
    const orders = doc.paths['/api/v1/admin/orders/search'].get
    assert.deepEqual(orders['x-constraints'].map((c: any) => [c.rule, ...c.parameters]), [['at-most', 'minTotal', 'maxTotal'], ['before', 'createdFrom', 'createdTo']])
    for (const [key, operation] of operations(doc).filter(([key]) => key.includes(' /api/'))) {
      assert.equal(operation['x-additional-query-parameters'], false, key)
      assert.match(operation.description, /Unknown query parameters are refused/, key)
    }
    assert.equal(doc.paths['/oauth2/authorization/{id}'].get['x-additional-query-parameters'], undefined)
  })

  it('says that PENDING is a legacy status no order placed through the API enters', () => {
    assert.match(doc.components.schemas.OrderStatus.description, /PENDING is a legacy status: no order placed through this API enters it/)
  })

  it('documents the operational endpoints as they answer', async () => {
    const ajv = new Ajv({ strict: false, validateFormats: false })
    for (const schema of Object.entries<any>(doc.components.schemas)) ajv.addSchema(schema[1], `#/components/schemas/${schema[0]}`)
    for (const [key, endpoint] of Object.entries(OPERATIONAL)) {
      const [method, url] = key.split(' ') as [string, string]
      const target = url.replace(':name', 'http.server.requests')
      const res = await app.inject({ method, url: target })
      const documented = doc.paths[endpoint.path].get.responses[String(res.statusCode)]
      assert.ok(documented, `${key} answered ${res.statusCode}`)
      if (res.statusCode === 302) {
        assert.ok(res.headers.location, key)
        continue
      }
      const [mediaType, media] = Object.entries<any>(documented.content)[0]!
      assert.equal(String(res.headers['content-type']).split(';')[0], mediaType.split(';')[0], key)
      if (mediaType === 'application/json' && media.schema.$ref) {
        const validate = ajv.getSchema(media.schema.$ref)!
        assert.ok(validate(res.json()), `${key}: ${JSON.stringify(validate.errors)}`)
      }
    }
  })

  it('describes an optional body as the service reads it: none, or a JSON object; empty with a JSON type is malformed', async () => {
    const admin = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'admin@example.com', password: 'admin-password' } })
    const headers = { authorization: `Bearer ${admin.json().data.accessToken}` }
    const url = '/api/v1/admin/webhook-deliveries/999/retry'
    assert.equal((await app.inject({ method: 'PATCH', url, headers })).json().error.code, 'WEBHOOK_DELIVERY_NOT_FOUND')
    assert.equal((await app.inject({ method: 'PATCH', url, headers, payload: {} })).json().error.code, 'WEBHOOK_DELIVERY_NOT_FOUND')
    const empty = await app.inject({ method: 'PATCH', url, headers: { ...headers, 'content-type': 'application/json' }, payload: '' })
    assert.equal(empty.statusCode, 400)
    assert.equal(empty.json().error.code, 'MALFORMED_REQUEST')
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
