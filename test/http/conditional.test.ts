import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ifNoneMatchMatches } from '../../src/http/wire.js'
import { assertError, describeEachBackend, successData, type Api, type Member } from '../helper.js'
import { logCapture } from './raw.js'

/*
 * Conditional reads (CONTRACT §11 Wire, §14; RFC 9110 §13.1.2, §15.4.5): a GET or HEAD answer with an
 * ETag honours If-None-Match. Today the ETag-bearing reads are the order by id, for its owner and
 * for admins; the rule lives in src/http/wire.ts, not in their routes.
 */

describe('If-None-Match matching (weak comparison)', () => {
  const cases: Array<[string, string, boolean]> = [
    ['"1"', '"1"', true],
    ['"2"', '"1"', false],
    ['W/"1"', '"1"', true],
    ['"1"', 'W/"1"', true],
    ['W/"1"', 'W/"1"', true],
    ['"7", "1"', '"1"', true],
    ['"7",W/"1" , "9"', '"1"', true],
    ['"7", "9"', '"1"', false],
    ['*', '"1"', true],
    [' * ', 'W/"x"', true],
    ['"a,b", "c"', '"a,b"', true],
    ['"a,b"', '"a"', false],
    ['"a,b"', '"b"', false],
    ['"1" "2"', '"1"', false],
    ['1', '"1"', false],
    ['w/"1"', '"1"', false],
    ['"11"', '"1"', false],
    ['', '"1"', false],
  ]
  for (const [condition, etag, expected] of cases) {
    it(`If-None-Match ${JSON.stringify(condition)} against ETag ${etag}: ${expected ? 'matches' : 'does not match'}`, () => {
      assert.equal(ifNoneMatchMatches(condition, etag), expected)
    })
  }
})

const { stream, lines } = logCapture()

describeEachBackend('conditional reads', (ctx) => {
  async function placed (): Promise<{ member: Member, orderId: number, url: string }> {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const member = await ctx.api.member()
    const order = await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }])
    return { member, orderId: order.orderId, url: `/api/v1/orders/${order.orderId}` }
  }

  const get = (api: Api, url: string, headers: Record<string, string>, method: 'GET' | 'HEAD' = 'GET') =>
    api.inject({ method, url, headers })

  it('answers 304 with no body when If-None-Match holds the current ETag, keeping ETag, Cache-Control and the other headers', async () => {
    const { member, url } = await placed()
    const full = await get(ctx.api, url, member.headers)
    successData(full)
    assert.equal(full.headers.etag, '"1"')
    const res = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"1"' })
    assert.equal(res.statusCode, 304)
    assert.equal(res.body, '')
    assert.equal(res.headers.etag, '"1"')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.match(String(res.headers['x-request-id']), /.+/)
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['content-type'], undefined, 'no representation metadata on a 304')
    assert.equal(res.headers['content-length'], undefined)
  })

  it('answers HEAD the same way', async () => {
    const { member, url } = await placed()
    const full = await get(ctx.api, url, member.headers)
    const res = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"1"' }, 'HEAD')
    assert.equal(res.statusCode, 304)
    assert.equal(res.body, '')
    assert.equal(res.headers.etag, '"1"')
    assert.equal(res.headers['content-type'], undefined)
    // RFC 9110 §8.6: a Content-Length on a 304 is the 200's, or none.
    if (res.headers['content-length'] !== undefined) assert.equal(res.headers['content-length'], String(Buffer.byteLength(full.body)))
    const other = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"9"' }, 'HEAD')
    assert.equal(other.statusCode, 200)
    assert.equal(other.headers.etag, '"1"')
  })

  it('answers 200 with the whole order when no tag matches', async () => {
    const { member, orderId, url } = await placed()
    for (const condition of ['"2"', '"0", "3"', 'W/"7"', '1', 'garbage']) {
      const res = await get(ctx.api, url, { ...member.headers, 'if-none-match': condition })
      const data = successData<{ orderId: number }>(res)
      assert.equal(data.orderId, orderId, condition)
      assert.equal(res.headers.etag, '"1"')
    }
  })

  it('matches a list, *, and the weak form of the tag', async () => {
    const { member, url } = await placed()
    for (const condition of ['"5", "1"', '"5","1","6"', '*', 'W/"1"', 'W/"0", W/"1"']) {
      const res = await get(ctx.api, url, { ...member.headers, 'if-none-match': condition })
      assert.equal(res.statusCode, 304, condition)
      assert.equal(res.body, '')
    }
  })

  it('stops matching the old tag once the order changes (PATCH memo), and matches the new one', async () => {
    const { member, orderId, url } = await placed()
    const patched = await ctx.api.inject({ method: 'PATCH', url, headers: member.headers, payload: { orderId, memo: 'leave at the door' } })
    successData(patched)
    assert.equal(patched.headers.etag, '"2"')
    const stale = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"1"' })
    assert.equal(successData<{ memo: string }>(stale).memo, 'leave at the door')
    assert.equal(stale.headers.etag, '"2"')
    const fresh = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"2"' })
    assert.equal(fresh.statusCode, 304)
    assert.equal(fresh.headers.etag, '"2"')
  })

  it('follows the verbs too: after confirm, the tag it answered with is the one that matches', async () => {
    const { member, url } = await placed()
    const confirmed = await ctx.api.inject({ method: 'PATCH', url: `${url}/confirm`, headers: member.headers })
    assert.equal(confirmed.statusCode, 200, confirmed.body)
    const etag = String(confirmed.headers.etag)
    assert.notEqual(etag, '"1"')
    assert.equal((await get(ctx.api, url, { ...member.headers, 'if-none-match': etag })).statusCode, 304)
    assert.equal((await get(ctx.api, url, { ...member.headers, 'if-none-match': '"1"' })).statusCode, 200)
  })

  it('applies to the admin read of an order as well', async () => {
    const { orderId } = await placed()
    const admin = await ctx.api.admin()
    const url = `/api/v1/admin/orders/${orderId}`
    assert.equal((await get(ctx.api, url, admin.headers)).headers.etag, '"1"')
    const res = await get(ctx.api, url, { ...admin.headers, 'if-none-match': '"1"' })
    assert.equal(res.statusCode, 304)
    assert.equal(res.body, '')
  })

  it('never turns an error into 304: 404, 403 and 401 stay error envelopes', async () => {
    const { url } = await placed()
    const stranger = await ctx.api.member('stranger')
    assertError(await get(ctx.api, url, { ...stranger.headers, 'if-none-match': '*' }), {
      code: 'ACCESS_DENIED', instance: url, detail: /owner of this order/,
    })
    assertError(await get(ctx.api, '/api/v1/orders/999999', { ...stranger.headers, 'if-none-match': '*' }), {
      code: 'ORDER_NOT_FOUND', instance: '/api/v1/orders/999999', detail: /999999/,
    })
    const anonymous = await get(ctx.api, url, { 'if-none-match': '"1"' })
    assert.equal(anonymous.statusCode, 401)
    assert.equal(anonymous.json().error.code, 'UNAUTHORIZED')
  })

  it('ignores If-None-Match on a PATCH: the change is made and answered 200 with its body', async () => {
    const { member, orderId, url } = await placed()
    for (const condition of ['*', '"2"']) {
      const res = await ctx.api.inject({
        method: 'PATCH', url, headers: { ...member.headers, 'if-none-match': condition }, payload: { orderId, memo: `memo ${condition}` },
      })
      assert.equal(successData<{ memo: string }>(res).memo, `memo ${condition}`)
    }
  })

  it('ignores If-None-Match on a GET whose answer has no ETag', async () => {
    const { member } = await placed()
    const res = await get(ctx.api, '/api/v1/orders', { ...member.headers, 'if-none-match': '*' })
    assert.equal(successData<{ content: unknown[] }>(res).content.length, 1)
  })

  it('logs the 304 and counts it in http_server_requests_seconds', async () => {
    const { member, url } = await placed()
    const res = await get(ctx.api, url, { ...member.headers, 'if-none-match': '"1"', 'x-request-id': `conditional-${ctx.backend}` })
    assert.equal(res.statusCode, 304)
    const line = lines.find(entry => entry.requestId === `conditional-${ctx.backend}` && entry.msg === 'request completed')
    assert.ok(line, 'the access log has the request')
    assert.equal(line.statusCode, 304)
    assert.equal(line.method, 'GET')
    const metrics = await ctx.api.inject({ url: '/actuator/prometheus' })
    assert.match(metrics.body, /^http_server_requests_seconds_count\{method="GET",uri="\/api\/v1\/orders\/\{id\}",status="304",outcome="REDIRECTION"\} [1-9]/m)
  })
}, { build: { logger: { stream, level: 'info' } } })
