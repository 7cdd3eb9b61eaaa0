import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { ADMIN, testConfig } from '../helper.js'

/*
 * CORS (CONTRACT §11 Wire) over real HTTP, as a browser's requests arrive: preflights are OPTIONS
 * with Origin, Access-Control-Request-Method and Access-Control-Request-Headers; the requests that
 * follow carry Origin. Each suite listens on 127.0.0.1 and is called with fetch.
 */

const SHOP = 'https://shop.example'
const LOCAL = 'http://localhost:3000'
const EVIL = 'https://evil.example'

const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET, POST, PUT, PATCH',
  'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-API-Key, X-Request-Id',
  'access-control-max-age': '600',
}
const EXPOSED = 'ETag, Location, Idempotent-Replayed, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, X-Request-Id'

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** A listening app and a way to call it. */
class Server {
  app!: FastifyInstance
  base!: string

  constructor (private readonly env: Record<string, string>) {}

  async start (): Promise<void> {
    this.app = await buildApp(testConfig(this.env), { logger: false })
    await this.app.listen({ port: 0, host: '127.0.0.1' })
    this.base = `http://127.0.0.1:${(this.app.server.address() as AddressInfo).port}`
  }

  async send (method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
    const res = await fetch(this.base + path, {
      method,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
  }

  /** A browser's preflight for `method` with `requestHeaders` from `origin`. */
  preflight (path: string, origin: string, method = 'PATCH', requestHeaders = 'authorization,content-type,if-match'): Promise<Answer> {
    return this.send('OPTIONS', path, {
      origin, 'access-control-request-method': method, 'access-control-request-headers': requestHeaders,
    })
  }
}

/** Every CORS header of an answer, and Vary. */
function corsOf (answer: Answer): Record<string, string> {
  return Object.fromEntries(Object.entries(answer.headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'))
}

/** An error envelope with `code` and `status`. */
function assertEnvelope (answer: Answer, status: number, code: string): void {
  assert.equal(answer.status, status, answer.body)
  assert.match(answer.headers['content-type'] ?? '', /^application\/problem\+json/)
  const body = JSON.parse(answer.body)
  assert.equal(body.success, false)
  assert.equal(body.data, null)
  assert.equal(body.error.code, code)
}

function withServer (env: Record<string, string>): Server {
  const server = new Server(env)
  before(() => server.start())
  after(() => server.app.close())
  return server
}

describe('CORS off (CORS_ORIGINS unset)', () => {
  const server = withServer({})

  it('answers a preflight as any OPTIONS: 405 with Allow on a known path, 404 on an unknown one, no CORS header at all', async () => {
    const known = await server.preflight('/api/v1/orders/1', SHOP)
    assertEnvelope(known, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(known.headers.allow, 'GET, HEAD, PATCH, PUT')
    assert.deepEqual(corsOf(known), {})
    const unknown = await server.preflight('/api/v1/nothing-here', SHOP)
    assertEnvelope(unknown, 404, 'RESOURCE_NOT_FOUND')
    assert.deepEqual(corsOf(unknown), {})
  })

  it('sends no CORS header on a cross-origin GET, and no Vary: Origin', async () => {
    const res = await server.send('GET', '/api/v1/products', { origin: SHOP })
    assert.equal(res.status, 200)
    assert.deepEqual(corsOf(res), { vary: 'Authorization, X-API-Key' })
    const health = await server.send('GET', '/api/v1/health', { origin: SHOP })
    assert.deepEqual(corsOf(health), {})
  })
})

describe('CORS with a list of origins', () => {
  const server = withServer({ CORS_ORIGINS: `${SHOP}, ${LOCAL}` })

  it('answers a preflight from a listed origin 204, with no body and every CORS header', async () => {
    const res = await server.preflight('/api/v1/orders/1', SHOP)
    assert.equal(res.status, 204)
    assert.equal(res.body, '')
    assert.equal(res.headers['content-type'], undefined, 'a 204 is not an envelope')
    assert.deepEqual(corsOf(res), {
      'access-control-allow-origin': SHOP,
      'access-control-expose-headers': EXPOSED,
      ...PREFLIGHT_HEADERS,
      vary: 'Origin',
    })
    assert.equal(res.headers['access-control-allow-credentials'], undefined)
    assert.match(res.headers['x-request-id'] ?? '', /.+/)
  })

  it('reflects each listed origin exactly, for every method the contract allows', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH']) {
      const res = await server.preflight('/api/v1/orders', LOCAL, method, 'authorization,idempotency-key,content-type')
      assert.equal(res.status, 204, method)
      assert.equal(res.headers['access-control-allow-origin'], LOCAL)
      assert.equal(res.headers['access-control-allow-methods'], 'GET, POST, PUT, PATCH')
    }
  })

  it('needs no credential: a preflight of an admin path is 204, not 401', async () => {
    const res = await server.preflight('/api/v1/admin/orders/1', SHOP, 'PATCH', 'x-api-key,content-type,if-match')
    assert.equal(res.status, 204)
    assert.equal(res.headers['access-control-allow-origin'], SHOP)
    assert.equal(res.headers['www-authenticate'], undefined)
  })

  it('answers a preflight to an unknown /api path 204 too, and the request itself is a 404 the page can read', async () => {
    for (const path of ['/api/v1/nothing-here', '/api/v1/orders/', '/api/v2/orders']) {
      const res = await server.preflight(path, SHOP, 'GET', 'authorization')
      assert.equal(res.status, 204, path)
      assert.deepEqual(corsOf(res), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, ...PREFLIGHT_HEADERS, vary: 'Origin' })
    }
    const unknown = await server.send('GET', '/api/v1/nothing-here', { origin: SHOP })
    assertEnvelope(unknown, 404, 'RESOURCE_NOT_FOUND')
    assert.equal(unknown.headers['access-control-allow-origin'], SHOP)
    const slash = await server.send('GET', '/api/v1/orders/', { origin: SHOP })
    assertEnvelope(slash, 404, 'RESOURCE_NOT_FOUND')
    assert.equal(slash.headers['access-control-allow-origin'], SHOP)
    const v2 = await server.send('GET', '/api/v2/orders', { origin: SHOP })
    assertEnvelope(v2, 404, 'API_VERSION_NOT_AVAILABLE')
    assert.equal(v2.headers['access-control-allow-origin'], SHOP)
  })

  it('gives an origin not listed no Access-Control-Allow-Origin: its preflight is the OPTIONS it would be with CORS off', async () => {
    const res = await server.preflight('/api/v1/orders/1', EVIL)
    assertEnvelope(res, 405, 'METHOD_NOT_ALLOWED')
    assert.deepEqual(corsOf(res), { vary: 'Origin' })
    const unknown = await server.preflight('/api/v1/nothing-here', EVIL)
    assertEnvelope(unknown, 404, 'RESOURCE_NOT_FOUND')
    assert.deepEqual(corsOf(unknown), { vary: 'Origin' })
    // An origin is compared exactly: no prefix, suffix, case or trailing-slash variant passes.
    for (const near of ['https://shop.example.evil.example', 'https://SHOP.example', 'https://shop.example/', 'http://shop.example', 'https://shop.example:8443', 'null']) {
      const answer = await server.preflight('/api/v1/orders/1', near)
      assert.equal(answer.status, 405, near)
      assert.equal(answer.headers['access-control-allow-origin'], undefined, near)
    }
  })

  it('answers an OPTIONS from a listed origin that is not a preflight (no Access-Control-Request-Method) as usual, readable', async () => {
    const res = await server.send('OPTIONS', '/api/v1/orders', { origin: SHOP })
    assertEnvelope(res, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(res.headers.allow, 'GET, HEAD, POST')
    assert.deepEqual(corsOf(res), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
    const unknown = await server.send('OPTIONS', '/api/v1/nothing-here', { origin: SHOP })
    assertEnvelope(unknown, 404, 'RESOURCE_NOT_FOUND')
    assert.equal(unknown.headers['access-control-allow-origin'], SHOP)
  })

  it('leaves paths outside /api alone: no CORS header, no Vary: Origin, OPTIONS as with CORS off', async () => {
    const preflight = await server.preflight('/actuator/health', SHOP, 'GET', 'authorization')
    assertEnvelope(preflight, 405, 'METHOD_NOT_ALLOWED')
    assert.deepEqual(corsOf(preflight), {})
    const unknown = await server.preflight('/nothing-here', SHOP, 'GET', 'authorization')
    assertEnvelope(unknown, 404, 'RESOURCE_NOT_FOUND')
    assert.deepEqual(corsOf(unknown), {})
    for (const path of ['/actuator/health', '/v3/api-docs', '/docs/index.html', '/nothing-here']) {
      const res = await server.send('GET', path, { origin: SHOP })
      assert.deepEqual(corsOf(res), {}, path)
    }
  })

  it('lets a listed origin read a cross-origin GET: Allow-Origin, the exposed headers, and Vary naming Origin beside the credential headers', async () => {
    const res = await server.send('GET', '/api/v1/products', { origin: SHOP })
    assert.equal(res.status, 200)
    assert.equal(JSON.parse(res.body).success, true)
    assert.deepEqual(corsOf(res), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin, Authorization, X-API-Key' })
    assert.equal(res.headers['cache-control'], 'public, max-age=60')
    const health = await server.send('GET', '/api/v1/health', { origin: LOCAL })
    assert.deepEqual(corsOf(health), { 'access-control-allow-origin': LOCAL, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
  })

  it('lets a listed origin read a cross-origin POST and its Location and ETag', async () => {
    const login = await server.send('POST', '/api/v1/auth/login', { origin: SHOP }, ADMIN)
    assert.equal(login.status, 201, login.body)
    assert.equal(login.headers['access-control-allow-origin'], SHOP)
    const authorization = `Bearer ${JSON.parse(login.body).data.accessToken}`
    const product = await server.send('POST', '/api/v1/admin/products', { origin: SHOP, authorization }, { name: 'Tea', price: 500, stockQuantity: 5 })
    assert.equal(product.status, 201, product.body)
    const productId = JSON.parse(product.body).data.productId
    const me = JSON.parse(Buffer.from(JSON.parse(login.body).data.accessToken.split('.')[1], 'base64url').toString())
    const order = await server.send('POST', '/api/v1/orders', { origin: SHOP, authorization, 'idempotency-key': 'cors-order-1' },
      { customerId: Number(me.sub), items: [{ productId, quantity: 1 }] })
    assert.equal(order.status, 201, order.body)
    assert.deepEqual(corsOf(order), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
    assert.match(order.headers.location ?? '', /^\/api\/v1\/orders\/\d+$/)
    assert.match(order.headers.etag ?? '', /^"\d+"$/)
    assert.equal(order.headers['access-control-allow-credentials'], undefined)
    // A conditional read of it: the 304 is readable too (Allow-Origin, ETag exposed), with no body.
    const notModified = await server.send('GET', order.headers.location!, { origin: SHOP, authorization, 'if-none-match': order.headers.etag! })
    assert.equal(notModified.status, 304)
    assert.equal(notModified.body, '')
    assert.equal(notModified.headers.etag, order.headers.etag)
    assert.equal(notModified.headers['content-length'], undefined)
    assert.deepEqual(corsOf(notModified), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
  })

  it('lets a listed origin read error answers: 401, 404, 405', async () => {
    const unauthorized = await server.send('GET', '/api/v1/orders', { origin: SHOP })
    assertEnvelope(unauthorized, 401, 'UNAUTHORIZED')
    assert.deepEqual(corsOf(unauthorized), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
    const notFound = await server.send('GET', '/api/v1/products/999999', { origin: SHOP })
    assertEnvelope(notFound, 404, 'PRODUCT_NOT_FOUND')
    assert.equal(notFound.headers['access-control-allow-origin'], SHOP)
    assert.equal(notFound.headers['cache-control'], 'no-store')
    const wrongMethod = await server.send('DELETE', '/api/v1/orders/1', { origin: SHOP })
    assertEnvelope(wrongMethod, 405, 'METHOD_NOT_ALLOWED')
    assert.equal(wrongMethod.headers['access-control-allow-origin'], SHOP)
  })

  it('gives an origin not listed, and a request without Origin, the answer without CORS headers (but Vary: Origin)', async () => {
    const evil = await server.send('GET', '/api/v1/products', { origin: EVIL })
    assert.equal(evil.status, 200)
    assert.deepEqual(corsOf(evil), { vary: 'Origin, Authorization, X-API-Key' })
    const error = await server.send('GET', '/api/v1/orders', { origin: EVIL })
    assertEnvelope(error, 401, 'UNAUTHORIZED')
    assert.deepEqual(corsOf(error), { vary: 'Origin' })
    const none = await server.send('GET', '/api/v1/health')
    assert.deepEqual(corsOf(none), { vary: 'Origin' })
  })
})

describe('CORS and the rate limit', () => {
  const server = withServer({ CORS_ORIGINS: SHOP, AUTH_RATE_LIMIT: '3' })

  it('does not count preflights toward the rate limit, and lets a listed origin read the 429', async () => {
    const path = '/api/v1/auth/login'
    for (let i = 0; i < 6; i++) {
      const res = await server.preflight(path, SHOP, 'POST', 'content-type')
      assert.equal(res.status, 204)
      assert.equal(res.headers['ratelimit-remaining'], undefined)
    }
    // AUTH_RATE_LIMIT is 3 per minute for this server; the preflights took none of it.
    const wrong = { email: 'nobody@example.com', password: 'not the password' }
    const remaining: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await server.send('POST', path, { origin: SHOP }, wrong)
      assertEnvelope(res, 401, 'UNAUTHORIZED')
      assert.equal(res.headers['access-control-allow-origin'], SHOP)
      remaining.push(res.headers['ratelimit-remaining']!)
    }
    assert.deepEqual(remaining, ['2', '1', '0'])
    const limited = await server.send('POST', path, { origin: SHOP }, wrong)
    assertEnvelope(limited, 429, 'TOO_MANY_REQUESTS')
    assert.deepEqual(corsOf(limited), { 'access-control-allow-origin': SHOP, 'access-control-expose-headers': EXPOSED, vary: 'Origin' })
    assert.match(limited.headers['retry-after'] ?? '', /^\d+$/)
    // Even once the budget is spent, preflights are answered.
    assert.equal((await server.preflight(path, SHOP, 'POST', 'content-type')).status, 204)
  })
})

describe('CORS for any origin (CORS_ORIGINS=*)', () => {
  const server = withServer({ CORS_ORIGINS: '*' })

  it('answers a preflight from any origin 204 with Allow-Origin *, never with credentials', async () => {
    for (const origin of [SHOP, EVIL, 'http://127.0.0.1:5173']) {
      const res = await server.preflight('/api/v1/orders/1', origin)
      assert.equal(res.status, 204)
      assert.equal(res.body, '')
      assert.deepEqual(corsOf(res), {
        'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED, ...PREFLIGHT_HEADERS, vary: 'Origin',
      })
    }
  })

  it('lets any origin read answers and errors, and still leaves paths outside /api alone', async () => {
    const res = await server.send('GET', '/api/v1/products', { origin: EVIL })
    assert.deepEqual(corsOf(res), { 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSED, vary: 'Origin, Authorization, X-API-Key' })
    const error = await server.send('GET', '/api/v1/orders', { origin: EVIL })
    assertEnvelope(error, 401, 'UNAUTHORIZED')
    assert.equal(error.headers['access-control-allow-origin'], '*')
    const none = await server.send('GET', '/api/v1/health')
    assert.deepEqual(corsOf(none), { vary: 'Origin' })
    const outside = await server.preflight('/actuator/health', EVIL, 'GET', 'authorization')
    assertEnvelope(outside, 405, 'METHOD_NOT_ALLOWED')
    assert.deepEqual(corsOf(outside), {})
  })
})
