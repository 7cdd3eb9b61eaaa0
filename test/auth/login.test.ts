import assert from 'node:assert/strict'
import { it } from 'node:test'
import { buildApp } from '../../src/app.js'
import { ADMIN, assertError, createTestDatabase, describeEachBackend, errorBody, testConfig } from '../helper.js'

describeEachBackend('POST /api/v1/auth/login', (ctx) => {
  const login = (email: string, password: string) =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })

  it('issues a 15-minute HS256 access token and a 14-day refresh token: 201, sub, role, sid, iss', async () => {
    const member = await ctx.api.member('ada')
    const res = await login(member.email, 'correct horse')
    assert.equal(res.statusCode, 201, res.body)
    const { accessToken, refreshToken, ...rest } = res.json().data
    assert.deepEqual(rest, { tokenType: 'Bearer', expiresIn: 900, refreshExpiresIn: 14 * 24 * 3600 })
    assert.match(refreshToken, /^[A-Za-z0-9_-]{43}$/)
    const [header, payload] = accessToken.split('.').slice(0, 2).map((part: string) => JSON.parse(Buffer.from(part, 'base64url').toString()))
    assert.equal(header.alg, 'HS256')
    assert.equal(payload.sub, String(member.id))
    assert.equal(payload.role, 'USER')
    assert.equal(payload.iss, 'order-service')
    assert.equal(typeof payload.sid, 'string')
    assert.equal(payload.exp - payload.iat, 900)
  })

  it('matches the email whatever its case', async () => {
    const member = await ctx.api.member('case')
    assert.equal((await login(member.email.toUpperCase(), 'correct horse')).statusCode, 201)
  })

  it('answers a wrong password and an unknown email with the same 401', async () => {
    const member = await ctx.api.member()
    const wrong = await login(member.email, 'wrong password')
    const unknown = await login('nobody@example.com', 'wrong password')
    for (const res of [wrong, unknown]) {
      assertError(res, { code: 'UNAUTHORIZED', instance: '/api/v1/auth/login', detail: 'The email or password is incorrect.' })
    }
    assert.deepEqual(errorBody(wrong), errorBody(unknown))
    assert.equal(wrong.headers['www-authenticate'], unknown.headers['www-authenticate'])
  })

  it('refuses a suspended member with the right password with 403 ACCOUNT_SUSPENDED', async () => {
    const member = await ctx.api.member()
    await ctx.api.app.db.updateTable('members').set({ status: 'SUSPENDED' }).where('id', '=', member.id).execute()
    assertError(await login(member.email, 'correct horse'), {
      code: 'ACCOUNT_SUSPENDED', instance: '/api/v1/auth/login', detail: 'This account is suspended.',
    })
  })

  it('refuses a malformed body with 400', async () => {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@example.com' } })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/auth/login',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'password', message: 'is required' }],
    })
  })

  it('has the ADMIN_EMAIL admin from start-up, with the ADMIN role', async () => {
    const res = await login(ADMIN.email, ADMIN.password)
    assert.equal(res.statusCode, 201)
    const payload = JSON.parse(Buffer.from(res.json().data.accessToken.split('.')[1], 'base64url').toString())
    assert.equal(payload.role, 'ADMIN')
  })
})

describeEachBackend('access tokens across restarts', (ctx) => {
  it('are accepted by a new instance on the same database (the signing key lives in the database)', async () => {
    const member = await ctx.api.member()
    const database = await createTestDatabase(ctx.backend)
    try {
      const first = await buildApp(testConfig(), { database, logger: false })
      const register = await first.inject({ method: 'POST', url: '/api/v1/members', payload: { email: member.email, password: 'correct horse', name: 'R' } })
      assert.equal(register.statusCode, 201)
      const token = (await first.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: member.email, password: 'correct horse' } })).json().data.accessToken
      await first.close()
      const second = await buildApp(testConfig(), { database, logger: false })
      const res = await second.inject({ url: '/api/v1/orders', headers: { authorization: `Bearer ${token}` } })
      assert.equal(res.statusCode, 200, res.body)
      // A token from another database's key is not accepted here.
      const foreign = await second.inject({ url: '/api/v1/orders', headers: member.headers })
      assert.equal(foreign.statusCode, 401)
      await second.close()
    } finally {
      await database.close()
    }
  })
})
