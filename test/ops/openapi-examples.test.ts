import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { buildApp } from '../../src/app.js'
import { EVENT_TYPES } from '../../src/events/schemas.js'
import pkg from '../../package.json' with { type: 'json' }
import { describeEachBackend, testConfig } from '../helper.js'
import { eventually, Receiver } from '../webhooks/receiver.js'

// ajv-formats is CommonJS; under ESM its function arrives as the default export's `default`.
const addFormats = addFormatsModule.default

type Doc = any

/** Every operation of the document (paths and webhooks) as [key, operation]. */
function operations (doc: Doc, part: 'paths' | 'webhooks' = 'paths'): Array<[string, any]> {
  return Object.entries(doc[part] as Record<string, Record<string, any>>)
    .flatMap(([path, item]) => Object.entries(item).map(([method, operation]): [string, any] => [`${method} ${path}`, operation]))
}

/** The values a media type shows: its `example`, or each of its named `examples`. */
function examplesOf (media: any): Array<[string, unknown]> {
  if (media.example !== undefined) return [['example', media.example]]
  return Object.entries<any>(media.examples ?? {}).map(([name, example]) => [name, example.value])
}

/** A JSON Schema 2020-12 validator (OpenAPI 3.1's dialect) that knows the document's components. */
function validatorFor (doc: Doc): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false })
  addFormats(ajv)
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) })
  for (const [name, schema] of Object.entries<any>(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${name}`)
  return ajv
}

/**
 * What is wrong with the examples of one media type: none given, or one its schema refuses. A
 * non-JSON media type (CSV, text, HTML) needs a string.
 */
function problemsOf (ajv: Ajv2020, where: string, type: string, media: any): string[] {
  const examples = examplesOf(media)
  if (examples.length === 0) return [`${where} ${type}: no example`]
  return examples.flatMap(([name, value]) => {
    if (!type.startsWith('application/json')) return typeof value === 'string' && value.length > 0 ? [] : [`${where} ${type} ${name}: not a text`]
    const validate = ajv.compile(media.schema)
    return validate(value) ? [] : [`${where} ${name}: ${ajv.errorsText(validate.errors)}`]
  })
}

describe('the OpenAPI document’s examples, webhooks and headers', () => {
  let app: FastifyInstance
  let doc: Doc
  let ajv: Ajv2020

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    const res = await app.inject({ url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    doc = res.json()
    ajv = validatorFor(doc)
  })
  after(() => app.close())

  it('gives every request body an example at the media type that its schema accepts', () => {
    const bodies = [...operations(doc), ...operations(doc, 'webhooks')].filter(([, operation]) => operation.requestBody)
    assert.ok(bodies.length >= 29 + EVENT_TYPES.length, `${bodies.length} bodies`)
    const problems = bodies.flatMap(([key, operation]) => Object.entries<any>(operation.requestBody.content)
      .flatMap(([type, media]) => problemsOf(ajv, key, type, media)))
    assert.deepEqual(problems, [])
  })

  it('gives every 2xx answer with a body an example at the media type that its schema accepts', () => {
    const problems: string[] = []
    let answers = 0
    for (const [key, operation] of operations(doc)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (!status.startsWith('2')) continue
        for (const [type, media] of Object.entries<any>(response.content ?? {})) {
          answers++
          problems.push(...problemsOf(ajv, `${key} ${status}`, type, media))
        }
      }
    }
    assert.ok(answers >= 70, `${answers} answers`)
    assert.deepEqual(problems, [])
  })

  it('shows a POST /api/v1/orders body and answer that tell the same story (the order placed from that body)', () => {
    const operation = doc.paths['/api/v1/orders'].post
    const body = operation.requestBody.content['application/json'].example
    const placed = operation.responses['201'].content['application/json'].example
    assert.equal(placed.success, true)
    assert.equal(placed.data.customerId, body.customerId)
    assert.deepEqual(placed.data.items.map((item: any) => ({ productId: item.productId, quantity: item.quantity })), body.items)
    assert.equal(placed.data.totalAmount, placed.data.items.reduce((sum: number, item: any) => sum + item.lineTotal, 0))
    assert.deepEqual(operation.responses['200'].content['application/json'].example, placed, 'the replay is the first answer again')
  })

  it('pre-fills no optional query parameter: optional filters carry no example, so Swagger UI’s "Try it out" filters nothing', () => {
    const prefilled: string[] = []
    for (const [key, operation] of operations(doc)) {
      for (const parameter of (operation.parameters ?? []).filter((p: any) => p.in === 'query' && p.required !== true)) {
        if (parameter.example !== undefined || parameter.examples !== undefined || parameter.schema?.example !== undefined ||
          parameter.schema?.examples !== undefined || (parameter.schema?.default !== undefined && !['size', 'page'].includes(parameter.name))) {
          prefilled.push(`${key} ${parameter.name}`)
        }
      }
    }
    assert.deepEqual(prefilled, [])
    // The filters still say how they are written.
    const status = doc.paths['/api/v1/orders'].get.parameters.find((p: any) => p.name === 'status')
    assert.match(status.description, /e\.g\. `PLACED,CONFIRMED`/)
  })

  it('lists exactly the event types the service emits under webhooks, each with the Standard Webhooks headers, the Event payload and the receiver’s answers', () => {
    assert.deepEqual(Object.keys(doc.webhooks), [...EVENT_TYPES])
    const ids = new Set<string>()
    for (const type of EVENT_TYPES) {
      assert.deepEqual(Object.keys(doc.webhooks[type]), ['post'], type)
      const operation = doc.webhooks[type].post
      ids.add(operation.operationId)
      assert.deepEqual(operation.tags, ['webhooks'], type)
      const headers = Object.fromEntries(operation.parameters.map((p: any) => [p.name, p]))
      assert.deepEqual(Object.keys(headers), ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'user-agent'], type)
      for (const header of Object.values<any>(headers)) assert.deepEqual([header.in, header.required], ['header', true], `${type} ${header.name}`)
      const pattern = (name: string) => new RegExp(headers[name].schema.pattern)
      assert.ok(pattern('webhook-id').test('812') && !pattern('webhook-id').test('0812'), type)
      assert.ok(pattern('webhook-timestamp').test('1795512600'), type)
      const signature = 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='
      assert.ok(pattern('webhook-signature').test(signature) && pattern('webhook-signature').test(`${signature} ${signature}`), type)
      assert.ok(!pattern('webhook-signature').test('v2,abc'), type)
      const media = operation.requestBody.content['application/json']
      assert.equal(operation.requestBody.required, true)
      assert.deepEqual(media.schema.allOf, [{ $ref: '#/components/schemas/Event' }, { type: 'object', properties: { type: { const: type } } }], type)
      assert.equal(media.example.type, type)
      assert.deepEqual(Object.keys(operation.responses), ['410', '429', '503', '2XX', 'default'], type)
      for (const status of ['429', '503']) assert.deepEqual(operation.responses[status].headers, { 'Retry-After': { $ref: '#/components/headers/Retry-After' } })
    }
    assert.equal(ids.size, EVENT_TYPES.length)
    assert.ok(doc.tags.some((tag: any) => tag.name === 'webhooks'))
  })

  it('refuses a webhook example whose type is not its entry’s (the payload schema pins `type`)', () => {
    const media = doc.webhooks['order.placed'].post.requestBody.content['application/json']
    assert.equal(ajv.compile(media.schema)({ ...media.example, type: 'order.cancelled' }), false)
  })

  it('marks the headers sent on every answer that lists them as required: X-Request-Id, Location, ETag', () => {
    const required = Object.entries<any>(doc.components.headers).filter(([, header]) => header.required === true).map(([name]) => name)
    assert.deepEqual(required.sort(), ['ETag', 'Location', 'X-Request-Id'])
  })

  it('declares Location beside Idempotent-Replayed on the replay (200) of POST /api/v1/orders', () => {
    const headers = Object.keys(doc.paths['/api/v1/orders'].post.responses['200'].headers)
    assert.deepEqual(headers, ['X-Request-Id', 'Cache-Control', 'Location', 'ETag', 'Idempotent-Replayed'])
    for (const key of ['/api/v1/payments/{id}/process', '/api/v1/payments/{id}/refund']) {
      assert.equal(doc.paths[key].patch.responses['200'].headers.Location, undefined, key)
    }
  })

  it('claims no licence the repository does not declare', () => {
    assert.equal((pkg as { license?: string }).license, undefined, 'package.json now names a licence: put it in info.license')
    assert.equal(doc.info.license, undefined)
    assert.match(doc.info['x-license-note'], /No licence is declared/)
  })
})

describeEachBackend('the headers the OpenAPI document marks required are sent', (ctx) => {
  let doc: Doc

  /** The required headers the document lists for the answer `res` of `method path`, missing from it. */
  function missingRequired (method: string, path: string, res: LightMyRequestResponse): string[] {
    const response = doc.paths[path][method].responses[String(res.statusCode)]
    assert.ok(response, `${method} ${path} ${res.statusCode} is documented`)
    return Object.entries<any>(response.headers ?? {})
      .filter(([, ref]) => doc.components.headers[ref.$ref.split('/').at(-1)].required === true)
      .map(([name]) => name)
      .filter(name => res.headers[name.toLowerCase()] === undefined)
      .map(name => `${method} ${path} ${res.statusCode} ${name}`)
  }

  it('on creations, an idempotent replay, reads, conditional reads, changes and errors', async () => {
    doc = (await ctx.api.inject({ url: '/v3/api-docs' })).json()
    const admin = await ctx.api.admin()
    const member = await ctx.api.member('ada')
    const answers: Array<[string, string, LightMyRequestResponse]> = []
    const send = async (method: string, path: string, url: string, options: { headers?: Record<string, string>, payload?: object } = {}) => {
      const res = await ctx.api.inject({ method: method.toUpperCase() as 'GET', url, ...options })
      answers.push([method, path, res])
      return res
    }

    const registered = await send('post', '/api/v1/members', '/api/v1/members', { payload: { email: 'grace@example.com', password: 'correct horse battery', name: 'Grace' } })
    assert.equal(registered.statusCode, 201, registered.body)
    const product = await send('post', '/api/v1/admin/products', '/api/v1/admin/products', { headers: admin.headers, payload: { name: 'Espresso beans, 1 kg', price: 2450, stockQuantity: 10 } })
    assert.equal(product.statusCode, 201, product.body)
    const body = { customerId: member.id, items: [{ productId: product.json().data.productId, quantity: 2 }] }
    const keyed = { headers: { ...member.headers, 'idempotency-key': 'first-hour-1' }, payload: body }
    const placed = await send('post', '/api/v1/orders', '/api/v1/orders', keyed)
    const replay = await send('post', '/api/v1/orders', '/api/v1/orders', keyed)
    assert.deepEqual([placed.statusCode, replay.statusCode], [201, 200], replay.body)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.headers.location, `/api/v1/orders/${placed.json().data.orderId}`)
    assert.equal(replay.headers.location, placed.headers.location)
    const url = placed.headers.location as string
    const read = await send('get', '/api/v1/orders/{id}', url, { headers: member.headers })
    const notModified = await send('get', '/api/v1/orders/{id}', url, { headers: { ...member.headers, 'if-none-match': read.headers.etag as string } })
    assert.deepEqual([read.statusCode, notModified.statusCode], [200, 304])
    const changed = await send('patch', '/api/v1/orders/{id}', url, { headers: member.headers, payload: { orderId: placed.json().data.orderId, memo: 'Ring twice' } })
    const confirmed = await send('patch', '/api/v1/orders/{id}/confirm', `${url}/confirm`, { headers: member.headers })
    const asAdmin = await send('get', '/api/v1/admin/orders/{id}', `/api/v1/admin/orders/${placed.json().data.orderId}`, { headers: admin.headers })
    const absent = await send('get', '/api/v1/orders/{id}', '/api/v1/orders/999999', { headers: member.headers })
    assert.deepEqual([changed.statusCode, confirmed.statusCode, asAdmin.statusCode, absent.statusCode], [200, 200, 200, 404])
    await send('get', '/actuator/health', '/actuator/health')

    assert.deepEqual(answers.flatMap(([method, path, res]) => missingRequired(method, path, res)), [])
    // The check looks at something: these answers list required headers.
    assert.ok(answers.filter(([, , res]) => res.statusCode === 201 || res.headers.etag).length >= 8)
  })
})

describeEachBackend('the webhooks section describes what the dispatcher really sends', (ctx) => {
  const receiver = new Receiver()
  before(() => receiver.start())
  after(() => receiver.stop())

  it('sends, for each event, the headers its entry requires, matching their patterns, and a body its schema accepts', async () => {
    const doc = (await ctx.api.inject({ url: '/v3/api-docs' })).json()
    const ajv = validatorFor(doc)
    const admin = await ctx.api.admin()
    const member = await ctx.api.member('ada')
    const endpoint = await ctx.api.inject({ method: 'POST', url: '/api/v1/admin/webhook-endpoints', headers: admin.headers, payload: { url: receiver.url } })
    assert.equal(endpoint.statusCode, 201, endpoint.body)
    receiver.secrets = [endpoint.json().data.secret]
    const product = await ctx.api.product(admin, { price: 2450, stockQuantity: 10 })
    const order = await ctx.api.order(member, [{ productId: product.productId, quantity: 2 }])
    for (const verb of ['confirm', 'cancel']) {
      const res = await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/${verb}`, headers: member.headers })
      assert.equal(res.statusCode, 200, res.body)
    }
    const sent = ['order.placed', 'payment.created', 'order.confirmed', 'payment.cancelled', 'order.cancelled']
    await eventually(() => receiver.received.length === sent.length, 5000, 'every event delivered')
    assert.deepEqual(receiver.received.map(got => got.event.type), sent)
    assert.deepEqual(receiver.refused, [])

    const problems: string[] = []
    for (const got of receiver.received) {
      const operation = doc.webhooks[got.event.type]?.post
      if (!operation) {
        problems.push(`${got.event.type}: not in webhooks`)
        continue
      }
      for (const header of operation.parameters.filter((p: any) => p.in === 'header')) {
        const value = got.headers[header.name]
        if (value === undefined) problems.push(`${got.event.type}: no ${header.name}`)
        else if (!new RegExp(header.schema.pattern).test(String(value))) problems.push(`${got.event.type}: ${header.name} ${value}`)
      }
      const validate = ajv.compile(operation.requestBody.content['application/json'].schema)
      if (!validate(JSON.parse(got.body))) problems.push(`${got.event.type}: ${ajv.errorsText(validate.errors)}`)
    }
    assert.deepEqual(problems, [])
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } })
