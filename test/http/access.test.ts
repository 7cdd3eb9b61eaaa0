import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import { SignJWT, UnsecuredJWT } from 'jose'
import { registerAccessRules } from '../../src/http/access.js'
import { assertError, describeEachBackend } from '../helper.js'

describe('access rules', () => {
  it('refuse to register a route that declares no rule, or an unknown one', async () => {
    const app = Fastify()
    registerAccessRules(app, async () => null)
    assert.throws(() => app.get('/api/v1/forgotten', async () => 'x'), /Route GET \/api\/v1\/forgotten declares no access rule/)
    assert.throws(() => app.get('/api/v1/typo', { config: { access: 'members' as 'member' } }, async () => 'x'), /Route GET \/api\/v1\/typo declares no access rule/)
    app.get('/api/v1/fine', { config: { access: 'public' } }, async () => 'x')
    await app.close()
  })
})

// The seed spec's §Authentication, as this service serves it so far.
const PUBLIC = new Set([
  'get /api/v1/health',
  'post /api/v1/members',
  'post /api/v1/auth/login',
  'post /api/v1/auth/refresh',
  'post /api/v1/members/password/reset',
  'post /api/v1/members/email/verify',
  'get /api/v1/products',
  'get /api/v1/products/search',
  'get /api/v1/products/{id}',
  'get /api/v1/products/categories',
  'get /api/v1/products/categories/{categoryId}',
  'get /oauth2/authorization/{id}',
  'get /login/oauth2/code/{id}',
  // The operational and docs endpoints (CONTRACT §11: documented, tagged operations).
  'get /actuator/health',
  'get /actuator/health/liveness',
  'get /actuator/health/readiness',
  'get /actuator/info',
  'get /actuator/prometheus',
  'get /actuator/metrics',
  'get /actuator/metrics/{name}',
  'get /v3/api-docs',
  'get /docs',
  'get /docs/index.html',
  'get /swagger-ui.html',
])

// Admin-only operations outside /api/v1/admin/**.
const ADMIN_ELSEWHERE = new Set([
  'post /api/v1/products/categories',
  'patch /api/v1/payments/{id}/refund',
])

const SECRET = 'a-test-signing-secret-of-at-least-32-bytes'
const key = new TextEncoder().encode(SECRET)

describeEachBackend('authentication and roles', (ctx) => {
  it('asks for a credential on every route that is not public, and lets only admins through /admin', async () => {
    const doc = (await ctx.api.inject({ url: '/v3/api-docs' })).json()
    const member = await ctx.api.member()
    let checked = 0
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) {
        const url = path.replace(/\{[^}]+\}/g, '1')
        const request = { method: method.toUpperCase() as 'GET', url, ...(method === 'get' ? {} : { payload: {} }) }
        const anonymous = await ctx.api.inject(request)
        assert.notEqual(anonymous.statusCode, 500, `${method} ${path}`)
        if (PUBLIC.has(`${method} ${path}`)) {
          assert.notEqual(anonymous.statusCode, 401, `${method} ${path} is public`)
          continue
        }
        checked++
        assertError(anonymous, { code: 'UNAUTHORIZED', instance: url, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.' })
        assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="order-service"')
        if (path.startsWith('/api/v1/admin/') || ADMIN_ELSEWHERE.has(`${method} ${path}`)) {
          const asMember = await ctx.api.inject({ ...request, headers: member.headers })
          assertError(asMember, { code: 'ACCESS_DENIED', instance: url, detail: 'This operation requires the ADMIN role.' })
        }
      }
    }
    assert.ok(checked >= 35, `checked ${checked} protected operations`)
  })

  const invalidHeaders: Array<[string, string, string]> = [
    ['another scheme', 'Basic YWRhOnB3', 'The Authorization header must be "Bearer <access token>".'],
    ['a bare Bearer', 'Bearer', 'The Authorization header must be "Bearer <access token>".'],
    ['a garbage token', 'Bearer not-a-jwt', 'The access token is invalid.'],
  ]
  for (const [what, header, detail] of invalidHeaders) {
    it(`answers ${what} with 401 invalid_token`, async () => {
      const res = await ctx.api.inject({ url: '/api/v1/orders', headers: { authorization: header } })
      assertError(res, { code: 'UNAUTHORIZED', instance: '/api/v1/orders', detail })
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"')
    })
  }

  it('rejects tokens that are expired, unsigned, signed with another key or algorithm, or from another issuer', async () => {
    const member = await ctx.api.member()
    const claims = { role: 'ADMIN', sid: 'session' }
    const sign = (jwt: SignJWT, signingKey: Uint8Array = key, alg = 'HS256') => jwt.setProtectedHeader({ alg }).setSubject(String(member.id)).sign(signingKey)
    const now = Math.floor(Date.now() / 1000)
    const tokens: Array<[string, string, string]> = [
      ['expired', await sign(new SignJWT(claims).setIssuer('order-service').setIssuedAt(now - 3600).setExpirationTime(now - 60)), 'The access token has expired.'],
      ['alg none', new UnsecuredJWT(claims).setSubject(String(member.id)).setIssuer('order-service').setExpirationTime('5m').encode(), 'The access token is invalid.'],
      ['another key', await sign(new SignJWT(claims).setIssuer('order-service').setExpirationTime('5m'), new TextEncoder().encode('x'.repeat(40))), 'The access token is invalid.'],
      ['HS512', await sign(new SignJWT(claims).setIssuer('order-service').setExpirationTime('5m'), key, 'HS512'), 'The access token is invalid.'],
      ['another issuer', await sign(new SignJWT(claims).setIssuer('someone-else').setExpirationTime('5m')), 'The access token is invalid.'],
      ['no subject', await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer('order-service').setExpirationTime('5m').sign(key), 'The access token is invalid.'],
      ['no expiry', await sign(new SignJWT(claims).setIssuer('order-service')), 'The access token is invalid.'],
      ['not valid yet', await sign(new SignJWT(claims).setIssuer('order-service').setNotBefore(now + 600).setExpirationTime('15m')), 'The access token is invalid.'],
      ['a critical header', await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', crit: ['b64'], b64: true }).setSubject(String(member.id)).setIssuer('order-service').setExpirationTime('5m').sign(key), 'The access token is invalid.'],
    ]
    // Tampering with a good token: another payload under its signature, a cut signature, stray characters.
    const [header, payload, signature] = (await sign(new SignJWT(claims).setIssuer('order-service').setExpirationTime('5m'))).split('.') as [string, string, string]
    const otherPayload = Buffer.from(JSON.stringify({ ...claims, sub: '1', iss: 'order-service', exp: now + 300 })).toString('base64url')
    tokens.push(
      ['a payload swapped under the signature', `${header}.${otherPayload}.${signature}`, 'The access token is invalid.'],
      ['a cut signature', `${header}.${payload}.${signature.slice(0, 20)}`, 'The access token is invalid.'],
      ['characters outside base64url', `${header}.${payload}.${signature}=`, 'The access token is invalid.'],
      ['four parts', `${header}.${payload}.${signature}.${signature}`, 'The access token is invalid.']
    )
    for (const [what, token, detail] of tokens) {
      const res = await ctx.api.inject({ url: '/api/v1/admin/products/1', headers: { authorization: `Bearer ${token}` } })
      assertError(res, { code: 'UNAUTHORIZED', instance: '/api/v1/admin/products/1', detail })
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"', what)
    }
    // The same claims, properly signed, pass: the rejections above are about the token, not the claims.
    const good = await sign(new SignJWT(claims).setIssuer('order-service').setExpirationTime('5m'))
    const res = await ctx.api.inject({ url: '/api/v1/admin/products/1', headers: { authorization: `Bearer ${good}` } })
    assert.equal(res.statusCode, 404)
  })

  it('refuses a token it has accepted once the token expires, and the same claims under another signature', async (t) => {
    const member = await ctx.api.member()
    // The clock is the test's (only Date is mocked): the token is still valid however slow the
    // requests below are on a busy machine, and expires when the test moves the clock on.
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
    const expiresAt = Math.floor(Date.now() / 1000) + 3
    const token = await new SignJWT({ role: 'USER', sid: 'session' }).setProtectedHeader({ alg: 'HS256' })
      .setSubject(String(member.id)).setIssuer('order-service').setExpirationTime(expiresAt).sign(key)
    const headers = { authorization: `Bearer ${token}` }
    assert.equal((await ctx.api.inject({ url: '/api/v1/orders', headers })).statusCode, 200)
    assert.equal((await ctx.api.inject({ url: '/api/v1/orders', headers })).statusCode, 200)
    // Accepted tokens are remembered by their whole text: the same header and payload signed with another key are not.
    const forged = await new SignJWT({ role: 'USER', sid: 'session' }).setProtectedHeader({ alg: 'HS256' })
      .setSubject(String(member.id)).setIssuer('order-service').setExpirationTime(expiresAt).sign(new TextEncoder().encode('y'.repeat(40)))
    assert.equal(forged.split('.').slice(0, 2).join('.'), token.split('.').slice(0, 2).join('.'))
    assertError(await ctx.api.inject({ url: '/api/v1/orders', headers: { authorization: `Bearer ${forged}` } }),
      { code: 'UNAUTHORIZED', instance: '/api/v1/orders', detail: 'The access token is invalid.' })
    t.mock.timers.tick(expiresAt * 1000 - Date.now() + 50)
    const expired = await ctx.api.inject({ url: '/api/v1/orders', headers })
    assertError(expired, { code: 'UNAUTHORIZED', instance: '/api/v1/orders', detail: 'The access token has expired.' })
    assert.equal(expired.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"')
  })

  it('ignores an invalid credential on a public path', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const res = await ctx.api.inject({ url: `/api/v1/products/${product.productId}`, headers: { authorization: 'Bearer garbage' } })
    assert.equal(res.statusCode, 200)
  })
}, { env: { JWT_SECRET: SECRET } })
