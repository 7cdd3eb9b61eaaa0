import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ERROR_CODES, OrderServiceError, UnexpectedResponseError, unwrap } from '../../client/src/index.js'
import { ERRORS } from '../../src/errors.js'
import { liveDocument } from '../../scripts/client-types.js'

const problemResponse = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ success: false, data: null, error }), { status, headers: { 'content-type': 'application/problem+json', ...headers } })

describe('the client package', () => {
  it('knows exactly the service’s error codes', () => {
    assert.deepEqual([...ERROR_CODES].sort(), Object.keys(ERRORS).sort())
  })

  it('knows every error code the live document declares', async () => {
    // Wherever the document gives `code` an enum (the catalogue, an operation's codes per status).
    const declared = new Set<string>()
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk)
      if (typeof node !== 'object' || node === null) return
      const { properties, ...rest } = node as { properties?: { code?: { enum?: unknown[] } } }
      for (const code of properties?.code?.enum ?? []) declared.add(String(code))
      Object.values({ ...rest, ...(properties ? { properties } : {}) }).forEach(walk)
    }
    const document = await liveDocument() as { components?: { schemas?: { ErrorCode?: { enum?: unknown[] } } } }
    walk(document)
    for (const code of document.components?.schemas?.ErrorCode?.enum ?? []) declared.add(String(code))
    const known = new Set<string>(ERROR_CODES)
    assert.deepEqual([...declared].filter(code => !known.has(code)), [], 'client/src/errors.ts lacks codes the document declares')
  })

  it('turns an error envelope into an OrderServiceError with its fields and headers', async () => {
    const response = problemResponse(400, {
      type: 'https://api.example.com/errors/validation-failed',
      title: 'Validation Failed',
      status: 400,
      detail: 'The request has invalid parameters.',
      instance: '/api/v1/orders',
      code: 'VALIDATION_FAILED',
      timestamp: '2026-11-22T09:30:00.000Z',
      invalidParams: [{ field: 'items[0].quantity', message: 'must be >= 1' }],
    }, { 'retry-after': '3', 'x-request-id': 'req-1' })
    const error = await unwrap(Promise.resolve({ error: await response.clone().json(), response })).catch((e: unknown) => e)
    assert.ok(error instanceof OrderServiceError)
    assert.equal(error.status, 400)
    assert.equal(error.code, 'VALIDATION_FAILED')
    assert.equal(error.title, 'Validation Failed')
    assert.equal(error.detail, 'The request has invalid parameters.')
    assert.deepEqual(error.invalidParams, [{ field: 'items[0].quantity', message: 'must be >= 1' }])
    assert.equal(error.retryAfter, 3)
    assert.equal(error.requestId, 'req-1')
    assert.equal(error.isKnownCode, true)
    assert.equal(error.message, '400 VALIDATION_FAILED: The request has invalid parameters. (items[0].quantity: must be >= 1)')
  })

  it('answers anything that is not the service’s envelope with UnexpectedResponseError', async () => {
    const gateway = new Response('<html>Bad Gateway</html>', { status: 502 })
    const error = await unwrap(Promise.resolve({ error: '<html>Bad Gateway</html>', response: gateway })).catch((e: unknown) => e)
    assert.ok(error instanceof UnexpectedResponseError)
    assert.equal(error.status, 502)
    const bare = new Response('{"id":1}', { status: 200 })
    await assert.rejects(unwrap(Promise.resolve({ data: { id: 1 }, response: bare })), UnexpectedResponseError)
  })

  it('hands back data, ETag, Location and Idempotent-Replayed', async () => {
    const response = new Response('', { status: 200, headers: { etag: '"3"', location: '/api/v1/orders/7', 'idempotent-replayed': 'true' } })
    const answer = await unwrap(Promise.resolve({ data: { success: true, data: { orderId: 7 }, error: null }, response }))
    assert.deepEqual({ ...answer, response: undefined }, {
      data: { orderId: 7 }, status: 200, etag: '"3"', location: '/api/v1/orders/7', replayed: true, requestId: undefined, response: undefined,
    })
  })
})
