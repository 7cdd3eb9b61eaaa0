import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import { purgeExpiredSessions } from '../../src/auth/service.js'
import { purgeExpiredMemberTokens } from '../../src/members/repository.js'
import { assertError, describeEachBackend, waitFor, type Member } from '../helper.js'

const INVALID_REFRESH = 'The refresh token is invalid, expired or revoked.'
const REVOKED = 'The access token has been revoked.'

describeEachBackend('sessions: refresh and logout', (ctx) => {
  const refresh = (refreshToken: string) =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } })
  const me = (member: Pick<Member, 'headers'>) => ctx.api.inject({ url: '/api/v1/members/me', headers: member.headers })
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
  const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())

  it('rotates: a refresh gives a new pair in the same session, and the old refresh token is spent', async () => {
    const member = await ctx.api.member()
    const res = await refresh(member.refreshToken)
    assert.equal(res.statusCode, 201, res.body)
    const pair = res.json().data
    assert.deepEqual(Object.keys(pair).sort(), ['accessToken', 'expiresIn', 'refreshExpiresIn', 'refreshToken', 'tokenType'])
    assert.notEqual(pair.refreshToken, member.refreshToken)
    assert.equal(claims(pair.accessToken).sid, claims(member.token).sid)
    assert.equal((await me(bearer(pair.accessToken))).statusCode, 200)
    assert.equal((await refresh(pair.refreshToken)).statusCode, 201)
  })

  it('detects reuse: presenting a spent refresh token revokes the whole session', async () => {
    const member = await ctx.api.member()
    const rotated = (await refresh(member.refreshToken)).json().data
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    // The thief's and the owner's tokens of that session are all dead now.
    assertError(await refresh(rotated.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    assertError(await me(bearer(rotated.accessToken)), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assertError(await me(member), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    const session = await ctx.api.app.db.selectFrom('sessions').select('revoke_reason').executeTakeFirstOrThrow()
    assert.equal(session.revoke_reason, 'refresh token reused')
  })

  it('refuses unknown and expired refresh tokens with 401', async () => {
    assertError(await refresh('x'.repeat(43)), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    const member = await ctx.api.member()
    await ctx.api.app.db.updateTable('refresh_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` }).execute()
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
  })

  it('refuses a malformed refresh body with 400', async () => {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { token: 'x' } })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/auth/refresh',
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'refreshToken', message: 'is required' }, { field: 'token', message: 'is not a recognised field' }],
    })
  })

  it('stores refresh tokens only as hashes', async () => {
    const member = await ctx.api.member()
    const rows = await ctx.api.app.db.selectFrom('refresh_tokens').select('token_hash').execute()
    assert.equal(rows.length, 1)
    assert.match(rows[0]!.token_hash, /^[0-9a-f]{64}$/)
    assert.notEqual(rows[0]!.token_hash, member.refreshToken)
  })

  it('logout ends the session at once: its access token and refresh token are rejected, other sessions live on', async () => {
    const member = await ctx.api.member()
    const otherSession = await ctx.api.login(member.email, 'correct horse')
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: member.headers })
    assert.equal(res.statusCode, 201, res.body)
    assert.deepEqual(res.json(), { success: true, data: null, error: null })
    const after = await me(member)
    assertError(after, { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assert.equal(after.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"')
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    assert.equal((await me(otherSession)).statusCode, 200)
  })

  it('logout needs a credential', async () => {
    assertError(await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/logout' }), {
      code: 'UNAUTHORIZED', instance: '/api/v1/auth/logout', detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
  })

  it('purges expired refresh tokens, sessions left without any, and expired mailed tokens; nothing live', async () => {
    const db = ctx.api.app.db
    const old = await ctx.api.member('old')
    const live = await ctx.api.member('live')
    await refresh(live.refreshToken) // a spent but unexpired token stays: reuse detection needs it
    const sessionOf = (member: Member) => claims(member.token).sid as string
    await db.updateTable('refresh_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('session_id', '=', sessionOf(old)).execute()
    const registered = await db.selectFrom('member_tokens').select('member_id').execute()
    assert.equal(registered.length, 2, 'each registration issued a verification token')
    await db.updateTable('member_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('member_id', '=', old.id).execute()

    assert.equal(await purgeExpiredSessions(db), 1)
    assert.equal(await purgeExpiredMemberTokens(db), 1)

    const sessions = await db.selectFrom('sessions').select('id').execute()
    assert.deepEqual(sessions.map(row => row.id), [sessionOf(live)])
    assert.equal((await db.selectFrom('refresh_tokens').select('token_hash').execute()).length, 2)
    assert.deepEqual((await db.selectFrom('member_tokens').select('member_id').execute()).map(row => row.member_id), [live.id])
    assert.equal((await me(live)).statusCode, 200)
    assert.equal(await purgeExpiredSessions(db), 0)
  })

  it('stops a suspended member: existing tokens are 401, refresh is 401, login is 403', async () => {
    const member = await ctx.api.member()
    assert.equal((await me(member)).statusCode, 200)
    await ctx.api.app.db.updateTable('members').set({ status: 'SUSPENDED', updated_at: sql<Date>`now()` }).where('id', '=', member.id).execute()
    // This instance learns of a suspension made directly in the database within one poll (50 ms here).
    await waitFor(async () => (await me(member)).statusCode === 401)
    assertError(await me(member), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    assertError(await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: member.email, password: 'correct horse' } }), {
      code: 'ACCOUNT_SUSPENDED', instance: '/api/v1/auth/login', detail: 'This account is suspended.',
    })
    // Reinstated, the same token works again (it has not expired).
    await ctx.api.app.db.updateTable('members').set({ status: 'ACTIVE', updated_at: sql<Date>`now()` }).where('id', '=', member.id).execute()
    await waitFor(async () => (await me(member)).statusCode === 200)
  })
}, { build: { revocationPollMs: 50 } })

describeEachBackend('sessions: a login racing a change that ends sessions', (ctx) => {
  // A login checks the password against the member row it read before hashing, which takes tens of
  // milliseconds. Each change below commits at a different moment of that hashing. Whatever the
  // moment, the login must either see the change or open a session that the change then revokes.
  const MOMENTS_MS = [0, 2, 4, 8, 12, 16, 24, 32, 48]
  const login = (email: string, password = 'correct horse') =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
  const asToken = (token: string, url: string) => ctx.api.inject({ url, headers: { authorization: `Bearer ${token}` } })
  const adminPatch = (admin: Member, id: number, payload: object) =>
    ctx.api.inject({ method: 'PATCH', url: `/api/v1/admin/members/${id}`, headers: admin.headers, payload })
  const refresh = (refreshToken: string) => ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } })
  const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

  it('a suspension: the login is refused, or its session is revoked and stays so after reinstatement', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member('racer')
    for (const moment of MOMENTS_MS) {
      const pending = login(member.email)
      await sleep(moment)
      assert.equal((await adminPatch(admin, member.id, { status: 'SUSPENDED' })).statusCode, 200)
      const res = await pending
      assert.equal((await adminPatch(admin, member.id, { status: 'ACTIVE' })).statusCode, 200)
      if (res.statusCode === 403) {
        assertError(res, { code: 'ACCOUNT_SUSPENDED', instance: '/api/v1/auth/login', detail: 'This account is suspended.' })
        continue
      }
      assert.equal(res.statusCode, 201, res.body)
      const pair = res.json().data
      assert.equal((await refresh(pair.refreshToken)).statusCode, 401, `a login started ${moment} ms before the suspension kept its session`)
      assert.equal((await asToken(pair.accessToken, '/api/v1/members/me')).statusCode, 401)
    }
  })

  it('a demotion: the login gets a USER token, or an ADMIN one whose session is revoked', async () => {
    const admin = await ctx.api.admin()
    const other = await ctx.api.member('second-admin')
    for (const moment of MOMENTS_MS) {
      assert.equal((await adminPatch(admin, other.id, { role: 'ADMIN' })).statusCode, 200)
      const pending = login(other.email)
      await sleep(moment)
      assert.equal((await adminPatch(admin, other.id, { role: 'USER' })).statusCode, 200)
      const res = await pending
      assert.equal(res.statusCode, 201, res.body)
      const admins = await asToken(res.json().data.accessToken, '/api/v1/admin/members')
      assert.ok([401, 403].includes(admins.statusCode), `a login started ${moment} ms before the demotion still passes admin routes`)
    }
  })

  it('a password change: no session opened with the old password outlives it', async () => {
    let password = 'correct horse'
    const member = await ctx.api.member('victim')
    for (const moment of MOMENTS_MS) {
      const next = `${password}!`
      const change = ctx.api.inject({
        method: 'PATCH',
        url: '/api/v1/members/password/change',
        headers: member.headers,
        payload: { currentPassword: password, newPassword: next },
      })
      await sleep(moment)
      const [changed, res] = await Promise.all([change, login(member.email, password)])
      assert.equal(changed.statusCode, 200, changed.body)
      password = next
      if (res.statusCode === 401) continue // it saw the new password
      assert.equal(res.statusCode, 201, res.body)
      assert.equal((await asToken(res.json().data.accessToken, '/api/v1/members/me')).statusCode, 401,
        `a login with the old password ${moment} ms into the change kept its session`)
    }
  })
})
