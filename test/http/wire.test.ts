import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { buildApp } from '../../src/app.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { assertError, describeEachBackend, testConfig } from '../helper.js'
import { logCapture } from './raw.js'

describeEachBackend('wire rules', (ctx) => {
  it('wraps success in the envelope with application/json', async () => {
    const res = await ctx.api.inject({ url: '/api/v1/health' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    assert.deepEqual(res.json(), { success: true, data: { status: 'UP' }, error: null })
  })

  it('answers DELETE on a known path with 405 and an Allow header', async () => {
    const admin = await ctx.api.admin()
    const res = await ctx.api.inject({ method: 'DELETE', url: '/api/v1/orders/1', headers: admin.headers })
    assertError(res, {
      code: 'METHOD_NOT_ALLOWED',
      instance: '/api/v1/orders/1',
      detail: 'This path does not support that method; it supports GET, HEAD, PATCH, PUT.',
    })
    assert.equal(res.headers.allow, 'GET, HEAD, PATCH, PUT')
  })

  it('answers 405 before 401: the method is wrong whoever asks', async () => {
    const res = await ctx.api.inject({ method: 'DELETE', url: '/api/v1/orders' })
    assertError(res, {
      code: 'METHOD_NOT_ALLOWED',
      instance: '/api/v1/orders',
      detail: 'This path does not support that method; it supports GET, HEAD, POST.',
    })
  })

  it('answers HEAD and OPTIONS on a POST-only path with 405', async () => {
    for (const method of ['HEAD', 'OPTIONS'] as const) {
      const res = await ctx.api.inject({ method, url: '/api/v1/members' })
      assert.equal(res.statusCode, 405)
      assert.equal(res.headers.allow, 'POST')
    }
  })

  it('answers every other method Node accepts (TRACE, QUERY, PROPFIND, PURGE...) on a known path with 405', async () => {
    for (const method of ['TRACE', 'QUERY', 'PROPFIND', 'PURGE', 'M-SEARCH']) {
      const res = await ctx.api.inject({ method: method as 'GET', url: '/api/v1/orders' })
      assertError(res, {
        code: 'METHOD_NOT_ALLOWED',
        instance: '/api/v1/orders',
        detail: 'This path does not support that method; it supports GET, HEAD, POST.',
      })
      assert.equal(res.headers.allow, 'GET, HEAD, POST', method)
    }
    const unknown = await ctx.api.inject({ method: 'PROPFIND' as 'GET', url: '/api/v1/nothing-here' })
    assert.equal(unknown.statusCode, 404)
  })

  it('answers a path that is not valid percent-encoding with the error envelope and the usual headers', async () => {
    const res = await ctx.api.inject({ url: '/api/v1/orders/%E0%A4%A' })
    assertError(res, {
      code: 'MALFORMED_REQUEST', instance: '/api/v1/orders/%E0%A4%A', detail: 'The request path is not valid percent-encoded UTF-8.',
    })
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.match(String(res.headers['x-request-id']), /.+/)
    assert.doesNotMatch(res.body, /FST_ERR/)
  })

  it('answers an id of any length like any id too large: 400 naming id (not a 414 from the router)', async () => {
    const member = await ctx.api.member()
    const url = `/api/v1/orders/${'9'.repeat(101)}`
    assertError(await ctx.api.inject({ url, headers: member.headers }), {
      code: 'VALIDATION_FAILED',
      instance: url,
      detail: 'The path has invalid parameters.',
      invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
    })
  })

  it('answers DELETE on an unknown path with 404', async () => {
    const res = await ctx.api.inject({ method: 'DELETE', url: '/api/v1/nothing-here' })
    assertError(res, { code: 'RESOURCE_NOT_FOUND', instance: '/api/v1/nothing-here', detail: 'No resource at /api/v1/nothing-here.' })
  })

  it('answers an unknown route with 404 RESOURCE_NOT_FOUND, also for anonymous callers, without the query in instance', async () => {
    const res = await ctx.api.inject({ url: '/api/v1/widgets?x=1' })
    assertError(res, { code: 'RESOURCE_NOT_FOUND', instance: '/api/v1/widgets', detail: 'No resource at /api/v1/widgets.' })
  })

  it('reserves /api/v2 with 404 API_VERSION_NOT_AVAILABLE', async () => {
    for (const url of ['/api/v2/orders', '/api/v2/orders/1', '/api/v2']) {
      const res = await ctx.api.inject({ method: 'POST', url, payload: {} })
      assertError(res, {
        code: 'API_VERSION_NOT_AVAILABLE',
        instance: url,
        detail: 'API version 2 is reserved and not available; use /api/v1.',
      })
    }
  })

  it('refuses a body that is not application/json with 415', async () => {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: 'email=a@b.c', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assertError(res, { code: 'UNSUPPORTED_MEDIA_TYPE', instance: '/api/v1/members', detail: 'Request bodies must be sent as application/json.' })
    const text = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: '{}', headers: { 'content-type': 'text/plain' } })
    assert.equal(text.statusCode, 415)
  })

  it('accepts application/json with a charset', async () => {
    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/members',
      payload: JSON.stringify({ email: 'charset@example.com', password: 'long enough', name: 'C' }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    assert.equal(res.statusCode, 201, res.body)
  })

  it('refuses unparseable JSON with 400 MALFORMED_REQUEST', async () => {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: '{"email": ', headers: { 'content-type': 'application/json' } })
    assertError(res, { code: 'MALFORMED_REQUEST', instance: '/api/v1/members', detail: 'The request body is not valid JSON.' })
  })

  it('refuses an empty JSON body, and a body that is not an object, with 400 MALFORMED_REQUEST', async () => {
    const empty = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: '', headers: { 'content-type': 'application/json' } })
    assertError(empty, { code: 'MALFORMED_REQUEST', instance: '/api/v1/members', detail: 'The request body is empty; send a JSON object.' })
    const array = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: [1, 2] })
    assertError(array, { code: 'MALFORMED_REQUEST', instance: '/api/v1/members', detail: 'The request body must be a JSON object.' })
    const none = await ctx.api.inject({ method: 'POST', url: '/api/v1/members' })
    assertError(none, { code: 'MALFORMED_REQUEST', instance: '/api/v1/members', detail: 'The request body must be a JSON object.' })
  })

  it('refuses a __proto__ key (prototype poisoning) with 400 MALFORMED_REQUEST', async () => {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: '{"__proto__": {"role": "ADMIN"}}', headers: { 'content-type': 'application/json' },
    })
    assertError(res, { code: 'MALFORMED_REQUEST', instance: '/api/v1/members', detail: 'The request body is not valid JSON.' })
  })

  it('refuses a body over the limit with 413', async () => {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' },
    })
    assertError(res, { code: 'PAYLOAD_TOO_LARGE', instance: '/api/v1/members', detail: 'The request body is larger than this service accepts.' })
  })

  it('rejects unknown body fields, naming them', async () => {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: { email: 'u@example.com', password: 'long enough', name: 'U', role: 'ADMIN' },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/members',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'role', message: 'is not a recognised field' }],
    })
  })

  it('refuses the NUL character (U+0000) in body and query strings with 400 naming the field, not a 500', async () => {
    const nul = { field: 'name', message: 'must not contain the NUL character (U+0000)' }
    assertError(await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: { email: 'nul@example.com', password: 'long enough', name: 'A\u0000B' },
    }), { code: 'VALIDATION_FAILED', instance: '/api/v1/members', detail: 'The request body has invalid parameters.', invalidParams: [nul] })

    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const member = await ctx.api.member()
    const order = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: [{ productId: product.productId, quantity: 1 }], shippingAddress: '1 Main St', memo: 'ring\u0000bell' },
    })
    assertError(order, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ ...nul, field: 'memo' }],
    })
    assert.equal(await ctx.api.stockOf(product.productId), 100)

    assertError(await ctx.api.get('/api/v1/admin/members/search', { q: 'a\u0000b' }, admin), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/admin/members/search',
      detail: 'The query has invalid parameters.',
      invalidParams: [{ ...nul, field: 'q' }],
    })
  })

  it('names an unknown body field even when its name is empty', async () => {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: { email: 'e@example.com', password: 'long enough', name: 'E', '': 1 },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/members',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: '', message: 'is not a recognised field' }],
    })
  })

  it('refuses fields sent to a route that takes no body (logout), and the session lives on', async () => {
    const member = await ctx.api.member()
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: member.headers, payload: { everywhere: true } })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/auth/logout',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'everywhere', message: 'is not a recognised field' }],
    })
    assert.equal((await ctx.api.inject({ url: '/api/v1/members/me', headers: member.headers })).statusCode, 200)
  })

  it('rejects unknown query parameters on every /api route, public ones included', async () => {
    const res = await ctx.api.inject({ url: '/api/v1/health?verbose=true' })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/health',
      detail: 'The query has invalid parameters.',
      invalidParams: [{ field: 'verbose', message: 'is not a recognised query parameter' }],
    })
  })

  it('lists at most the first 20 unknown query parameters, in the order sent, and gives their total in detail', async () => {
    const names = Array.from({ length: 57 }, (_, i) => `unknown${i + 1}`)
    const res = await ctx.api.inject({ url: `/api/v1/products?${names.map(name => `${name}=1`).join('&')}&size=0` })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/products',
      detail: 'The request has 57 unknown query parameters; the first 20 are listed.',
      invalidParams: [
        { field: 'size', message: 'must be at least 1' },
        ...names.slice(0, 20).map(field => ({ field, message: 'is not a recognised query parameter' })),
      ].sort((a, b) => res.json().error.invalidParams.findIndex((p: { field: string }) => p.field === a.field) -
        res.json().error.invalidParams.findIndex((p: { field: string }) => p.field === b.field)),
    })
    assert.deepEqual(res.json().error.invalidParams.filter((p: { field: string }) => p.field !== 'size').map((p: { field: string }) => p.field), names.slice(0, 20))
    const twenty = await ctx.api.inject({ url: `/api/v1/products?${names.slice(0, 20).map(name => `${name}=1`).join('&')}` })
    assertError(twenty, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/products',
      detail: 'The query has invalid parameters.',
      invalidParams: names.slice(0, 20).map(field => ({ field, message: 'is not a recognised query parameter' })),
    })
  })

  for (const [method, url] of [['GET', '/api/v1/orders/'], ['GET', '/api/v1/orders/5/'], ['GET', '/api/v1/products/'],
    ['GET', '/api/v1/products/categories/'], ['DELETE', '/api/v1/orders/'], ['POST', '/api/v1/orders/'], ['GET', '/api/v1/admin/orders/7/']] as const) {
    it(`answers a trailing slash on a known path (${method} ${url}) with 404 RESOURCE_NOT_FOUND, not a validation error, 401 or 405`, async () => {
      assertError(await ctx.api.inject({ method, url: `${url}?size=1` }), { code: 'RESOURCE_NOT_FOUND', instance: url, detail: `No resource at ${url}.` })
    })
  }

  it('sends Cache-Control: no-store on every /api answer, errors included', async () => {
    const member = await ctx.api.member()
    const answers = [
      await ctx.api.inject({ url: '/api/v1/health' }),
      await ctx.api.inject({ url: '/api/v1/members/me', headers: member.headers }),
      await ctx.api.inject({ url: '/api/v1/orders' }),
      await ctx.api.inject({ url: '/api/v1/no-such-thing' }),
      await ctx.api.inject({ method: 'DELETE', url: '/api/v1/orders' }),
      await ctx.api.inject({ url: '/api/v1/orders/%E0%A4%A' }),
      await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: 'nope', headers: { 'content-type': 'text/plain' } }),
      await ctx.api.inject({ url: '/api/v1/products?size=0' }),
    ]
    assert.deepEqual(answers.map(res => res.statusCode), [200, 200, 401, 404, 405, 400, 415, 400])
    for (const res of answers) assert.equal(res.headers['cache-control'], 'no-store', `${res.statusCode} ${res.body}`)
  })

  it('lets shared caches keep the catalogue\'s 200 answers to anonymous callers for 60 s, and nothing else of it', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    for (const url of ['/api/v1/products', `/api/v1/products/${product.productId}`, '/api/v1/products/categories', '/api/v1/products/search?q=coffee']) {
      const res = await ctx.api.inject({ url })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      assert.equal(res.headers['cache-control'], 'public, max-age=60', url)
      // A cache must not hand the anonymous answer to a caller who sends a credential.
      assert.equal(res.headers.vary, 'Authorization, X-API-Key', url)
      const authenticated = await ctx.api.inject({ url, headers: admin.headers })
      assert.equal(authenticated.statusCode, 200, url)
      assert.equal(authenticated.headers['cache-control'], 'no-store', url)
      // An invalid credential is ignored on public paths, but the answer is still not for shared caches.
      const invalid = await ctx.api.inject({ url, headers: { authorization: 'Bearer nonsense' } })
      assert.equal(invalid.headers['cache-control'], 'no-store', url)
    }
    const missing = await ctx.api.inject({ url: '/api/v1/products/987654321' })
    assert.equal(missing.statusCode, 404)
    assert.equal(missing.headers['cache-control'], 'no-store')
  })

  for (const id of ['0', '-1', 'abc', '01', '1.5', '9223372036854775808', '99999999999999999999']) {
    it(`answers path id ${id} with 400 naming id`, async () => {
      const admin = await ctx.api.admin()
      const res = await ctx.api.inject({ url: `/api/v1/orders/${id}`, headers: admin.headers })
      assertError(res, {
        code: 'VALIDATION_FAILED',
        instance: `/api/v1/orders/${id}`,
        detail: 'The path has invalid parameters.',
        invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
      })
    })
  }

  it('answers the largest 64-bit id that does not exist with 404', async () => {
    const admin = await ctx.api.admin()
    const res = await ctx.api.inject({ url: '/api/v1/orders/9223372036854775807', headers: admin.headers })
    assertError(res, { code: 'ORDER_NOT_FOUND', instance: '/api/v1/orders/9223372036854775807', detail: 'Order 9223372036854775807 does not exist.' })
  })

  it('rejects body ids above 2^53-1', async () => {
    const member = await ctx.api.member()
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: member.id, items: [{ productId: 9007199254740992, quantity: 1 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'items[0].productId', message: 'must be at most 9007199254740991' }],
    })
  })

  it('never shows a stack trace or SQL: an unexpected failure is a generic 500', async () => {
    const admin = await ctx.api.admin()
    // Break the database under the running app: the next order read fails inside the driver.
    await ctx.api.app.db.schema.alterTable('orders').renameTo('orders_away').execute()
    try {
      const res = await ctx.api.inject({ url: '/api/v1/orders', headers: admin.headers })
      assertError(res, {
        code: 'INTERNAL_ERROR',
        instance: '/api/v1/orders',
        detail: 'An unexpected error occurred. It has been logged; please try again later.',
      })
      assert.doesNotMatch(res.body, /orders_away|relation|select|at .*\.ts/i)
    } finally {
      await ctx.api.app.db.schema.alterTable('orders_away').renameTo('orders').execute()
    }
  })
})

describe('TRUST_PROXY=true at start-up', () => {
  let database: DatabaseHandle
  before(async () => {
    database = await openDatabase({ dataDir: 'memory', databaseUrl: undefined, databasePoolSize: 1, databasePreparedStatements: true })
  })
  after(() => database?.close())

  const warnings = async (trustProxy: string) => {
    const { stream, lines } = logCapture()
    const app = await buildApp(testConfig({ TRUST_PROXY: trustProxy, LOG_LEVEL: 'info' }), { logger: { stream }, database })
    await app.close()
    return lines.filter(line => line.level === 40 && /TRUST_PROXY/.test(String(line.msg)))
  }

  it('logs one warning that any client can then choose its address, naming the hop count and proxy addresses instead', async () => {
    const lines = await warnings('true')
    assert.equal(lines.length, 1, JSON.stringify(lines))
    assert.match(String(lines[0]!.msg), /X-Forwarded-For from any client/)
    assert.match(String(lines[0]!.msg), /number of proxies .* or to their addresses/)
  })

  it('says nothing when TRUST_PROXY is a hop count, addresses, or false', async () => {
    for (const value of ['1', '10.0.0.1', 'false']) assert.deepEqual(await warnings(value), [], value)
  })
})
