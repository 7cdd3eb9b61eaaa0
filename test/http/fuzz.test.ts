import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { ADMIN, STUCK_AFTER_MS, testConfig } from '../helper.js'
import { logCapture, parseResponse, rawExchange } from './raw.js'

/**
 * A fuzz test of our own: a few thousand hostile requests, drawn from a fixed-seed generator (so a
 * failure names the seed and the request, and replays the same way), against the real app listening
 * on 127.0.0.1. Whatever is sent, the service must answer without a 5xx, every answer under /api must
 * be the envelope (problem+json for errors), nothing may reach Object.prototype, and the service must
 * be healthy at the end. Bounded by a count, not a clock: every request is sent, however busy the
 * machine, so the test does the same work everywhere (issue 30).
 */

const SEED = 0x5eed_2026
const HTTP_REQUESTS = 2_400
const RAW_REQUESTS = 300
const CONCURRENCY = 8
/**
 * How long a raw exchange listens for more once sent: some hostile bytes leave the server waiting for the
 * rest of a request, and only the client can end those. It bounds what is read, never what passes.
 */
const RAW_LISTEN_MS = 5_000

/** mulberry32: a tiny, fast, well-mixed 32-bit PRNG; the same seed gives the same sequence. */
function mulberry32 (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class Draw {
  constructor (readonly random: () => number) {}
  int (max: number): number { return Math.floor(this.random() * max) }
  chance (p: number): boolean { return this.random() < p }
  pick<T> (items: readonly T[]): T { return items[this.int(items.length)]! }
  text (length: number, alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~%+/=&?#:;,\'"<>{}[]\\ \u00e9\u4e2d\u0000\u202e'): string {
    let out = ''
    for (let i = 0; i < length; i++) out += alphabet[this.int(alphabet.length)]
    return out
  }
}

/** Mostly the methods the API serves (so that requests get past routing), with every odd one now and then. */
const METHODS = [...Array(12).fill('GET'), ...Array(8).fill('POST'), ...Array(5).fill('PATCH'), 'PUT', 'PUT', 'DELETE', 'HEAD',
  'OPTIONS', 'TRACE', 'PROPFIND', 'PURGE', 'QUERY', 'MKCOL', 'LOCK'] as string[]

const PATHS = [
  '/api/v1/health', '/api/v1/products', '/api/v1/products/{id}', '/api/v1/products/search', '/api/v1/products/categories',
  '/api/v1/products/categories/{id}', '/api/v1/orders', '/api/v1/orders/{id}', '/api/v1/orders/{id}/confirm',
  '/api/v1/orders/{id}/cancel', '/api/v1/orders/{id}/delete', '/api/v1/orders/{id}/history', '/api/v1/orders/{id}/payments',
  '/api/v1/payments/{id}', '/api/v1/payments/{id}/process', '/api/v1/payments/{id}/refund', '/api/v1/members', '/api/v1/members/me',
  '/api/v1/members/me/api-keys', '/api/v1/members/me/api-keys/{id}/revoke', '/api/v1/members/password/change',
  '/api/v1/auth/login', '/api/v1/auth/refresh', '/api/v1/auth/logout', '/api/v1/admin/orders', '/api/v1/admin/orders/{id}',
  '/api/v1/admin/orders/search', '/api/v1/admin/orders/export', '/api/v1/admin/members', '/api/v1/admin/members/{id}',
  '/api/v1/admin/products', '/api/v1/admin/products/{id}', '/api/v2/orders', '/api/v1/nothing', '/api', '/api/',
  '/actuator/health', '/actuator/info', '/actuator/prometheus', '/v3/api-docs', '/docs/index.html', '/', '/..%2f..%2fetc/passwd',
]

const ODD_IDS = [
  '0', '-1', '01', '1.5', '1e3', '0x10', '9223372036854775807', '9223372036854775808', '9'.repeat(120), '%00', '%2e%2e', '..',
  '%E0%A4%A', '1%20', ' 1', 'null', 'undefined', '__proto__', 'constructor', 'NaN', 'Infinity', '%F0%9F%92%A9', '1;DROP TABLE orders',
  "1'--", '{id}', '', '1/', '/1', '%252F', '\u00e9',
]

const QUERY_KEYS = ['size', 'page', 'cursor', 'sort', 'status', 'q', 'minPrice', 'maxPrice', 'minTotal', 'maxTotal', 'createdFrom',
  'createdTo', 'categoryId', 'customerId', '__proto__', '__proto__[admin]', 'constructor[prototype][admin]', 'constructor.prototype.admin',
  'size[]', 'a'.repeat(300), '', '%ZZ', 'x']

const QUERY_VALUES = ['1', '0', '-1', '20', '101', '1e2', 'abc', '', '9'.repeat(40), 'createdAt,desc', 'id,asc', 'nope,sideways',
  'PLACED', 'DELETED', '2026-11-22T09:30:00.000Z', '2026-02-30T00:00:00Z', 'true', '%00', '%ZZ', 'eyJpZCI6LTF9', 'eyJpZCI6IjEnIE9SIDE9MSJ9',
  'AAAA', '!!!', 'x'.repeat(500), '{"$gt":""}', '[]']

const PAYLOADS: Array<(draw: Draw) => unknown> = [
  () => ({}),
  () => ({ email: ADMIN.email, password: 'wrong-password' }),
  (d) => ({ customerId: d.pick([1, 0, -1, 2 ** 53, 1.5, '1', null]), items: [{ productId: d.pick([1, 2, 0, 'x']), quantity: d.pick([1, 0, -5, 1e9, 2.5]) }] }),
  () => JSON.parse('{"__proto__": {"admin": true, "role": "ADMIN"}}'),
  () => ({ constructor: { prototype: { admin: true } } }),
  () => ({ status: 'DELIVERED', memo: 'x'.repeat(10_000) }),
  (d) => ({ name: d.text(20), price: d.pick([1, -1, 0.5, '100', null]), stockQuantity: d.pick([1, -1, 1e20]) }),
  (d) => ({ [d.text(5)]: d.text(10), nested: { deeper: [1, { x: d.text(3) }] } }),
  (d) => d.pick([null, true, 42, 'string', [1, 2, 3], []]),
  () => ({ amount: 100, currency: 'EUR', idempotencyKey: '\u0000' }),
  () => ({ currentPassword: 'admin-password', newPassword: 'admin-password' }),
]

/** Bodies that are not one JSON object: broken, huge, or nested deeper than any parser should recurse. */
function rawBody (draw: Draw): string {
  switch (draw.int(9)) {
    case 0: return '{"a":'
    case 1: return '{"a":1,}'
    case 2: return '\uFEFF{"a":1}'
    case 3: return '['.repeat(20_000) + ']'.repeat(20_000)
    case 4: return '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000)
    case 5: return JSON.stringify({ items: Array.from({ length: 50_000 }, (_, i) => ({ productId: i, quantity: 1 })) })
    case 6: return '{"x":"' + 'y'.repeat(1_100_000) + '"}'
    case 7: return draw.text(200)
    default: return '{"email":"a@b.c","password":"' + '\\u0000'.repeat(10) + '"}'
  }
}

const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'text/plain',
  'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json',
  'application/problem+json', '', 'application/json; charset=nope', '*/*']

interface Sent { method: string, path: string, headers: Record<string, string>, body?: string }
interface Answer { status: number, headers: http.IncomingHttpHeaders, body: string }

/** The method a path is mostly called with, so that most requests get past routing to the checks behind it. */
function naturalMethod (template: string): string {
  if (/\/(confirm|cancel|delete|process|refund|revoke|change)$/.test(template)) return 'PATCH'
  if (/^\/api\/v1\/(orders|members|admin\/products|auth\/\w+|members\/me\/api-keys)$/.test(template)) return 'POST'
  return 'GET'
}

/** One hostile HTTP request, drawn from `draw`. */
function hostileRequest (draw: Draw, ids: { order: number, product: number }, token: string): Sent {
  const template = draw.pick(PATHS)
  const method = draw.chance(0.65) ? naturalMethod(template) : draw.pick(METHODS)
  let path = template.replaceAll('{id}', () => draw.chance(0.4)
    ? String(draw.pick([ids.order, ids.product, 1, 2, 987654321]))
    : draw.pick(ODD_IDS))
  if (draw.chance(0.05)) path += '/'
  if (draw.chance(0.03)) path = path.replace('/v1/', '//v1/')
  if (draw.chance(0.5)) {
    const count = draw.chance(0.05) ? 30 + draw.int(40) : 1 + draw.int(4)
    const pairs = Array.from({ length: count }, () => `${draw.pick(QUERY_KEYS)}=${draw.pick(QUERY_VALUES)}`)
    path += `?${pairs.join('&')}`
  }
  // Node's client sends only printable ASCII in a path: the rest goes percent-encoded (raw bytes are the raw tests' job).
  path = path.replace(/[^\x21-\x7e]/g, c => encodeURIComponent(c))
  const headers: Record<string, string> = {}
  const credential = draw.int(6)
  if (credential <= 1) headers.authorization = `Bearer ${token}`
  else if (credential === 2) headers.authorization = draw.pick(['Bearer ', 'Bearer x.y.z', `Bearer ${token.slice(0, -3)}abc`, 'Basic YWRtaW46YWRtaW4=', 'bearer  '])
  else if (credential === 3) headers['x-api-key'] = draw.pick(['', 'osk_' + 'a'.repeat(40), draw.text(30, 'abcdef0123456789')])
  if (draw.chance(0.2)) headers['idempotency-key'] = draw.pick(['k-1', 'x'.repeat(300), 'é', ' '])
  if (draw.chance(0.1)) headers['if-match'] = draw.pick(['"1"', '*', 'W/"2"', 'garbage'])
  if (draw.chance(0.1)) headers['if-none-match'] = draw.pick(['"1"', '*', '"0", "1"'])
  if (draw.chance(0.1)) headers['x-request-id'] = draw.pick(['ok-1', 'with space', 'x'.repeat(300), '\u00e9'.replace(/./, '?')])
  const sent: Sent = { method, path, headers }
  if (method !== 'GET' && method !== 'HEAD' && draw.chance(0.85)) {
    headers['content-type'] = draw.chance(0.7) ? 'application/json' : draw.pick(CONTENT_TYPES)
    sent.body = draw.chance(0.75) ? JSON.stringify(draw.pick(PAYLOADS)(draw)) : rawBody(draw)
  }
  return sent
}

/** Bytes that break HTTP/1.1 framing in some way, sent on their own connection. */
function hostileBytes (draw: Draw): string {
  const path = draw.pick(['/api/v1/orders', '/api/v1/auth/login', '/api/v1/products', '/'])
  const head = (extra: string) => `POST ${path} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${extra}`
  switch (draw.int(14)) {
    case 0: return 'GARBAGE\r\n\r\n'
    case 1: return head('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
    case 2: return head('Content-Length: 1x\r\n\r\n{}')
    case 3: return head('Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}')
    case 4: return head('Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n')
    case 5: return head('Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n')
    case 6: return `GET ${path} HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(17_000 + draw.int(20_000))}\r\n\r\n`
    case 7: return `GET ${path} HTTP/9.9\r\nHost: a\r\n\r\n`
    case 8: return `GET ${path}\u0000 HTTP/1.1\r\nHost: a\r\n\r\n`
    case 9: return `GET ${path} HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n`
    case 10: return head('Content-Length: 100\r\n\r\n{"email":')
    case 11: return draw.text(1 + draw.int(300), '\r\n :/GETPOSTHTP1.0\u0000\u00ff' + 'abc')
    case 12: return `GET /api/v1/health HTTP/1.1\r\nHost: a\r\n\r\nGET /api/v1/products HTTP/1.1\r\nHost: a\r\n\r\n${draw.text(20)}\r\n\r\n`
    default: return `${draw.pick(['GET', 'POST', 'PATCH'])} ${path}?${draw.text(50, 'abc=&%ZZ_[]')} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`
  }
}

const ENVELOPE_KEYS = ['data', 'error', 'success']
const PROBLEM_KEYS = ['code', 'detail', 'instance', 'status', 'timestamp', 'title', 'type']

/** Asserts the envelope rules of CONTRACT §1–§2 on one answer; `what` names the request for the failure message. */
function assertEnvelope (what: string, status: number, contentType: string, body: string): void {
  const parsed = JSON.parse(body)
  assert.deepEqual(Object.keys(parsed).sort(), ENVELOPE_KEYS, what)
  if (status >= 400) {
    assert.match(contentType, /^application\/problem\+json/, what)
    assert.equal(parsed.success, false, what)
    assert.equal(parsed.data, null, what)
    const keys = Object.keys(parsed.error).filter(key => key !== 'invalidParams').sort()
    assert.deepEqual(keys, PROBLEM_KEYS, what)
    assert.equal(parsed.error.status, status, what)
    assert.match(parsed.error.code, /^[A-Z_]+$/, what)
    assert.match(parsed.error.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, what)
    assert.ok(parsed.error.invalidParams === undefined || parsed.error.code === 'VALIDATION_FAILED', what)
    assert.doesNotMatch(body, /\bat [\w.<>]+ \(|node_modules|FST_ERR|SELECT |syntax error at/i, what)
  } else {
    assert.match(contentType, /^application\/json/, what)
    assert.equal(parsed.success, true, what)
    assert.equal(parsed.error, null, what)
  }
}

describe('fuzz: hostile requests against a listening app', () => {
  let app: FastifyInstance
  let port = 0
  let agent: http.Agent
  const { stream, lines } = logCapture()

  before(async () => {
    app = await buildApp(testConfig({ LOG_LEVEL: 'warn' }), { logger: { stream } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
    agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  })
  after(async () => {
    agent?.destroy()
    await app?.close()
  })

  function send (sent: Sent): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const headers = { ...sent.headers, ...(sent.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(sent.body)) }) }
      const req = http.request({ host: '127.0.0.1', port, method: sent.method, path: sent.path, headers, agent }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', chunk => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      })
      req.setTimeout(STUCK_AFTER_MS, () => req.destroy(new Error(`no answer after ${STUCK_AFTER_MS / 60_000} min: ${sent.method} ${sent.path.slice(0, 200)}`)))
      req.on('error', reject)
      req.end(sent.body)
    })
  }

  it(`answers ${HTTP_REQUESTS} HTTP and ${RAW_REQUESTS} raw hostile requests (seed ${SEED}) without a 5xx, always in the envelope, and stays healthy`, async () => {
    const login = await send({ method: 'POST', path: '/api/v1/auth/login', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    assert.equal(login.status, 201, login.body)
    const token = JSON.parse(login.body).data.accessToken as string
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const product = await send({ method: 'POST', path: '/api/v1/admin/products', headers: auth, body: JSON.stringify({ name: 'Fuzz', price: 100, stockQuantity: 1_000_000 }) })
    assert.equal(product.status, 201, product.body)
    const productId = JSON.parse(product.body).data.productId as number
    const me = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string }
    const order = await send({ method: 'POST', path: '/api/v1/orders', headers: auth, body: JSON.stringify({ customerId: Number(me.sub), items: [{ productId, quantity: 1 }] }) })
    assert.equal(order.status, 201, order.body)
    const ids = { order: JSON.parse(order.body).data.orderId as number, product: productId }

    const draw = new Draw(mulberry32(SEED))
    const requests = Array.from({ length: HTTP_REQUESTS }, () => hostileRequest(draw, ids, token))
    const raws = Array.from({ length: RAW_REQUESTS }, () => hostileBytes(draw))
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
    const statuses = new Map<number, number>()
    let sentCount = 0

    const checkHttp = (index: number, sent: Sent, answer: Answer) => {
      const what = `seed ${SEED}, request #${index}: ${sent.method} ${sent.path.slice(0, 200)} → ${answer.status} ${answer.body.slice(0, 300)}`
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      assert.ok(answer.status < 500, what)
      const underApi = /^\/api(\/|$|\?)/.test(sent.path)
      const contentType = String(answer.headers['content-type'] ?? '')
      if (!underApi || sent.method === 'HEAD' || answer.status === 204 || answer.status === 304 || contentType.startsWith('text/csv')) return
      assertEnvelope(what, answer.status, contentType, answer.body)
      assert.ok(answer.headers['cache-control'], what)
    }

    let next = 0
    const worker = async () => {
      while (next < requests.length) {
        const index = next++
        const sent = requests[index]!
        checkHttp(index, sent, await send(sent))
        sentCount++
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))

    let rawNext = 0
    let rawCount = 0
    const rawWorker = async () => {
      while (rawNext < raws.length) {
        const index = rawNext++
        const bytes = raws[index]!
        const text = await rawExchange(port, bytes, RAW_LISTEN_MS)
        rawCount++
        // Every response on the connection (a pipelined good request may come first).
        let rest = text
        while (rest.length > 0) {
          const res = parseResponse(rest)
          const what = `seed ${SEED}, raw #${index}: ${JSON.stringify(bytes.slice(0, 120))} → ${JSON.stringify(rest.slice(0, 300))}`
          assert.ok(res, what)
          assert.ok(res.statusCode < 500, what)
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          if (String(res.headers['content-type']).includes('json')) assertEnvelope(what, res.statusCode, res.headers['content-type']!, res.body)
          const consumed = rest.indexOf('\r\n\r\n') + 4 + Number(res.headers['content-length'] ?? 0)
          rest = rest.slice(consumed)
        }
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, rawWorker))

    // All of it done, whatever the machine's load.
    assert.equal(sentCount, HTTP_REQUESTS)
    assert.equal(rawCount, RAW_REQUESTS)
    // No key reached Object.prototype (prototype pollution), and nothing was logged as a server error.
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys)
    assert.equal(({} as Record<string, unknown>).admin, undefined)
    assert.deepEqual(lines.filter(line => line.level >= 50).map(line => line.msg), [])
    assert.ok((statuses.get(400) ?? 0) > 0 && (statuses.get(200) ?? 0) > 0, JSON.stringify([...statuses]))

    const health = await send({ method: 'GET', path: '/api/v1/health', headers: {} })
    assert.equal(health.status, 200, health.body)
    assert.deepEqual(JSON.parse(health.body), { success: true, data: { status: 'UP' }, error: null })
  })
})
