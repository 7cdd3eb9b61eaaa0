import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { BACKENDS, createTestDatabase, describeEachBackend, testConfig } from '../helper.js'
import { MailSink, tokenIn } from '../mail-sink.js'

describeEachBackend('security headers', (ctx) => {
  const kinds: Array<[string, InjectOptions, number]> = [
    ['a success', { url: '/api/v1/health' }, 200],
    ['an error', { url: '/api/v1/orders' }, 401],
    ['an unknown route', { url: '/api/v1/no-such-thing' }, 404],
    ['a wrong method', { method: 'DELETE', url: '/api/v1/orders' }, 405],
  ]
  for (const [kind, request, status] of kinds) {
    it(`sends them on ${kind} (${status}), and no X-Powered-By`, async () => {
      const res = await ctx.api.inject(request)
      assert.equal(res.statusCode, status, res.body)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.match(String(res.headers['x-frame-options']), /^(DENY|SAMEORIGIN)$/)
      assert.match(String(res.headers['strict-transport-security']), /^max-age=\d+/)
      assert.equal(res.headers['referrer-policy'], 'no-referrer')
      assert.match(String(res.headers['content-security-policy']), /default-src/)
      assert.equal(res.headers['x-powered-by'], undefined)
    })
  }
})

for (const backend of BACKENDS) {
  describe(`no credential in the logs [${backend}]`, () => {
    const lines: string[] = []
    const stream = new Writable({
      write (chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    })
    const sink = new MailSink()
    let database: DatabaseHandle
    let app: FastifyInstance
    before(async () => {
      const smtpUrl = await sink.start()
      database = await createTestDatabase(backend)
      app = await buildApp(testConfig({ SMTP_URL: smtpUrl }), { database, logger: { level: 'trace', stream } })
    })
    after(async () => {
      await app?.close()
      await database?.close()
      await sink.stop()
    })

    it('keeps passwords, tokens, API key secrets and stored hashes out of the log at trace level', async () => {
      const secrets: string[] = []
      const keep = <T extends string>(value: T): T => {
        assert.equal(typeof value, 'string')
        secrets.push(value)
        return value
      }
      const inject = async (options: InjectOptions, status: number) => {
        const res = await app.inject(options)
        assert.equal(res.statusCode, status, res.body)
        return res.json().data
      }
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
      const email = `logged-${randomBytes(4).toString('hex')}@example.com`
      const password = keep(`first-${randomBytes(8).toString('hex')}`)
      const newPassword = keep(`second-${randomBytes(8).toString('hex')}`)
      const wrongPassword = keep(`wrong-${randomBytes(8).toString('hex')}`)

      await inject({ method: 'POST', url: '/api/v1/members', payload: { email, password, name: 'Logged' } }, 201)
      const verification = keep(tokenIn(await sink.next(email, /Verify your email address/)))
      await inject({ method: 'POST', url: '/api/v1/members/email/verify', payload: { token: verification } }, 201)
      const first = await inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } }, 201)
      keep(first.accessToken)
      keep(first.refreshToken)
      const pair = await inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken: first.refreshToken } }, 201)
      keep(pair.accessToken)
      keep(pair.refreshToken)
      await inject({ url: '/api/v1/members/me', headers: bearer(pair.accessToken) }, 200)
      const key = await inject({ method: 'POST', url: '/api/v1/members/me/api-keys', headers: bearer(pair.accessToken), payload: { name: 'logged' } }, 201)
      keep(key.secret)
      await inject({ url: '/api/v1/members/me', headers: { 'x-api-key': key.secret } }, 200)
      await inject({ method: 'PATCH', url: '/api/v1/members/password/change', headers: bearer(pair.accessToken), payload: { currentPassword: password, newPassword } }, 200)
      await inject({ method: 'POST', url: '/api/v1/auth/logout', headers: bearer(pair.accessToken) }, 201)
      await inject({ url: '/api/v1/members/me', headers: bearer(pair.accessToken) }, 401)
      await inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: wrongPassword } }, 401)
      await inject({ method: 'POST', url: '/api/v1/members/password/reset', payload: { email } }, 201)
      keep(tokenIn(await sink.next(email, /Reset your password/)))

      // A JWT's signature alone is as good as a leak of the token.
      for (const token of [first.accessToken, pair.accessToken]) keep(token.split('.')[2])
      const db = app.db
      const stored = [
        ...(await db.selectFrom('members').select('password_hash as hash').execute()),
        ...(await db.selectFrom('refresh_tokens').select('token_hash as hash').execute()),
        ...(await db.selectFrom('member_tokens').select('token_hash as hash').execute()),
        ...(await db.selectFrom('api_keys').select('secret_hash as hash').execute()),
      ]
      assert.ok(stored.length >= 6, `only ${stored.length} stored hashes`)
      for (const row of stored) if (row.hash !== null) keep(row.hash)

      const log = lines.join('')
      // The log did record every request: the test would see a credential if one were logged.
      assert.ok(log.split('"msg":"incoming request"').length > 12, log)
      for (const secret of secrets) assert.ok(!log.includes(secret), `the log contains a credential: ${secret.slice(0, 12)}…`)
    })
  })
}
