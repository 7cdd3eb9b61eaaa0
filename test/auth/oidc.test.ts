import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { ADMIN, BACKENDS, createTestDatabase, freePort, resetDatabase, testConfig } from '../helper.js'
import { Browser, startTestProvider, type TestProvider } from './oidc-provider.js'

const CLIENT_CB = 'http://client.test/cb'
const TOKEN_PAIR_KEYS = ['accessToken', 'expiresIn', 'refreshExpiresIn', 'refreshToken', 'tokenType']

for (const backend of BACKENDS) {
  describe(`sign-in with an OpenID provider [${backend}]`, () => {
    let database: DatabaseHandle
    let app: FastifyInstance
    let other: FastifyInstance
    let op: TestProvider
    let late: TestProvider
    let base: string
    let otherBase: string

    before(async () => {
      const [appPort, otherPort, latePort] = [await freePort(), await freePort(), await freePort()]
      base = `http://127.0.0.1:${appPort}`
      otherBase = `http://127.0.0.1:${otherPort}`
      const clients = [
        { clientId: 'order-service', clientSecret: 'a-client-secret', redirectUris: [`${base}/login/oauth2/code/test`, `${base}/login/oauth2/code/late`] },
      ]
      op = await startTestProvider({ clients })
      // 'late' is down when the service starts.
      late = await startTestProvider({ clients, port: latePort, listen: false })
      const env = {
        PUBLIC_URL: base,
        OIDC_TEST_ISSUER: op.issuer,
        OIDC_TEST_CLIENT_ID: 'order-service',
        OIDC_TEST_CLIENT_SECRET: 'a-client-secret',
        OIDC_LATE_ISSUER: late.issuer,
        OIDC_LATE_CLIENT_ID: 'order-service',
        OIDC_LATE_CLIENT_SECRET: 'a-client-secret',
        OIDC_REDIRECT_ALLOWLIST: CLIENT_CB,
      }
      database = await createTestDatabase(backend)
      app = await buildApp(testConfig(env), { database, logger: false, oidc: { jwksCooldownMs: 0 } })
      await app.listen({ port: appPort, host: '127.0.0.1' })
      other = await buildApp(testConfig(env), { database, logger: false, oidc: { jwksCooldownMs: 0 } })
      await other.listen({ port: otherPort, host: '127.0.0.1' })
    })
    beforeEach(async () => {
      await resetDatabase(app)
      op.misbehave = undefined
    })
    after(async () => {
      await app?.close()
      await other?.close()
      await op?.stop()
      await late?.stop()
      await database?.close()
    })

    const person = (sub: string, claims: Record<string, unknown> = {}) => {
      op.accounts.set(sub, { email: `${sub}@example.com`, email_verified: true, name: `Person ${sub}`, ...claims })
      late.accounts.set(sub, op.accounts.get(sub)!)
      return sub
    }
    const toClient = (url: URL) => url.href.startsWith('http://client.test/')
    const signIn = (sub: string, start = `${base}/oauth2/authorization/test`, options: ConstructorParameters<typeof Browser>[0] = {}) =>
      new Browser({ login: sub, stopAt: toClient, ...options }).go(start)
    const me = async (accessToken: string) => {
      const res = await app.inject({ url: '/api/v1/members/me', headers: { authorization: `Bearer ${accessToken}` } })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().data as { memberId: number, email: string, name: string, emailVerified: boolean, identityProviders: string[] }
    }
    const tokensOf = (answer: { status: number, body: string, headers: Headers }) => {
      assert.equal(answer.status, 200, answer.body)
      assert.equal(answer.headers.get('cache-control'), 'no-store')
      const body = JSON.parse(answer.body)
      assert.equal(body.success, true)
      assert.deepEqual(Object.keys(body.data).sort(), TOKEN_PAIR_KEYS)
      return body.data as { accessToken: string, refreshToken: string }
    }
    const errorOf = (answer: { status: number, body: string, headers: Headers }, status: number, code: string) => {
      assert.equal(answer.status, status, answer.body)
      assert.equal(answer.headers.get('cache-control'), 'no-store')
      assert.equal(answer.headers.get('www-authenticate'), null)
      const body = JSON.parse(answer.body)
      assert.equal(body.success, false)
      assert.equal(body.error.code, code)
      return body.error
    }
    const register = async (email: string) => {
      const res = await app.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name: 'Registered' } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().data as { memberId: number }
    }
    const passwordLogin = (email: string, password = 'correct horse') =>
      app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })

    describe('GET /oauth2/authorization/{id}', () => {
      it('redirects to the provider with the authorization code flow, PKCE S256, state, nonce and the scopes', async () => {
        const res = await fetch(`${base}/oauth2/authorization/test?unknown=ignored`, { redirect: 'manual' })
        assert.equal(res.status, 302)
        assert.equal(res.headers.get('cache-control'), 'no-store')
        const to = new URL(res.headers.get('location')!)
        assert.equal(to.origin, op.issuer)
        const q = to.searchParams
        assert.deepEqual(
          { response_type: q.get('response_type'), client_id: q.get('client_id'), scope: q.get('scope'), method: q.get('code_challenge_method'), redirect: q.get('redirect_uri') },
          { response_type: 'code', client_id: 'order-service', scope: 'openid email profile', method: 'S256', redirect: `${base}/login/oauth2/code/test` })
        for (const name of ['state', 'nonce', 'code_challenge']) assert.match(q.get(name) ?? '', /^[\w-]{20,}$/, name)
      })

      it('answers 404 for an unknown registration', async () => {
        const res = await fetch(`${base}/oauth2/authorization/nope`, { redirect: 'manual' })
        assert.equal(res.status, 404)
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'RESOURCE_NOT_FOUND')
      })

      it('refuses a redirect_uri outside the allowlist with 400 naming redirect_uri (segments, not characters)', async () => {
        for (const target of ['http://client.test/cb-evil', 'https://client.test/cb', 'http://client.test:81/cb', 'http://evil.test/cb', 'http://client.test/']) {
          const res = await fetch(`${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(target)}`, { redirect: 'manual' })
          assert.equal(res.status, 400, target)
          const body = await res.json() as { error: { code: string, invalidParams: Array<{ field: string }> } }
          assert.equal(body.error.code, 'VALIDATION_FAILED')
          assert.equal(body.error.invalidParams[0]?.field, 'redirect_uri')
        }
        const ok = await fetch(`${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent('http://client.test/cb/deeper?x=1')}`, { redirect: 'manual' })
        assert.equal(ok.status, 302)
      })
    })

    describe('the whole sign-in', () => {
      it('without redirect_uri: creates the member and answers the login answer (200); later sign-ins find it', async () => {
        const sub = person('ada', { email: 'Ada@Example.com', name: 'Ada Lovelace' })
        const tokens = tokensOf(await signIn(sub))
        const account = await me(tokens.accessToken)
        assert.deepEqual({ ...account, memberId: 0, createdAt: undefined }, {
          memberId: 0, email: 'Ada@Example.com', name: 'Ada Lovelace', role: 'USER', status: 'ACTIVE', emailVerified: true, createdAt: undefined, identityProviders: ['test'],
        })
        // A second sign-in of the same subject: the same member; email and name unchanged.
        op.accounts.set(sub, { email: 'changed@example.com', email_verified: true, name: 'Someone Else' })
        const again = await me(tokensOf(await signIn(sub)).accessToken)
        assert.deepEqual([again.memberId, again.email, again.name], [account.memberId, 'Ada@Example.com', 'Ada Lovelace'])
        // No password: password login fails like a wrong one, until the member sets a first one.
        assert.equal((await passwordLogin('ada@example.com', 'anything at all')).statusCode, 401)
        const set = await app.inject({ method: 'PATCH', url: '/api/v1/members/password/change', headers: { authorization: `Bearer ${tokens.accessToken}` }, payload: { newPassword: 'a brand new secret' } })
        assert.equal(set.statusCode, 200, set.body)
        assert.equal((await passwordLogin('ada@example.com', 'a brand new secret')).statusCode, 201)
        // Once there is one, currentPassword is needed again.
        const again2 = await app.inject({ method: 'PATCH', url: '/api/v1/members/password/change', headers: { authorization: `Bearer ${tokens.accessToken}` }, payload: { newPassword: 'another new secret' } })
        assert.equal(again2.statusCode, 400)
        assert.equal(again2.json().error.invalidParams[0].field, 'currentPassword')
      })

      it('names a new member from the email when the token has no name', async () => {
        const sub = person('grace', { name: undefined })
        const account = await me(tokensOf(await signIn(sub)).accessToken)
        assert.deepEqual([account.name, account.emailVerified], ['grace', true])
      })

      it('with redirect_uri: 302 to it with login_code and the client state, traded once at POST /auth/login', async () => {
        const sub = person('linus')
        const answer = await signIn(sub, `${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB + '?keep=1')}&state=client%20state`)
        assert.equal(answer.status, 302)
        assert.equal(answer.headers.get('cache-control'), 'no-store')
        assert.equal(`${answer.url.origin}${answer.url.pathname}`, CLIENT_CB)
        assert.deepEqual([...answer.url.searchParams.keys()].sort(), ['keep', 'login_code', 'state'])
        assert.equal(answer.url.searchParams.get('state'), 'client state')
        const loginCode = answer.url.searchParams.get('login_code')!
        const both = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { loginCode, email: 'linus@example.com' } })
        assert.equal(both.statusCode, 400)
        assert.equal(both.json().error.invalidParams[0].field, 'loginCode')
        const traded = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { loginCode } })
        assert.equal(traded.statusCode, 201, traded.body)
        assert.equal((await me(traded.json().data.accessToken)).email, 'linus@example.com')
        const twice = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { loginCode } })
        assert.equal(twice.statusCode, 401)
        assert.equal(twice.json().error.code, 'UNAUTHORIZED')
        const forged = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { loginCode: 'made-up' } })
        assert.equal(forged.statusCode, 401)
      })

      it('starts on one instance and finishes on another sharing the database', async () => {
        const sub = person('two')
        // The provider sends the browser to the public URL; the balancer routes the callback to the other instance.
        const answer = await signIn(sub, `${base}/oauth2/authorization/test`, {
          rewrite: url => url.pathname.startsWith('/login/oauth2/code/') && url.origin === base ? new URL(url.pathname + url.search, otherBase) : url,
        })
        assert.equal(answer.url.origin, otherBase)
        assert.equal((await me(tokensOf(answer).accessToken)).email, 'two@example.com')
      })
    })

    describe('the state', () => {
      it('works once: the callback replayed is 400 INVALID_TOKEN', async () => {
        const sub = person('replay')
        let callback: URL | undefined
        tokensOf(await signIn(sub, undefined, { beforeCallback: async (url) => { callback = new URL(url) } }))
        errorOf(await new Browser().go(callback!.href), 400, 'INVALID_TOKEN')
      })

      it('refuses a forged or missing state with 400 INVALID_TOKEN, and an unknown registration with 404', async () => {
        errorOf(await new Browser().go(`${base}/login/oauth2/code/test?code=x&state=forged`), 400, 'INVALID_TOKEN')
        errorOf(await new Browser().go(`${base}/login/oauth2/code/test?code=x`), 400, 'INVALID_TOKEN')
        errorOf(await new Browser().go(`${base}/login/oauth2/code/nope?code=x&state=y`), 404, 'RESOURCE_NOT_FOUND')
      })

      it('refuses an expired state with 400 INVALID_TOKEN', async () => {
        const sub = person('slow')
        const answer = await signIn(sub, undefined, {
          beforeCallback: async () => { await app.db.updateTable('oidc_flows').set({ expires_at: new Date(Date.now() - 1000) }).execute() },
        })
        errorOf(answer, 400, 'INVALID_TOKEN')
      })
    })

    describe('refusals', () => {
      it('answers 401 without WWW-Authenticate when the user denies at the provider (error=access_denied), and uses the state up', async () => {
        let callback: URL | undefined
        const answer = await new Browser({ deny: true, beforeCallback: async (url) => { callback = new URL(url) } }).go(`${base}/oauth2/authorization/test`)
        assert.equal(callback!.searchParams.get('error'), 'access_denied')
        errorOf(answer, 401, 'UNAUTHORIZED')
        errorOf(await new Browser().go(callback!.href), 400, 'INVALID_TOKEN')
      })

      it('sends a failure to the redirect_uri as error=<CODE> once the state is known', async () => {
        const answer = await new Browser({ deny: true, stopAt: toClient }).go(`${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB)}&state=s`)
        assert.equal(answer.status, 302)
        assert.equal(answer.url.href, `${CLIENT_CB}?error=UNAUTHORIZED`)
      })

      it('refuses an ID token with a wrong nonce, audience or issuer, an expired one, or a foreign signature (401)', async () => {
        const sub = person('mallory')
        const past = Math.floor(Date.now() / 1000) - 3600
        const cases = [
          { claims: { nonce: 'not-the-one' } }, { claims: { aud: 'another-client' } }, { claims: { iss: 'http://127.0.0.1:1' } },
          { claims: { exp: past, iat: past - 60 } }, { foreignKey: true },
        ]
        for (const misbehave of cases) {
          op.misbehave = misbehave
          errorOf(await signIn(sub), 401, 'UNAUTHORIZED')
          assert.equal(await app.db.selectFrom('member_identities').select('subject').executeTakeFirst(), undefined, JSON.stringify(misbehave))
        }
        op.misbehave = undefined
        tokensOf(await signIn(sub))
      })

      it('refuses an ID token without email (401)', async () => {
        const sub = person('noemail', { email: undefined })
        errorOf(await signIn(sub), 401, 'UNAUTHORIZED')
      })

      it('answers 403 ACCOUNT_SUSPENDED for a suspended member (302 error= with a redirect_uri)', async () => {
        const sub = person('susp')
        const { accessToken } = tokensOf(await signIn(sub))
        const { memberId } = await me(accessToken)
        await app.db.updateTable('members').set({ status: 'SUSPENDED' }).where('id', '=', memberId).execute()
        errorOf(await signIn(sub), 403, 'ACCOUNT_SUSPENDED')
        const redirected = await signIn(sub, `${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB)}`)
        assert.equal(redirected.url.href, `${CLIENT_CB}?error=ACCOUNT_SUSPENDED`)
      })
    })

    describe('linking to an existing member', () => {
      it('links a verified member when the token says email_verified: true; the password still works', async () => {
        const { memberId } = await register('kim@example.com')
        await app.db.updateTable('members').set({ email_verified: true }).where('id', '=', memberId).execute()
        const sub = person('kim-sub', { email: 'KIM@example.com' })
        const account = await me(tokensOf(await signIn(sub)).accessToken)
        assert.deepEqual([account.memberId, account.identityProviders, account.name], [memberId, ['test'], 'Registered'])
        assert.equal((await passwordLogin('kim@example.com')).statusCode, 201)
      })

      it('takes an unverified member back: password removed, sessions and API keys revoked, emailVerified true', async () => {
        const { memberId } = await register('pat@example.com')
        const squatter = (await passwordLogin('pat@example.com')).json().data.accessToken as string
        const key = await app.inject({ method: 'POST', url: '/api/v1/members/me/api-keys', headers: { authorization: `Bearer ${squatter}` }, payload: { name: 'k' } })
        assert.equal(key.statusCode, 201, key.body)
        const sub = person('pat-sub', { email: 'pat@example.com' })
        const account = await me(tokensOf(await signIn(sub)).accessToken)
        assert.deepEqual([account.memberId, account.emailVerified], [memberId, true])
        assert.equal((await passwordLogin('pat@example.com')).statusCode, 401)
        assert.equal((await app.inject({ url: '/api/v1/members/me', headers: { authorization: `Bearer ${squatter}` } })).statusCode, 401)
        assert.equal((await app.inject({ url: '/api/v1/members/me', headers: { 'x-api-key': key.json().data.secret } })).statusCode, 401)
      })

      it('does not link when the token says email_verified: false (401 EMAIL_NOT_VERIFIED)', async () => {
        await register('sam@example.com')
        const sub = person('sam-sub', { email: 'sam@example.com', email_verified: false })
        errorOf(await signIn(sub), 401, 'EMAIL_NOT_VERIFIED')
        assert.equal((await passwordLogin('sam@example.com')).statusCode, 201)
      })
    })

    describe('the provider', () => {
      it('picks up a new signing key (unknown kid → the key set fetched again)', async () => {
        const sub = person('rot')
        tokensOf(await signIn(sub))
        await op.rotateKeys()
        tokensOf(await signIn(sub))
      })

      it('unreachable at start-up: 503 with Retry-After meanwhile, DOWN in admin health without making the instance unready; the first use after it is back works', async () => {
        const login = await fetch(`${base}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
        const admin = { authorization: `Bearer ${((await login.json()) as { data: { accessToken: string } }).data.accessToken}` }
        const health = async () => {
          const answer = await fetch(`${base}/actuator/health`, { headers: admin })
          return { code: answer.status, body: (await answer.json()) as { status: string, components: { oidc: { status: string, components: Record<string, { status: string }> } } } }
        }
        const res = await fetch(`${base}/oauth2/authorization/late`, { redirect: 'manual' })
        assert.equal(res.status, 503)
        assert.ok(Number(res.headers.get('retry-after')) > 0)
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'SERVICE_UNAVAILABLE')
        const down = await health()
        assert.equal(down.code, 200)
        assert.equal(down.body.status, 'UP')
        assert.equal(down.body.components.oidc.status, 'DOWN')
        assert.equal(down.body.components.oidc.components.late!.status, 'DOWN')
        assert.equal((await fetch(`${base}/actuator/health/readiness`)).status, 200)
        await late.start()
        try {
          const sub = person('late-sub')
          tokensOf(await signIn(sub, `${base}/oauth2/authorization/late`))
          assert.equal((await health()).body.components.oidc.components.late!.status, 'UP')
        } finally {
          await late.stop()
        }
      })

      it('down during the exchange: 503, or 302 error=SERVICE_UNAVAILABLE with a redirect_uri', async () => {
        const sub = person('down')
        try {
          const answer = await signIn(sub, `${base}/oauth2/authorization/test`, { beforeCallback: async () => { await op.stop() } })
          errorOf(answer, 503, 'SERVICE_UNAVAILABLE')
          assert.ok(Number(answer.headers.get('retry-after')) > 0)
          await op.start()
          const redirected = await signIn(sub, `${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB)}`, { beforeCallback: async () => { await op.stop() } })
          assert.equal(redirected.url.href, `${CLIENT_CB}?error=SERVICE_UNAVAILABLE`)
        } finally {
          await op.start()
        }
        tokensOf(await signIn(sub))
      })
    })
  })
}
