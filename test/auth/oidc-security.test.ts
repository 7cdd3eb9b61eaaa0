import assert from 'node:assert/strict'
import { after, afterEach, before, beforeEach, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { bindingCookieName } from '../../src/auth/oidc-service.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { undocumentedAnswer } from '../../src/ops/openapi.js'
import { ADMIN, assertError, BACKENDS, createTestDatabase, freePort, resetDatabase, testConfig } from '../helper.js'
import { MailSink, tokenIn } from '../mail-sink.js'
import { Browser, startTestProvider, type TestProvider } from './oidc-provider.js'

// The attacks of the second security review on OpenID sign-in (CONTRACT §18, §18.1), each performed
// over HTTP against a real provider (oidc-provider) that asserts what the attack needs.

const CLIENT_CB = 'http://client.test/cb'
const sink = new MailSink()
const smtpUrl = await sink.start()
after(() => sink.stop())

/** An answer of the fetch-based browser as the error helpers read it. */
function asResponse (answer: { status: number, body: string, headers: Headers }): LightMyRequestResponse {
  return {
    statusCode: answer.status,
    body: answer.body,
    headers: Object.fromEntries(answer.headers),
    json: () => JSON.parse(answer.body),
  } as unknown as LightMyRequestResponse
}

for (const backend of BACKENDS) {
  describe(`OpenID sign-in under attack [${backend}]`, () => {
    let database: DatabaseHandle
    let app: FastifyInstance
    let op: TestProvider
    let base: string
    const undocumented: string[] = []

    before(async () => {
      const appPort = await freePort()
      base = `http://127.0.0.1:${appPort}`
      op = await startTestProvider({ clients: [{ clientId: 'order-service', clientSecret: 'a-client-secret', redirectUris: [`${base}/login/oauth2/code/test`] }] })
      database = await createTestDatabase(backend)
      app = await buildApp(testConfig({
        PUBLIC_URL: base,
        OIDC_TEST_ISSUER: op.issuer,
        OIDC_TEST_CLIENT_ID: 'order-service',
        OIDC_TEST_CLIENT_SECRET: 'a-client-secret',
        OIDC_REDIRECT_ALLOWLIST: `${CLIENT_CB},http://client.test/auth/callback`,
        SMTP_URL: smtpUrl,
      }), { database, logger: false, oidc: { jwksCooldownMs: 0 } })
      app.addHook('onSend', async (request, reply, payload) => {
        const missing = undocumentedAnswer(request, reply.statusCode, payload)
        if (missing) undocumented.push(missing)
        return payload
      })
      await app.listen({ port: appPort, host: '127.0.0.1' })
    })
    beforeEach(async () => {
      await resetDatabase(app)
      op.misbehave = undefined
    })
    afterEach(() => assert.deepEqual(undocumented.splice(0), [], 'answers that the OpenAPI document does not list'))
    after(async () => {
      await app?.close()
      await op?.stop()
      await database?.close()
    })

    const account = (sub: string, claims: Record<string, unknown>) => {
      op.accounts.set(sub, { email: `${sub}@example.com`, email_verified: true, name: `Person ${sub}`, ...claims })
      return sub
    }
    const signIn = (sub: string, start = `${base}/oauth2/authorization/test`) =>
      new Browser({ login: sub, stopAt: url => url.href.startsWith('http://client.test/') }).go(start)
    const tokensOf = (answer: { status: number, body: string }) => {
      assert.equal(answer.status, 200, answer.body)
      return JSON.parse(answer.body).data as { accessToken: string }
    }
    const bearer = (accessToken: string) => ({ authorization: `Bearer ${accessToken}` })
    const me = async (accessToken: string) => {
      const res = await app.inject({ url: '/api/v1/members/me', headers: bearer(accessToken) })
      assert.equal(res.statusCode, 200, res.body)
      return res.json().data as { memberId: number, email: string, name: string, emailVerified: boolean, identityProviders: string[] }
    }
    const register = async (email: string, password = 'correct horse') => {
      const res = await app.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password, name: 'Victim' } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().data as { memberId: number }
    }
    const passwordLogin = (email: string, password = 'correct horse') =>
      app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
    const members = async () => (await app.db.selectFrom('members').select(['email', 'name']).where('email', '<>', ADMIN.email).orderBy('id').execute())
    const links = async () => (await app.db.selectFrom('member_identities').select(['subject', 'member_id']).orderBy('subject').execute())
    /** Before §18 an unverified claim made a member with a link; such rows stay until their owner's next recovery. */
    const legacyAttackerMember = async (email: string, subject: string) => {
      const member = await app.db.insertInto('members').values({ email, password_hash: null, name: 'Squatter', role: 'USER', email_verified: false })
        .returning('id').executeTakeFirstOrThrow()
      await app.db.insertInto('member_identities').values({ issuer: op.issuer, subject, registration_id: 'test', member_id: member.id }).execute()
      return member.id
    }
    const resetPasswordOf = async (email: string, newPassword: string) => {
      assert.equal((await app.inject({ method: 'POST', url: '/api/v1/members/password/reset', payload: { email } })).statusCode, 201)
      const token = tokenIn(await sink.next(email, /Reset your password/))
      const res = await app.inject({ method: 'POST', url: '/api/v1/members/password/reset', payload: { token, newPassword } })
      assert.equal(res.statusCode, 201, res.body)
    }
    const CALLBACK = '/login/oauth2/code/test'

    describe('an unverified email claim', () => {
      it('makes no account: 401 EMAIL_NOT_VERIFIED, and the address owner can still register', async () => {
        const attacker = account('attacker', { email: 'victim@example.com', email_verified: false })
        const answer = asResponse(await signIn(attacker))
        assertError(answer, {
          code: 'EMAIL_NOT_VERIFIED',
          instance: CALLBACK,
          detail: 'The provider does not vouch for this email address (email_verified is not true), so no account is made or linked with it.',
        })
        assert.equal(answer.headers['cache-control'], 'no-store')
        assert.equal(answer.headers['www-authenticate'], undefined)
        assert.deepEqual(await members(), [])
        assert.deepEqual(await links(), [])
        await register('victim@example.com')
      })

      it('is refused before any matching by email: an existing member’s address (401, not 409) and the admin’s', async () => {
        await register('victim@example.com')
        for (const email of ['victim@example.com', ADMIN.email]) {
          const attacker = account(`attacker-${email.length}`, { email, email_verified: false })
          assertError(asResponse(await signIn(attacker)), { code: 'EMAIL_NOT_VERIFIED', instance: CALLBACK, detail: /email_verified is not true/ })
        }
        assert.deepEqual(await links(), [])
        assert.equal((await passwordLogin('victim@example.com')).statusCode, 201)
      })

      it('does not matter once an account is linked: a sign-in through the link works whatever the token says', async () => {
        const sub = account('linked', {})
        const first = await me(tokensOf(await signIn(sub)).accessToken)
        op.accounts.set(sub, { email: 'linked@example.com', email_verified: false })
        assert.equal((await me(tokensOf(await signIn(sub)).accessToken)).memberId, first.memberId)
      })
    })

    describe('account recovery takes back every way in', () => {
      it('a completed password reset removes the squatter’s link: signing in through it no longer reaches the account', async () => {
        const victimId = await legacyAttackerMember('victim@example.com', 'attacker')
        account('attacker', { email: 'victim@example.com', email_verified: false })
        // The victim cannot register (the address is taken), so recovers the account by mail.
        await resetPasswordOf('victim@example.com', 'battery staple')
        assert.deepEqual(await links(), [])
        assertError(asResponse(await signIn('attacker')), { code: 'EMAIL_NOT_VERIFIED', instance: CALLBACK, detail: /email_verified is not true/ })
        const victim = (await passwordLogin('victim@example.com', 'battery staple')).json().data.accessToken as string
        const { createdAt, ...recovered } = await me(victim) as Awaited<ReturnType<typeof me>> & { createdAt: string }
        assert.match(createdAt, /^\d{4}-/)
        assert.deepEqual(recovered, {
          memberId: victimId, email: 'victim@example.com', name: 'Squatter', role: 'USER', status: 'ACTIVE', emailVerified: true, identityProviders: [],
        })
      })

      it('a take-back by sign-in removes every other link, so the squatter can neither sign in nor set a password or mint keys', async () => {
        const victimId = await legacyAttackerMember('victim@example.com', 'attacker')
        account('attacker', { email: 'victim@example.com', email_verified: false })
        const owner = account('owner', { email: 'victim@example.com', email_verified: true })
        const victim = tokensOf(await signIn(owner)).accessToken
        const taken = await me(victim)
        assert.deepEqual([taken.memberId, taken.emailVerified, taken.identityProviders], [victimId, true, ['test']])
        assert.deepEqual((await links()).map(link => link.subject), ['owner'])
        assertError(asResponse(await signIn('attacker')), { code: 'EMAIL_NOT_VERIFIED', instance: CALLBACK, detail: /email_verified is not true/ })
        // The owner's own link still works.
        assert.equal((await me(tokensOf(await signIn(owner)).accessToken)).memberId, victimId)
      })
    })

    describe('identityProviders and unlinking', () => {
      const UNLINK = (provider: string) => `/api/v1/members/me/identities/${provider}/unlink`

      it('lists one entry per link: two accounts at one provider show twice, subjects never', async () => {
        const first = account('first', { email: 'two@example.com', name: 'Two' })
        const second = account('second', { email: 'two@example.com', name: 'Two' })
        tokensOf(await signIn(first))
        const token = tokensOf(await signIn(second)).accessToken
        const res = await app.inject({ url: '/api/v1/members/me', headers: bearer(token) })
        assert.deepEqual(res.json().data.identityProviders, ['test', 'test'])
        assert.doesNotMatch(res.body, /first|second/)
      })

      it('PATCH …/unlink removes the caller’s links to the provider and answers the account', async () => {
        await register('unlink@example.com')
        await app.db.updateTable('members').set({ email_verified: true }).where('email', '=', 'unlink@example.com').execute()
        const token = tokensOf(await signIn(account('u1', { email: 'unlink@example.com' }))).accessToken
        tokensOf(await signIn(account('u2', { email: 'unlink@example.com' })))
        const res = await app.inject({ method: 'PATCH', url: UNLINK('test'), headers: bearer(token) })
        assert.equal(res.statusCode, 200, res.body)
        const body = res.json()
        assert.deepEqual(body, { success: true, error: null, data: { ...(await me(token)), identityProviders: [] } })
        assert.equal(body.data.email, 'unlink@example.com')
        assert.deepEqual(await links(), [])
      })

      it('answers 404 IDENTITY_NOT_FOUND for a provider with no link, and 400 LAST_SIGN_IN_METHOD for the last way in; nothing changes', async () => {
        const token = tokensOf(await signIn(account('only', {}))).accessToken
        const before = await links()
        assertError(await app.inject({ method: 'PATCH', url: UNLINK('google'), headers: bearer(token) }), {
          code: 'IDENTITY_NOT_FOUND', instance: UNLINK('google'), detail: 'No account at the OpenID provider "google" is linked to yours.',
        })
        assertError(await app.inject({ method: 'PATCH', url: UNLINK('test'), headers: bearer(token) }), {
          code: 'LAST_SIGN_IN_METHOD', instance: UNLINK('test'), detail: 'This is your last way to sign in: set a password (or link another provider) before unlinking it.',
        })
        assert.deepEqual(await links(), before)
        // With a password set, the link can go.
        const set = await app.inject({ method: 'PATCH', url: '/api/v1/members/password/change', headers: bearer(token), payload: { newPassword: 'battery staple' } })
        assert.equal(set.statusCode, 200, set.body)
        assert.equal((await app.inject({ method: 'PATCH', url: UNLINK('test'), headers: bearer(token) })).statusCode, 200)
        assert.deepEqual(await links(), [])
      })

      it('needs a bearer session (API key: 403; none: 401) and a well-formed provider id (400)', async () => {
        await register('keyed@example.com')
        const session = (await passwordLogin('keyed@example.com')).json().data.accessToken as string
        const key = await app.inject({ method: 'POST', url: '/api/v1/members/me/api-keys', headers: bearer(session), payload: { name: 'k' } })
        assertError(await app.inject({ method: 'PATCH', url: UNLINK('test'), headers: { 'x-api-key': key.json().data.secret } }), {
          code: 'ACCESS_DENIED', instance: UNLINK('test'), detail: /session/,
        })
        assertError(await app.inject({ method: 'PATCH', url: UNLINK('test') }), { code: 'UNAUTHORIZED', instance: UNLINK('test'), detail: /./ })
        assertError(await app.inject({ method: 'PATCH', url: UNLINK('Not_An_Id'), headers: bearer(session) }), {
          code: 'VALIDATION_FAILED', instance: UNLINK('Not_An_Id'), detail: /./, invalidParams: [{ field: 'provider', message: 'has an invalid format' }],
        })
      })
    })

    describe('admins', () => {
      it('are never linked automatically: a provider vouching for ADMIN_EMAIL gets 403, and the admin’s password still works', async () => {
        const attacker = account('evil-admin', { email: ADMIN.email, email_verified: true })
        const answer = asResponse(await signIn(attacker))
        assertError(answer, {
          code: 'ACCESS_DENIED', instance: CALLBACK, detail: 'Admins sign in with their password: an admin account is never linked to an OpenID provider automatically.',
        })
        assert.deepEqual(await links(), [])
        assert.equal((await passwordLogin(ADMIN.email, ADMIN.password)).statusCode, 201)
        const redirected = await signIn(attacker, `${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB)}`)
        assert.equal(redirected.url.href, `${CLIENT_CB}?error=ACCESS_DENIED`)
      })

      it('the first admin made from ADMIN_EMAIL starts with emailVerified: true', async () => {
        const token = (await passwordLogin(ADMIN.email, ADMIN.password)).json().data.accessToken as string
        assert.equal((await me(token)).emailVerified, true)
      })
    })

    describe('the sign-in is bound to the browser that started it', () => {
      it('sets a short-lived HttpOnly, SameSite=Lax cookie for the flow at the start', async () => {
        const res = await fetch(`${base}/oauth2/authorization/test`, { redirect: 'manual' })
        assert.equal(res.status, 302)
        const state = new URL(res.headers.get('location')!).searchParams.get('state')!
        const [cookie, ...more] = res.headers.getSetCookie()
        assert.deepEqual(more, [])
        assert.match(cookie!, /^oidc_flow_[0-9a-f]{16}=[\w-]{43}; Path=\/login\/oauth2\/; Max-Age=600; HttpOnly; SameSite=Lax$/)
        assert.doesNotMatch(cookie!, new RegExp(state))
      })

      it('refuses the callback in another browser (login CSRF): 400 INVALID_TOKEN, the flow used up, nothing linked', async () => {
        const attacker = account('csrf', {})
        let callback: URL | undefined
        // The attacker signs in with their own account but stops before the callback…
        await new Browser({ login: attacker, stopAt: url => { callback ??= url.pathname === CALLBACK ? url : undefined; return callback !== undefined } })
          .go(`${base}/oauth2/authorization/test`)
        // …and has the victim's browser open it.
        const victim = asResponse(await new Browser().go(callback!.href))
        assertError(victim, { code: 'INVALID_TOKEN', instance: CALLBACK, detail: 'This sign-in was not started in this browser; start the sign-in again.' })
        assert.deepEqual(await members(), [])
        assert.deepEqual(await app.db.selectFrom('oidc_flows').selectAll().execute(), [])
      })

      it('a wrong cookie is refused too, and with a redirect_uri the refusal goes there as error=INVALID_TOKEN; the cookie is cleared', async () => {
        const attacker = account('csrf2', {})
        let callback: URL | undefined
        await new Browser({ login: attacker, stopAt: url => { callback ??= url.pathname === CALLBACK ? url : undefined; return callback !== undefined } })
          .go(`${base}/oauth2/authorization/test?redirect_uri=${encodeURIComponent(CLIENT_CB)}`)
        const name = bindingCookieName(callback!.searchParams.get('state')!)
        const res = await fetch(callback!, { redirect: 'manual', headers: { cookie: `${name}=forged; oidc_flow_0000000000000000=x` } })
        assert.equal(res.status, 302)
        assert.equal(res.headers.get('location'), `${CLIENT_CB}?error=INVALID_TOKEN`)
        assert.match(res.headers.getSetCookie()[0]!, /^oidc_flow_[0-9a-f]{16}=; Path=\/login\/oauth2\/; Max-Age=0; HttpOnly; SameSite=Lax$/)
        assert.deepEqual(await members(), [])
      })

      it('marks the cookie Secure behind an https PUBLIC_URL', async () => {
        const secure = await buildApp(testConfig({
          PUBLIC_URL: 'https://shop.example.com',
          OIDC_TEST_ISSUER: op.issuer,
          OIDC_TEST_CLIENT_ID: 'order-service',
          OIDC_TEST_CLIENT_SECRET: 'a-client-secret',
        }), { database, logger: false })
        try {
          const res = await secure.inject({ url: '/oauth2/authorization/test' })
          assert.equal(res.statusCode, 302, res.body)
          assert.match(String(res.headers['set-cookie']), /; HttpOnly; SameSite=Lax; Secure$/)
        } finally {
          await secure.close()
        }
      })
    })

    describe('claims obey the input rules', () => {
      it('cleans a name of control, bidirectional and format characters and cuts it to 100 characters', async () => {
        const sub = account('names', { name: 'Eve\nAdmin\u202Egnp.exe\u2028\u200B\u0000' })
        assert.equal((await me(tokensOf(await signIn(sub)).accessToken)).name, 'EveAdmingnp.exe')
        const long = account('long', { name: 'x'.repeat(150) })
        assert.equal((await me(tokensOf(await signIn(long)).accessToken)).name, 'x'.repeat(100))
        const empty = account('empty', { name: '\u202E\u200B ', email: 'fallback@example.com' })
        assert.equal((await me(tokensOf(await signIn(empty)).accessToken)).name, 'fallback')
      })

      it('refuses an email or sub with a control character, and an email that registration would refuse: 401 INVALID_CLAIMS', async () => {
        const cases: Array<Record<string, unknown>> = [
          { email: 'mallory@example.com\r\nBcc: all@example.com' },
          { email: 'mal\u0000lory@example.com' },
          { email: 'victim\u200B@example.com' },
          { email: 'not an email' },
        ]
        for (const claims of cases) {
          const sub = account(`bad-${cases.indexOf(claims)}`, claims)
          const answer = asResponse(await signIn(sub))
          assertError(answer, { code: 'INVALID_CLAIMS', instance: CALLBACK, detail: /^The ID token’s (sub or email holds a control character|email is not a valid email address)\.$/ })
        }
        op.misbehave = { claims: { sub: 'evil\u0000sub' } }
        assertError(asResponse(await signIn(account('nul-sub', {}))), { code: 'INVALID_CLAIMS', instance: CALLBACK, detail: 'The ID token’s sub or email holds a control character.' })
        assert.deepEqual(await members(), [])
      })

      it('trims the email, so a trailing space does not make a look-alike second member', async () => {
        const { memberId } = await register('victim@example.com')
        await app.db.updateTable('members').set({ email_verified: true }).where('id', '=', memberId).execute()
        const sub = account('spaced', { email: 'victim@example.com ' })
        assert.equal((await me(tokensOf(await signIn(sub)).accessToken)).memberId, memberId)
        assert.deepEqual((await members()).map(member => member.email), ['victim@example.com'])
      })
    })

    describe('the start route', () => {
      it('refuses a redirect_uri with encoded traversal under an allowed prefix (400 naming redirect_uri); no flow is stored', async () => {
        const targets = [
          'http://client.test/auth/callback/..%2fevil', 'http://client.test/cb/..;/evil', 'http://client.test/cb/%2e%2e/evil',
          'http://client.test/cb/%2E%2E%2Fevil', 'http://client.test/cb/..%5Cevil', 'http://client.test/cb/%252e%252e%252fevil',
          'http://client.test/cb/a;b',
        ]
        for (const target of targets) {
          const path = `/oauth2/authorization/test?redirect_uri=${encodeURIComponent(target)}`
          assertError(await app.inject({ url: path }), {
            code: 'VALIDATION_FAILED',
            instance: '/oauth2/authorization/test',
            detail: 'The request has invalid parameters.',
            invalidParams: [{ field: 'redirect_uri', message: 'must not contain an encoded "/", "\\" or ".", a ".." segment, a "\\" or a ";" in its path' }],
          })
        }
        // A raw backslash is not a URI at all.
        assertError(await app.inject({ url: `/oauth2/authorization/test?redirect_uri=${encodeURIComponent('http://client.test/cb\\..\\evil')}` }), {
          code: 'VALIDATION_FAILED', instance: '/oauth2/authorization/test', detail: 'The query has invalid parameters.', invalidParams: [{ field: 'redirect_uri', message: 'must be a valid uri' }],
        })
        assert.deepEqual(await app.db.selectFrom('oidc_flows').selectAll().execute(), [])
        assert.equal((await app.inject({ url: `/oauth2/authorization/test?redirect_uri=${encodeURIComponent('http://client.test/cb/x?next=a;b')}` })).statusCode, 302)
      })

      it('counts against AUTH_RATE_LIMIT: one start too many is 429 and stores no flow', async () => {
        const limited = await buildApp(testConfig({
          PUBLIC_URL: base,
          OIDC_TEST_ISSUER: op.issuer,
          OIDC_TEST_CLIENT_ID: 'order-service',
          OIDC_TEST_CLIENT_SECRET: 'a-client-secret',
          AUTH_RATE_LIMIT: '2',
        }), { database, logger: false })
        const flows = async () => (await app.db.selectFrom('oidc_flows').selectAll().execute()).length
        const before = await flows()
        try {
          for (const remaining of ['1', '0']) {
            const res = await limited.inject({ url: '/oauth2/authorization/test' })
            assert.equal(res.statusCode, 302, res.body)
            assert.equal(res.headers['ratelimit-remaining'], remaining)
          }
          const refused = await limited.inject({ url: '/oauth2/authorization/test' })
          assertError(refused, { code: 'TOO_MANY_REQUESTS', instance: '/oauth2/authorization/test', detail: 'Too many requests from this address; retry after the time in Retry-After.' })
          assert.equal(refused.headers['set-cookie'], undefined)
          assert.equal(await flows(), before + 2)
        } finally {
          await limited.close()
        }
      })
    })
  })
}
