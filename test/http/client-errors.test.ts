import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { assertError, errorBody, testConfig } from '../helper.js'
import { abortAfter, asInjected, logCapture, rawRequest, type RawResponse } from './raw.js'

/**
 * What Node's HTTP parser refuses never reaches a route: it is answered from the socket
 * (src/http/error-handler.ts, clientErrorHandler). These tests speak raw HTTP to a listening app.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The headers every refused request is answered with. */
function assertRefusalHeaders (res: RawResponse): void {
  assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/)
  assert.match(res.headers['x-request-id'] ?? '', UUID)
  assert.equal(res.headers['cache-control'], 'no-store')
  assert.equal(res.headers.connection, 'close')
  assert.equal(res.headers['x-content-type-options'], 'nosniff')
  assert.equal(Buffer.byteLength(res.body), Number(res.headers['content-length']))
}

/** The whole error body of a status the shared helper has no title for (431, 408). */
function assertProblem (res: RawResponse, status: number, code: string, title: string, instance: string, detail: string): void {
  assert.equal(res.statusCode, status, res.body)
  assert.deepEqual(errorBody(asInjected(res)), {
    type: `https://api.example.com/errors/${code.toLowerCase().replaceAll('_', '-')}`,
    title,
    status,
    detail,
    instance,
    code,
  })
}

describe('requests that the HTTP parser refuses', () => {
  let app: FastifyInstance
  let port = 0
  const { stream, lines } = logCapture()

  before(async () => {
    app = await buildApp(testConfig(), { logger: { level: 'info', stream } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  })
  after(() => app?.close())

  it('answers a request line that is not HTTP with 400 MALFORMED_REQUEST in the envelope, at instance /', async () => {
    const res = await rawRequest(port, 'GARBAGE\r\n\r\n')
    assertError(asInjected(res), { code: 'MALFORMED_REQUEST', instance: '/', detail: 'The request method is not a valid HTTP method.' })
    assertRefusalHeaders(res)
  })

  it('answers Content-Length together with Transfer-Encoding (a smuggling attempt) with 400 naming the request path', async () => {
    const res = await rawRequest(port, 'POST /api/v1/orders?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n' +
      'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n')
    assertError(asInjected(res), {
      code: 'MALFORMED_REQUEST',
      instance: '/api/v1/orders',
      detail: 'The Transfer-Encoding header is not valid: only chunked is accepted, and not together with Content-Length.',
    })
    assertRefusalHeaders(res)
  })

  it('answers a Content-Length that is not a number, with a body, with 400 MALFORMED_REQUEST', async () => {
    const res = await rawRequest(port, 'POST /api/v1/auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1x\r\n\r\n{"email":"a@b.c","password":"x"}')
    assertError(asInjected(res), { code: 'MALFORMED_REQUEST', instance: '/api/v1/auth/login', detail: 'The Content-Length header is not a valid length.' })
    assertRefusalHeaders(res)
  })

  it('answers a chunked body with a broken chunk size with 400 MALFORMED_REQUEST, and logs no server error', async () => {
    const res = await rawRequest(port, 'POST /api/v1/auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n' +
      'Transfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n')
    assertError(asInjected(res), { code: 'MALFORMED_REQUEST', instance: '/api/v1/auth/login', detail: 'The chunked request body has an invalid chunk size.' })
    assertRefusalHeaders(res)
    // The request whose body broke was already routed; it ends once the connection is closed.
    await new Promise(resolve => setTimeout(resolve, 1_200))
    assert.deepEqual(lines.filter(line => line.level >= 50), [])
  })

  it('answers headers over Node\'s limit with 431 REQUEST_HEADER_FIELDS_TOO_LARGE', async () => {
    const res = await rawRequest(port, `GET /api/v1/products HTTP/1.1\r\nHost: a\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`)
    assertProblem(res, 431, 'REQUEST_HEADER_FIELDS_TOO_LARGE', 'Request Header Fields Too Large', '/api/v1/products',
      'The request line and headers are larger than the 16384 bytes this service accepts.')
    assertRefusalHeaders(res)
  })

  it('logs each refusal once at info with its request id, and keeps serving', async () => {
    const res = await rawRequest(port, 'BAD REQUEST\r\n\r\n')
    const id = res.headers['x-request-id']
    const mine = lines.filter(line => line.requestId === id)
    assert.equal(mine.length, 1, JSON.stringify(mine))
    assert.equal(mine[0]!.level, 30)
    assert.equal(mine[0]!.msg, 'request refused by the HTTP parser')
    assert.equal(mine[0]!.statusCode, 400)
    const health = await rawRequest(port, 'GET /api/v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
    assert.equal(health.statusCode, 200, health.body)
  })

  for (const how of ['close', 'reset'] as const) {
    it(`does not log a client that aborts its upload (${how}) as a server error: no 5xx, no 503, and the service stays healthy`, async () => {
      const before = lines.length
      await abortAfter(port, 'POST /api/v1/auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n' +
        `X-Request-Id: aborted-${how}\r\nContent-Length: 100\r\n\r\n{"email":"admin@exa`, how)
      await new Promise(resolve => setTimeout(resolve, 500))
      assert.deepEqual(lines.slice(before).filter(line => line.level >= 50), [])
      const metrics = await app.inject({ url: '/actuator/prometheus' })
      assert.doesNotMatch(metrics.body, /http_server_requests_seconds_count\{[^}]*outcome="SERVER_ERROR"/)
      assert.doesNotMatch(metrics.body, /http_server_requests_seconds_count\{[^}]*status="503"/)
      const health = await rawRequest(port, 'GET /api/v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
      assert.equal(health.statusCode, 200, health.body)
    })
  }

  it('answers a request that does not arrive in time with 408 REQUEST_TIMEOUT in the envelope (instance /: the parser gives no path)', async () => {
    // Shortened for the test (the service's are 10 s and 30 s); Node checks them every 5 s.
    const saved = { headers: app.server.headersTimeout, request: app.server.requestTimeout }
    app.server.headersTimeout = 200
    app.server.requestTimeout = 300
    try {
      const res = await rawRequest(port, 'GET /api/v1/products HTTP/1.1\r\nHost: a\r\n')
      assertProblem(res, 408, 'REQUEST_TIMEOUT', 'Request Timeout', '/', 'The request did not arrive in time; the connection is closed.')
      assertRefusalHeaders(res)
    } finally {
      app.server.headersTimeout = saved.headers
      app.server.requestTimeout = saved.request
    }
  })
})
