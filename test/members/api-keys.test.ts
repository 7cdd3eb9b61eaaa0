import { createHash } from 'node:crypto'
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import { assertError, describeEachBackend, type Member } from '../helper.js'

const KEYS = '/api/v1/members/me/api-keys'
const ME = '/api/v1/members/me'
const INVALID_KEY = 'The API key is invalid or revoked.'
const ANONYMOUS = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const SESSION_NEEDED = 'This operation needs a bearer session (Authorization: Bearer <access token> from a login); an API key cannot manage credentials.'
const LIMIT_REACHED = 'A member may have at most 25 active API keys; revoke one to create another.'

interface CreatedKey { keyId: number, name: string, prefix: string, secret: string, createdAt: string }

describeEachBackend('API keys', (ctx) => {
  const withKey = (secret: string) => ({ 'x-api-key': secret })
  const create = (member: Pick<Member, 'headers'>, payload: object) =>
    ctx.api.inject({ method: 'POST', url: KEYS, headers: member.headers, payload })
  const list = (member: Pick<Member, 'headers'>) => ctx.api.inject({ url: KEYS, headers: member.headers })
  const revoke = (member: Pick<Member, 'headers'>, keyId: number | string) =>
    ctx.api.inject({ method: 'PATCH', url: `${KEYS}/${keyId}/revoke`, headers: member.headers })
  const me = (secret: string) => ctx.api.inject({ url: ME, headers: withKey(secret) })
  const newKey = async (member: Pick<Member, 'headers'>, name = 'warehouse sync') => {
    const res = await create(member, { name })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data as CreatedKey
  }

  it('creates a key: 201, {keyId, name, prefix, secret, createdAt}, the prefix is the secret’s first 8 characters', async () => {
    const member = await ctx.api.member()
    const res = await create(member, { name: 'warehouse sync' })
    assert.equal(res.statusCode, 201, res.body)
    const body = res.json()
    assert.deepEqual(Object.keys(body).sort(), ['data', 'error', 'success'])
    assert.equal(body.success, true)
    assert.equal(body.error, null)
    const key = body.data as CreatedKey
    assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'keyId', 'name', 'prefix', 'secret'])
    assert.equal(key.name, 'warehouse sync')
    assert.ok(Number.isInteger(key.keyId) && key.keyId > 0)
    assert.ok(key.secret.length >= 32, key.secret)
    assert.equal(key.prefix, key.secret.slice(0, 8))
    assert.match(key.createdAt, TIMESTAMP)
  })

  it('stores only the SHA-256 hash of the secret, never the secret', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const rows = await ctx.api.app.db.selectFrom('api_keys').selectAll().execute()
    assert.equal(rows.length, 1)
    for (const value of Object.values(rows[0]!)) assert.ok(!String(value).includes(key.secret), `a column holds the secret: ${String(value)}`)
    assert.match(rows[0]!.secret_hash, /^[0-9a-f]{64}$/)
    assert.equal(rows[0]!.secret_hash, createHash('sha256').update(key.secret).digest('hex'))
  })

  it('lists the caller’s keys oldest first, without secrets, revoked ones with revokedAt; not other members’ keys', async () => {
    const member = await ctx.api.member()
    const other = await ctx.api.member('other')
    const first = await newKey(member, 'first')
    const second = await newKey(member, 'second')
    await newKey(other, 'not mine')
    assert.equal((await revoke(member, first.keyId)).statusCode, 200)
    const res = await list(member)
    assert.equal(res.statusCode, 200, res.body)
    const keys = res.json().data
    assert.equal(keys.length, 2)
    for (const key of keys) assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'keyId', 'name', 'prefix', 'revokedAt'])
    const { revokedAt, ...firstListed } = keys[0]
    assert.deepEqual(firstListed, { keyId: first.keyId, name: 'first', prefix: first.prefix, createdAt: first.createdAt })
    assert.match(revokedAt, TIMESTAMP)
    assert.deepEqual(keys[1], { keyId: second.keyId, name: 'second', prefix: second.prefix, createdAt: second.createdAt, revokedAt: null })
  })

  it('authenticates X-API-Key as its member, like a bearer token', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const res = await me(key.secret)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().data.memberId, member.id)
    assert.equal(res.json().data.email, member.email)
  })

  it('places an order with X-API-Key', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin, { price: 1250 })
    const member = await ctx.api.member()
    const key = await newKey(member)
    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: withKey(key.secret),
      payload: { customerId: member.id, items: [{ productId: product.productId, quantity: 2 }] },
    })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().data.totalAmount, 2500)
    const order = await ctx.api.app.db.selectFrom('orders').select('customer_id').executeTakeFirstOrThrow()
    assert.equal(Number(order.customer_id), member.id)
  })

  it('carries its member’s role: an admin’s key passes admin routes, a member’s key gets 403', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const url = `/api/v1/admin/products/${product.productId}`
    const adminKey = await newKey(admin)
    const asAdmin = await ctx.api.inject({ url, headers: withKey(adminKey.secret) })
    assert.equal(asAdmin.statusCode, 200, asAdmin.body)
    assert.equal(asAdmin.json().data.productId, product.productId)
    const memberKey = await newKey(await ctx.api.member())
    assertError(await ctx.api.inject({ url, headers: withKey(memberKey.secret) }), {
      code: 'ACCESS_DENIED', instance: url, detail: 'This operation requires the ADMIN role.',
    })
  })

  it('refuses a wrong or unknown key with 401 and WWW-Authenticate, but ignores it on a public path', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    for (const secret of [key.secret.slice(0, -1), key.prefix, 'osk_unknown-key', '']) {
      const res = await me(secret)
      assertError(res, { code: 'UNAUTHORIZED', instance: ME, detail: INVALID_KEY })
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"')
    }
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const res = await ctx.api.inject({ url: `/api/v1/products/${product.productId}`, headers: withKey('osk_unknown-key') })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().data.productId, product.productId)
  })

  it('revokes a key: 200 with data null, the key is refused from then on', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const other = await newKey(member, 'other')
    assert.equal((await me(key.secret)).statusCode, 200)
    const res = await revoke(member, key.keyId)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { success: true, data: null, error: null })
    assertError(await me(key.secret), { code: 'UNAUTHORIZED', instance: ME, detail: INVALID_KEY })
    assert.equal((await me(other.secret)).statusCode, 200)
  })

  it('revoke takes no body: a field is 400 naming it, and the key keeps working', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const url = `${KEYS}/${key.keyId}/revoke`
    assertError(await ctx.api.inject({ method: 'PATCH', url, headers: member.headers, payload: { reason: 'leaked' } }), {
      code: 'VALIDATION_FAILED',
      instance: url,
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'reason', message: 'is not a recognised field' }],
    })
    assert.equal((await me(key.secret)).statusCode, 200)
  })

  it('revoking twice is 200 and keeps the first revokedAt', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    assert.equal((await revoke(member, key.keyId)).statusCode, 200)
    const revokedAt = (await list(member)).json().data[0].revokedAt
    assert.match(revokedAt, TIMESTAMP)
    await new Promise(resolve => setTimeout(resolve, 20))
    const again = await revoke(member, key.keyId)
    assert.equal(again.statusCode, 200, again.body)
    assert.deepEqual(again.json(), { success: true, data: null, error: null })
    assert.equal((await list(member)).json().data[0].revokedAt, revokedAt)
  })

  it('refuses to revoke another member’s key or an unknown key with 404, and the other key keeps working', async () => {
    const owner = await ctx.api.member('owner')
    const key = await newKey(owner)
    const stranger = await ctx.api.member('stranger')
    for (const keyId of [key.keyId, key.keyId + 1000]) {
      assertError(await revoke(stranger, keyId), {
        code: 'API_KEY_NOT_FOUND', instance: `${KEYS}/${keyId}/revoke`, detail: `API key ${keyId} does not exist.`,
      })
    }
    // Not even an admin may revoke it through the caller's own path.
    assertError(await revoke(await ctx.api.admin(), key.keyId), {
      code: 'API_KEY_NOT_FOUND', instance: `${KEYS}/${key.keyId}/revoke`, detail: `API key ${key.keyId} does not exist.`,
    })
    assert.equal((await me(key.secret)).statusCode, 200)
    assert.equal((await list(owner)).json().data[0].revokedAt, null)
  })

  it('refuses a malformed keyId with 400 naming keyId', async () => {
    const member = await ctx.api.member()
    for (const keyId of ['abc', '0', '-1', '9223372036854775808']) {
      assertError(await revoke(member, keyId), {
        code: 'VALIDATION_FAILED',
        instance: `${KEYS}/${keyId}/revoke`,
        detail: 'The path has invalid parameters.',
        invalidParams: [{ field: 'keyId', message: 'must be a positive 64-bit integer' }],
      })
    }
  })

  it('refuses a suspended member’s key with 401 on the next request, and accepts it again once reinstated', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const setStatus = (status: 'ACTIVE' | 'SUSPENDED') => ctx.api.app.db.updateTable('members')
      .set({ status, updated_at: sql<Date>`now()` }).where('id', '=', member.id).execute()
    await setStatus('SUSPENDED')
    // The key's member is read on every request: no polling delay.
    assertError(await me(key.secret), { code: 'UNAUTHORIZED', instance: ME, detail: INVALID_KEY })
    await setStatus('ACTIVE')
    assert.equal((await me(key.secret)).statusCode, 200)
  })

  it('refuses X-API-Key on the routes that manage credentials with 403 ACCESS_DENIED, and changes nothing', async () => {
    const member = await ctx.api.member()
    const key = await newKey(member)
    const other = await newKey(member, 'other')
    const requests = [
      { method: 'POST' as const, url: KEYS, payload: { name: 'minted by a key' } },
      { method: 'POST' as const, url: KEYS, payload: {} }, // 403 comes before body validation
      { method: 'GET' as const, url: KEYS },
      { method: 'PATCH' as const, url: `${KEYS}/${other.keyId}/revoke` },
      { method: 'PATCH' as const, url: '/api/v1/members/password/change', payload: { currentPassword: 'correct horse', newPassword: 'battery staple' } },
      { method: 'POST' as const, url: '/api/v1/auth/logout' },
    ]
    for (const request of requests) {
      assertError(await ctx.api.inject({ ...request, headers: withKey(key.secret) }), { code: 'ACCESS_DENIED', instance: request.url, detail: SESSION_NEEDED })
    }
    const keys = (await list(member)).json().data as Array<{ keyId: number, revokedAt: string | null }>
    assert.deepEqual(keys.map(k => [k.keyId, k.revokedAt]), [[key.keyId, null], [other.keyId, null]])
    assert.equal((await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: member.email, password: 'correct horse' } })).statusCode, 201)
    assert.equal((await me(key.secret)).statusCode, 200, 'the key still reads what it may')
    assert.equal((await ctx.api.inject({ url: ME, headers: member.headers })).statusCode, 200, 'the bearer session is untouched')
  })

  it('refuses the 26th active key with 409 API_KEY_LIMIT_REACHED; revoking one frees a place', async () => {
    const member = await ctx.api.member()
    const keys = []
    for (let i = 0; i < 25; i++) keys.push(await newKey(member, `key ${i}`))
    assertError(await create(member, { name: 'one too many' }), { code: 'API_KEY_LIMIT_REACHED', instance: KEYS, detail: LIMIT_REACHED })
    assert.equal((await list(member)).json().data.length, 25)
    assert.equal((await newKey(await ctx.api.member('other'), 'another member’s')).name, 'another member’s', 'the limit is per member')
    assert.equal((await revoke(member, keys[0]!.keyId)).statusCode, 200)
    assert.equal((await newKey(member, 'in its place')).name, 'in its place')
    assertError(await create(member, { name: 'one too many' }), { code: 'API_KEY_LIMIT_REACHED', instance: KEYS, detail: LIMIT_REACHED })
  })

  it('keeps to 25 active keys when creations race: 24 keys and 6 concurrent creations give one 201 and five 409s', async () => {
    const member = await ctx.api.member()
    for (let i = 0; i < 24; i++) await newKey(member, `key ${i}`)
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => create(member, { name: `racer ${i}` })))
    assert.deepEqual(answers.map(res => res.statusCode).sort(), [201, 409, 409, 409, 409, 409], answers.map(res => res.body).join('\n'))
    const active = await ctx.api.app.db.selectFrom('api_keys').select(eb => eb.fn.countAll().as('n'))
      .where('member_id', '=', member.id).where('revoked_at', 'is', null).executeTakeFirstOrThrow()
    assert.equal(Number(active.n), 25)
  })

  it('refuses anonymous calls to all three routes with 401', async () => {
    const requests = [
      { method: 'POST' as const, url: KEYS, payload: { name: 'anonymous' } },
      { method: 'GET' as const, url: KEYS },
      { method: 'PATCH' as const, url: `${KEYS}/1/revoke` },
    ]
    for (const request of requests) {
      const res = await ctx.api.inject(request)
      assertError(res, { code: 'UNAUTHORIZED', instance: request.url, detail: ANONYMOUS })
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
    }
    const count = await ctx.api.app.db.selectFrom('api_keys').select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 0)
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a missing name', {}, [{ field: 'name', message: 'is required' }]],
    ['an empty name', { name: '' }, [{ field: 'name', message: 'must not be empty' }]],
    ['a 101-character name', { name: 'n'.repeat(101) }, [{ field: 'name', message: 'must be at most 100 characters' }]],
    ['a name that is not a string', { name: 42 }, [{ field: 'name', message: 'must be a string' }]],
    ['an unknown field', { name: 'ok', secret: 'chosen' }, [{ field: 'secret', message: 'is not a recognised field' }]],
  ]
  for (const [what, payload, invalidParams] of invalid) {
    it(`refuses ${what} with 400 and creates nothing`, async () => {
      const member = await ctx.api.member()
      assertError(await create(member, payload), {
        code: 'VALIDATION_FAILED', instance: KEYS, detail: 'The request body has invalid parameters.', invalidParams,
      })
      assert.deepEqual((await list(member)).json().data, [])
    })
  }

  it('accepts a name of exactly 100 characters', async () => {
    const key = await newKey(await ctx.api.member(), 'n'.repeat(100))
    assert.equal(key.name, 'n'.repeat(100))
  })
})
