import assert from 'node:assert/strict'
import { it } from 'node:test'
import { assertError, describeEachBackend, type Member } from '../helper.js'

// CONTRACT §18, §18.1: a NUL (U+0000) in a query parameter or a path parameter is a 400 naming it,
// never a 500 (PostgreSQL cannot store the character, nor compare text with it).

const NUL = 'must not contain the NUL character (U+0000)'
const QUERY = 'The query has invalid parameters.'
const PATH = 'The path has invalid parameters.'

/** The OpenID routes need a provider configured; it is never reached, as the query is refused first. */
const OIDC = {
  PUBLIC_URL: 'http://127.0.0.1:9',
  OIDC_TEST_ISSUER: 'http://127.0.0.1:9/issuer',
  OIDC_TEST_CLIENT_ID: 'order-service',
  OIDC_TEST_CLIENT_SECRET: 'a-client-secret',
  OIDC_REDIRECT_ALLOWLIST: 'https://app.example.com/cb',
}

describeEachBackend('a NUL in a query or path parameter', (ctx) => {
  /** GET `path?query` as `caller`, with the query written out (so `%00` is sent as it is). */
  const get = (path: string, query: string, caller?: Member) =>
    ctx.api.inject({ url: `${path}?${query}`, ...(caller ? { headers: caller.headers } : {}) })

  it('answers 400 naming the text parameter of every list family, and stores nothing', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const endpoint = await ctx.api.inject({ method: 'POST', url: '/api/v1/admin/webhook-endpoints', headers: admin.headers, payload: { url: 'https://hooks.example.com/' } })
    assert.equal(endpoint.statusCode, 201, endpoint.body)
    const deliveries = `/api/v1/admin/webhook-endpoints/${endpoint.json().data.endpointId}/deliveries`
    const cases: Array<[string, string, Member | undefined, string, string]> = [
      // path, query, caller, the parameter named, its message
      ['/api/v1/orders', 'cursor=a%00b', member, 'cursor', NUL],
      ['/api/v1/orders/search', 'size=5&cursor=%00', member, 'cursor', NUL],
      ['/api/v1/orders', 'status=PLACED%00', member, 'status', NUL],
      ['/api/v1/admin/orders', 'customerId=1%00', admin, 'customerId', 'must be an integer'],
      ['/api/v1/admin/orders/search', 'createdFrom=2026-01-01T00:00:00Z%00', admin, 'createdFrom', 'must be an RFC 3339 timestamp with Z or an offset, in the years 0001 to 9999, e.g. 2026-11-22T09:30:00.000Z'],
      ['/api/v1/admin/orders/export', 'status=%00', admin, 'status', NUL],
      ['/api/v1/products', 'q=be%00ans', undefined, 'q', NUL],
      ['/api/v1/products/search', 'q=%00', undefined, 'q', NUL],
      ['/api/v1/admin/products', 'q=beans%00', admin, 'q', NUL],
      ['/api/v1/admin/members/search', 'q=ada%00', admin, 'q', NUL],
      ['/api/v1/admin/members', 'page=0%00', admin, 'page', 'must be an integer'],
      ['/api/v1/admin/events', 'cursor=%00', admin, 'cursor', NUL],
      ['/api/v1/admin/webhook-endpoints', 'size=%00', admin, 'size', 'must be an integer'],
      [deliveries, 'status=FAILED%00', admin, 'status', 'must be one of PENDING, SUCCEEDED, FAILED'],
      ['/api/v1/payments/history', 'cursor=x%00', member, 'cursor', NUL],
      ['/api/v1/products', 'unknown%00=1', undefined, 'unknown\u0000', 'is not a recognised query parameter'],
    ]
    for (const [path, query, caller, field, message] of cases) {
      assertError(await get(path, query, caller), { code: 'VALIDATION_FAILED', instance: path, detail: QUERY, invalidParams: [{ field, message }] })
    }
    assert.deepEqual(await ctx.api.app.db.selectFrom('orders').select('id').execute(), [])
  })

  it('answers 400 naming the path parameter, for ids and for the provider of the OpenID routes', async () => {
    const admin = await ctx.api.admin()
    const id64 = 'must be a positive 64-bit integer'
    const cases: Array<[string, string, string]> = [
      ['/api/v1/orders/%00', 'id', id64],
      ['/api/v1/orders/1%00/history', 'id', id64],
      ['/api/v1/admin/orders/%001', 'id', id64],
      ['/api/v1/products/1%00', 'id', id64],
      ['/api/v1/products/categories/%00', 'categoryId', id64],
      ['/api/v1/admin/members/2%00', 'id', id64],
      ['/api/v1/admin/events/%00', 'eventId', id64],
      ['/api/v1/admin/webhook-endpoints/%00', 'id', id64],
      ['/oauth2/authorization/te%00st', 'id', NUL],
      ['/login/oauth2/code/%00', 'id', NUL],
    ]
    for (const [path, field, message] of cases) {
      const res = await ctx.api.inject({ url: path, headers: admin.headers })
      assert.equal(res.statusCode, 400, `${path}: ${res.body}`)
      assertError(res, { code: 'VALIDATION_FAILED', instance: path, detail: PATH, invalidParams: [{ field, message }] })
    }
  })

  it('answers 400 naming redirect_uri, state or code on the OpenID routes, before any flow starts or is used up', async () => {
    const start = '/oauth2/authorization/test'
    const callback = '/login/oauth2/code/test'
    const cases: Array<[string, string, string, string]> = [
      [start, 'redirect_uri=https://app.example.com/cb%00', 'redirect_uri', 'must be a valid uri'],
      [start, 'redirect_uri=https://app.example.com/cb/%00x', 'redirect_uri', 'must be a valid uri'],
      [start, 'state=abc%00', 'state', NUL],
      [callback, 'state=%00&code=abc', 'state', NUL],
      [callback, 'state=abc&code=a%00c', 'code', NUL],
      [callback, 'state=abc&error=%00', 'error', NUL],
    ]
    for (const [path, query, field, message] of cases) {
      const res = await get(path, query)
      assertError(res, { code: 'VALIDATION_FAILED', instance: path, detail: QUERY, invalidParams: [{ field, message }] })
      assert.equal(res.headers['cache-control'], 'no-store')
    }
    assert.deepEqual(await ctx.api.app.db.selectFrom('oidc_flows').select('state_hash').execute(), [])
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'true', ...OIDC } })
