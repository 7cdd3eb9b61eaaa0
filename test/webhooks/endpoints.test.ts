import assert from 'node:assert/strict'
import { it } from 'node:test'
import { assertError, describeEachBackend, successData, type Api, type Member } from '../helper.js'

// CONTRACT §12 "Webhook endpoints", §14 "Webhooks": the admin routes, their refusals and access.

const BASE = '/api/v1/admin/webhook-endpoints'
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

async function create (api: Api, admin: Member, payload: Record<string, unknown>) {
  return api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload })
}

describeEachBackend('webhook endpoints (admin)', (ctx) => {
  const patch = (url: string, who: Member, payload?: object) =>
    ctx.api.inject({ method: 'PATCH', url, headers: who.headers, ...(payload ? { payload } : {}) })

  it('creates an endpoint with a whsec_ secret shown only on creation and rotation', async () => {
    const admin = await ctx.api.admin()
    const res = await create(ctx.api, admin, { url: 'https://hooks.example.com/orders', eventTypes: ['order.placed', 'order.cancelled'], description: 'ERP' })
    assert.equal(res.statusCode, 201, res.body)
    const created = res.json().data
    assert.equal(res.headers.location, `${BASE}/${created.endpointId}`)
    assert.match(created.secret, SECRET)
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32)
    assert.match(created.createdAt, TIME)
    assert.deepEqual(created, {
      endpointId: created.endpointId,
      url: 'https://hooks.example.com/orders',
      eventTypes: ['order.placed', 'order.cancelled'],
      description: 'ERP',
      status: 'ACTIVE',
      secret: created.secret,
      createdAt: created.createdAt,
      updatedAt: created.createdAt,
    })
    const { secret: _secret, ...shown } = created
    assert.deepEqual(successData(await ctx.api.get(`${BASE}/${created.endpointId}`, {}, admin)), shown)
    assert.deepEqual(successData(await ctx.api.get(BASE, {}, admin)), {
      content: [shown], page: 0, size: 20, totalElements: 1, totalPages: 1, first: true, last: true,
    })

    const rotated = successData<Record<string, unknown>>(await patch(`${BASE}/${created.endpointId}/rotate-secret`, admin))
    assert.match(String(rotated.secret), SECRET)
    assert.notEqual(rotated.secret, created.secret)
    assert.deepEqual({ ...rotated, secret: undefined, updatedAt: undefined }, { ...shown, secret: undefined, updatedAt: undefined })
  })

  it('takes eventTypes absent or null as every type, and description absent as null', async () => {
    const admin = await ctx.api.admin()
    const a = (await create(ctx.api, admin, { url: 'https://a.example.com/' })).json().data
    const b = (await create(ctx.api, admin, { url: 'https://b.example.com/', eventTypes: null, description: null })).json().data
    assert.equal(a.eventTypes, null)
    assert.equal(a.description, null)
    assert.equal(b.eventTypes, null)
    const list = successData<{ content: Array<{ endpointId: number }>, totalElements: number }>(await ctx.api.get(BASE, { size: 1 }, admin))
    assert.deepEqual([list.totalElements, list.content.map(e => e.endpointId)], [2, [b.endpointId]])
  })

  it('changes url, eventTypes, description and status; absent fields stay, null eventTypes = all', async () => {
    const admin = await ctx.api.admin()
    const created = (await create(ctx.api, admin, { url: 'https://hooks.example.com/', eventTypes: ['order.placed'], description: 'x' })).json().data
    const url = `${BASE}/${created.endpointId}`
    let changed = successData<Record<string, unknown>>(await patch(url, admin, { description: 'y' }))
    assert.deepEqual([changed.url, changed.eventTypes, changed.description, changed.status], ['https://hooks.example.com/', ['order.placed'], 'y', 'ACTIVE'])
    changed = successData(await patch(url, admin, { eventTypes: null, status: 'DISABLED', url: 'https://other.example.com/x' }))
    assert.deepEqual([changed.url, changed.eventTypes, changed.description, changed.status], ['https://other.example.com/x', null, 'y', 'DISABLED'])
    changed = successData(await patch(url, admin, {}))
    assert.equal(changed.status, 'DISABLED')
    assert.equal(changed.secret, undefined)
  })

  it('deletes an endpoint: 200 with data null, then 404 for every route, twice included', async () => {
    const admin = await ctx.api.admin()
    const created = (await create(ctx.api, admin, { url: 'https://hooks.example.com/' })).json().data
    const url = `${BASE}/${created.endpointId}`
    const res = await patch(`${url}/delete`, admin)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { success: true, data: null, error: null })
    const detail = `Webhook endpoint ${created.endpointId} does not exist.`
    for (const [method, path] of [['PATCH', `${url}/delete`], ['GET', url], ['PATCH', url], ['PATCH', `${url}/rotate-secret`], ['GET', `${url}/deliveries`]] as const) {
      const answer = await ctx.api.inject({ method, url: path, headers: admin.headers, ...(method === 'PATCH' && path === url ? { payload: {} } : {}) })
      assertError(answer, { code: 'WEBHOOK_ENDPOINT_NOT_FOUND', instance: path, detail })
    }
    assert.deepEqual(successData<{ totalElements: number }>(await ctx.api.get(BASE, {}, admin)).totalElements, 0)
  })

  it('answers 404 for unknown endpoints and deliveries', async () => {
    const admin = await ctx.api.admin()
    assertError(await ctx.api.get(`${BASE}/999`, {}, admin), { code: 'WEBHOOK_ENDPOINT_NOT_FOUND', instance: `${BASE}/999`, detail: 'Webhook endpoint 999 does not exist.' })
    const retry = '/api/v1/admin/webhook-deliveries/999/retry'
    assertError(await patch(retry, admin), { code: 'WEBHOOK_DELIVERY_NOT_FOUND', instance: retry, detail: 'Webhook delivery 999 does not exist.' })
    assertError(await ctx.api.get(`${BASE}/abc`, {}, admin), { code: 'VALIDATION_FAILED', instance: `${BASE}/abc`, detail: 'The path has invalid parameters.', invalidParams: [{ field: 'id', message: /./ }] })
  })

  it('refuses bad bodies with 400 naming the field', async () => {
    const admin = await ctx.api.admin()
    // Schema refusals say where (body, query); the URL rules are checked past the schema.
    const body = 'The request body has invalid parameters.'
    const rule = 'The request has invalid parameters.'
    const cases: Array<[Record<string, unknown>, string, string, string | RegExp]> = [
      [{}, body, 'url', /required/],
      [{ url: 'not a url' }, rule, 'url', 'must be an absolute URL'],
      [{ url: 'ftp://example.com/' }, rule, 'url', 'must be an http:// or https:// URL'],
      [{ url: `https://example.com/${'a'.repeat(2048)}` }, body, 'url', /2048/],
      [{ url: 'https://user:pw@example.com/' }, rule, 'url', 'must not contain user-info (user:password@)'],
      [{ url: 'https://example.com/', eventTypes: [] }, body, 'eventTypes', 'must not be empty'],
      [{ url: 'https://example.com/', description: 'a'.repeat(501) }, body, 'description', /500/],
      [{ url: 'https://example.com/', description: 'bell\u0007' }, body, 'description', /control/],
      [{ url: 'https://example.com/', secret: 'whsec_x' }, body, 'secret', /./],
    ]
    for (const [payload, detail, field, message] of cases) {
      assertError(await create(ctx.api, admin, payload), { code: 'VALIDATION_FAILED', instance: BASE, detail, invalidParams: [{ field, message }] })
    }
    // An unknown type: neither a list of known types nor null.
    assertError(await create(ctx.api, admin, { url: 'https://example.com/', eventTypes: ['order.shipped'] }), {
      code: 'VALIDATION_FAILED',
      instance: BASE,
      detail: body,
      invalidParams: [{ field: 'eventTypes[0]', message: /^must be one of order\.placed, order\.confirmed, .*, payment\.cancelled, .*, return\.cancelled$/ }],
    })
    const created = (await create(ctx.api, admin, { url: 'https://example.com/' })).json().data
    const url = `${BASE}/${created.endpointId}`
    assertError(await patch(url, admin, { eventTypes: [] }), { code: 'VALIDATION_FAILED', instance: url, detail: body, invalidParams: [{ field: 'eventTypes', message: 'must not be empty' }] })
    assertError(await patch(url, admin, { status: 'PAUSED' }), { code: 'VALIDATION_FAILED', instance: url, detail: body, invalidParams: [{ field: 'status', message: /./ }] })
    assertError(await patch(url, admin, { url: 'https://u@example.com/' }), { code: 'VALIDATION_FAILED', instance: url, detail: rule, invalidParams: [{ field: 'url', message: 'must not contain user-info (user:password@)' }] })
    const deliveries = `${url}/deliveries`
    assertError(await ctx.api.get(deliveries, { status: 'DONE' }, admin), { code: 'VALIDATION_FAILED', instance: deliveries, detail: /invalid parameters/, invalidParams: [{ field: 'status', message: /./ }] })
  })

  it('names only the real problem of a nullable field, whichever branch the value is closest to (issue 30)', async () => {
    const admin = await ctx.api.admin()
    const body = 'The request body has invalid parameters.'
    const types = ['order.placed', 'order.confirmed', 'order.cancelled', 'order.expired', 'order.delivered', 'order.deleted',
      'order.updated', 'payment.created', 'payment.succeeded', 'payment.failed', 'payment.refunded', 'payment.cancelled',
      'order.edited', 'payment.updated', 'fulfillment.created', 'fulfillment.delivered', 'fulfillment.cancelled',
      'return.requested', 'return.received', 'return.rejected', 'return.cancelled']
    const cases: Array<[Record<string, unknown>, Array<{ field: string, message: string }>]> = [
      [{ eventTypes: ['order.placed', 'order.shipped'] }, [{ field: 'eventTypes[1]', message: `must be one of ${types.join(', ')}` }]],
      [{ eventTypes: 'order.placed' }, [{ field: 'eventTypes', message: 'must be an array or null' }]],
      [{ eventTypes: [7] }, [{ field: 'eventTypes[0]', message: `must be one of ${types.join(', ')}` }]],
      [{ description: 5 }, [{ field: 'description', message: 'must be a string or null' }]],
      [{ description: 'x'.repeat(501), eventTypes: {} }, [{ field: 'eventTypes', message: 'must be an array or null' }, { field: 'description', message: 'must be at most 500 characters' }]],
    ]
    for (const [fields, invalidParams] of cases) {
      assertError(await create(ctx.api, admin, { url: 'https://example.com/', ...fields }), { code: 'VALIDATION_FAILED', instance: BASE, detail: body, invalidParams })
    }
    assert.equal(successData<{ totalElements: number }>(await ctx.api.get(BASE, {}, admin)).totalElements, 0)
  })

  it('allows at most 50 endpoints: the 51st is 400 naming url', async () => {
    const admin = await ctx.api.admin()
    for (let i = 0; i < 50; i++) assert.equal((await create(ctx.api, admin, { url: `https://h${i}.example.com/` })).statusCode, 201)
    assertError(await create(ctx.api, admin, { url: 'https://h50.example.com/' }), {
      code: 'VALIDATION_FAILED',
      instance: BASE,
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'url', message: 'no more endpoints: at most 50 may exist; delete one first' }],
    })
  })

  it('lets only admins in: a member is 403, anonymous 401', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const created = (await create(ctx.api, admin, { url: 'https://example.com/' })).json().data
    const routes: Array<['GET' | 'POST' | 'PATCH', string]> = [
      ['POST', BASE], ['GET', BASE], ['GET', `${BASE}/${created.endpointId}`], ['PATCH', `${BASE}/${created.endpointId}`],
      ['PATCH', `${BASE}/${created.endpointId}/rotate-secret`], ['PATCH', `${BASE}/${created.endpointId}/delete`],
      ['GET', `${BASE}/${created.endpointId}/deliveries`], ['PATCH', '/api/v1/admin/webhook-deliveries/1/retry'],
    ]
    for (const [method, url] of routes) {
      const payload = method === 'GET' ? {} : { payload: { url: 'https://example.com/' } }
      assert.equal((await ctx.api.inject({ method, url, headers: member.headers, ...payload })).statusCode, 403, `${method} ${url}`)
      assert.equal((await ctx.api.inject({ method, url, ...payload })).statusCode, 401, `${method} ${url}`)
    }
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } })

describeEachBackend('webhook endpoint URLs without WEBHOOK_ALLOW_PRIVATE', (ctx) => {
  const detail = 'The request has invalid parameters.'
  // The refusals the setting lifts say so (issue 30).
  const PRIVATE_HINT = '(the setting WEBHOOK_ALLOW_PRIVATE=true allows private hosts, for development)'
  const HTTP_HINT = 'must be an https:// URL (the setting WEBHOOK_ALLOW_PRIVATE=true allows http://, for development)'
  const privateHost = (host: string) => `must name a public host: ${host}, which is not globally routable ${PRIVATE_HINT}`
  const loopbackName = (name: string) => new RegExp(`^must name a public host: ${name} resolves to (127\\.0\\.0\\.1|::1), which is not globally routable \\(the setting WEBHOOK_ALLOW_PRIVATE=true allows private hosts, for development\\)$`)
  const post = async (url: string) => ctx.api.inject({ method: 'POST', url: BASE, headers: (await ctx.api.admin()).headers, payload: { url } })

  it('refuses http://, user-info and hosts that are or resolve to non-public addresses', async () => {
    const admin = await ctx.api.admin()
    const cases: Array<[string, string | RegExp]> = [
      ['https://127.0.0.1/x', privateHost('127.0.0.1')],
      ['https://10.0.0.1', privateHost('10.0.0.1')],
      ['https://172.16.5.4/', privateHost('172.16.5.4')],
      ['https://192.168.1.1/', privateHost('192.168.1.1')],
      ['https://100.64.0.1/', privateHost('100.64.0.1')],
      ['https://169.254.169.254/latest/meta-data', privateHost('169.254.169.254')],
      ['https://192.0.2.10/', privateHost('192.0.2.10')],
      ['https://224.0.0.1/', privateHost('224.0.0.1')],
      ['https://0.0.0.0/', privateHost('0.0.0.0')],
      ['https://0x7f.1/', privateHost('127.0.0.1')],
      ['https://[::1]/', privateHost('::1')],
      ['https://[fd00::1]/', privateHost('fd00::1')],
      ['https://[fe80::1]/', privateHost('fe80::1')],
      ['https://[::ffff:127.0.0.1]/', privateHost('::ffff:7f00:1')],
      ['https://[2001:db8::1]/', privateHost('2001:db8::1')],
      ['http://example.com', HTTP_HINT],
      ['ftp://example.com/', HTTP_HINT],
      ['https://user:secret@example.com/', 'must not contain user-info (user:password@)'],
      ['https://localhost/hook', loopbackName('localhost')],
    ]
    for (const [url, message] of cases) {
      assertError(await post(url), { code: 'VALIDATION_FAILED', instance: BASE, detail, invalidParams: [{ field: 'url', message }] })
    }
    assert.equal((await ctx.api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: 'https://93.184.215.14/hook' } })).statusCode, 201)
  })

  it('judges an IPv6 host that carries an IPv4 address by that address, and a host name without its final dot (CONTRACT §18)', async () => {
    const admin = await ctx.api.admin()
    const cases: Array<[string, string | RegExp]> = [
      ['https://[::127.0.0.1]/', privateHost('::7f00:1')], // IPv4-compatible
      ['https://[::7f00:1]/', privateHost('::7f00:1')],
      ['https://[::ffff:0:a00:1]/', privateHost('::ffff:0:a00:1')], // IPv4-translated
      ['https://[2002:7f00:1::1]/', privateHost('2002:7f00:1::1')], // 6to4
      ['https://[2002:a9fe:a9fe::]/', privateHost('2002:a9fe:a9fe::')],
      ['https://[64:ff9b::10.0.0.1]/', privateHost('64:ff9b::a00:1')], // NAT64
      ['https://[64:ff9b:1::808:808]/', privateHost('64:ff9b:1::808:808')], // local-use NAT64
      ['https://[2001:0:808:808::80ff:fefe]/', privateHost('2001:0:808:808::80ff:fefe')], // Teredo, client 127.0.1.1
      ['https://127.0.0.1./', privateHost('127.0.0.1')],
      ['https://localhost./hook', loopbackName('localhost')],
      ['https://LOCALHOST../hook', loopbackName('localhost')],
      ['http://[::127.0.0.1]/', HTTP_HINT],
      ['http://[2002:7f00:1::1]/', HTTP_HINT],
    ]
    for (const [url, message] of cases) {
      assertError(await post(url), { code: 'VALIDATION_FAILED', instance: BASE, detail, invalidParams: [{ field: 'url', message }] })
    }
    assert.equal(successData<{ totalElements: number }>(await ctx.api.get(BASE, {}, admin)).totalElements, 0)
    // Carrying a public IPv4 address is no reason to refuse.
    for (const url of ['https://[::ffff:8.8.8.8]/', 'https://[2002:808:808::1]/', 'https://[64:ff9b::8.8.8.8]/']) {
      assert.equal((await post(url)).statusCode, 201, url)
    }
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'false' } })
