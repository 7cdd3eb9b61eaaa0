import assert from 'node:assert/strict'
import { after, it } from 'node:test'
import { sql } from 'kysely'
import { randomBytes } from 'node:crypto'
import { assertError, describeEachBackend, type Api, type Member } from '../helper.js'
import { MailSink, tokenIn } from '../mail-sink.js'

const sink = new MailSink()
const smtpUrl = await sink.start()
after(() => sink.stop())

const INVALID_BODY = 'The request body has invalid parameters.'
const INVALID_REQUEST = 'The request has invalid parameters.'
const INVALID_TOKEN = 'The token is invalid, has expired or was already used.'
const INVALID_REFRESH = 'The refresh token is invalid, expired or revoked.'
const REVOKED = 'The access token has been revoked.'
const OK_NULL = { success: true, data: null, error: null }
const RESET = '/api/v1/members/password/reset'
const VERIFY = '/api/v1/members/email/verify'
const CHANGE = '/api/v1/members/password/change'
const KEYS = '/api/v1/members/me/api-keys'
const INVALID_KEY = 'The API key is invalid or revoked.'
const TOO_COMMON = 'is too common: it is in a list of passwords that attackers try first; choose a longer or less predictable one'
const IS_EMAIL = 'must not be your email address or the part of it before the @'

/** Shortcuts shared by the suites below; each goes through real HTTP. */
function calls (ctx: { readonly api: Api }) {
  return {
    login: (email: string, password: string) =>
      ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } }),
    refresh: (refreshToken: string) => ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } }),
    me: (member: Pick<Member, 'headers'>) => ctx.api.inject({ url: '/api/v1/members/me', headers: member.headers }),
    meWithKey: (secret: string) => ctx.api.inject({ url: '/api/v1/members/me', headers: { 'x-api-key': secret } }),
    /** Creates an API key for `member` and returns its secret and id. */
    async apiKey (member: Pick<Member, 'headers'>, name = 'sync'): Promise<{ keyId: number, secret: string }> {
      const res = await ctx.api.inject({ method: 'POST', url: KEYS, headers: member.headers, payload: { name } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().data
    },
    reset: (payload: object) => ctx.api.inject({ method: 'POST', url: RESET, payload }),
    verify: (payload: object) => ctx.api.inject({ method: 'POST', url: VERIFY, payload }),
    /** Asks for a reset mail for `email` and returns the token it carries. */
    async resetToken (email: string): Promise<string> {
      const res = await ctx.api.inject({ method: 'POST', url: RESET, payload: { email } })
      assert.equal(res.statusCode, 201, res.body)
      return tokenIn(await sink.next(email, /Reset your password/))
    },
  }
}

/** Asserts that every session in `sessions` is over: its access token and its refresh token get 401. */
async function assertEnded (api: ReturnType<typeof calls>, sessions: Member[]): Promise<void> {
  for (const session of sessions) {
    assertError(await api.me(session), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assertError(await api.refresh(session.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
  }
}

describeEachBackend('PATCH /api/v1/members/password/change', (ctx) => {
  const api = calls(ctx)
  const change = (member: Pick<Member, 'headers'>, payload: object) =>
    ctx.api.inject({ method: 'PATCH', url: CHANGE, headers: member.headers, payload })

  it('changes the password: 200 data null, the old password then fails login and the new one works', async () => {
    const member = await ctx.api.member()
    const res = await change(member, { currentPassword: 'correct horse', newPassword: 'battery staple' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), OK_NULL)
    assertError(await api.login(member.email, 'correct horse'), {
      code: 'UNAUTHORIZED', instance: '/api/v1/auth/login', detail: 'The email or password is incorrect.',
    })
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
  })

  it('ends the member’s other sessions while the session that made the change lives on', async () => {
    const member = await ctx.api.member()
    const others = [await ctx.api.login(member.email, 'correct horse'), await ctx.api.login(member.email, 'correct horse')]
    const bystander = await ctx.api.member('bystander')
    assert.equal((await change(member, { currentPassword: 'correct horse', newPassword: 'battery staple' })).statusCode, 200)
    await assertEnded(api, others)
    assert.equal((await api.me(member)).statusCode, 200)
    assert.equal((await api.refresh(member.refreshToken)).statusCode, 201)
    assert.equal((await api.me(bystander)).statusCode, 200)
  })

  it('refuses a wrong currentPassword with 400 naming currentPassword and changes nothing', async () => {
    const member = await ctx.api.member()
    const other = await ctx.api.login(member.email, 'correct horse')
    assertError(await change(member, { currentPassword: 'not my password', newPassword: 'battery staple' }), {
      code: 'VALIDATION_FAILED',
      instance: CHANGE,
      detail: INVALID_REQUEST,
      invalidParams: [{ field: 'currentPassword', message: 'is not the current password' }],
    })
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 401)
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
    assert.equal((await api.me(other)).statusCode, 200)
  })

  it('counts wrong currentPassword guesses as failed logins: past LOGIN_FAILURE_LIMIT (5) both are 429', async () => {
    const member = await ctx.api.member()
    for (let i = 0; i < 5; i++) {
      const res = await change(member, { currentPassword: `guess ${i}`, newPassword: 'battery staple' })
      assert.equal(res.statusCode, 400, res.body)
    }
    const locked = 'Too many failed logins for this email; retry after the time in Retry-After.'
    const res = await change(member, { currentPassword: 'correct horse', newPassword: 'battery staple' })
    assertError(res, { code: 'TOO_MANY_REQUESTS', instance: CHANGE, detail: locked })
    assert.match(String(res.headers['retry-after']), /^\d+$/)
    assertError(await api.login(member.email, 'correct horse'), { code: 'TOO_MANY_REQUESTS', instance: '/api/v1/auth/login', detail: locked })
    assert.equal((await api.me(member)).statusCode, 200, 'the session itself is not ended')
  })

  it('leaves the member’s API keys working: a password change is not account recovery', async () => {
    const member = await ctx.api.member()
    const key = await api.apiKey(member)
    assert.equal((await change(member, { currentPassword: 'correct horse', newPassword: 'battery staple' })).statusCode, 200)
    assert.equal((await api.meWithKey(key.secret)).statusCode, 200)
  })

  it('spends every outstanding reset token of the member: a reset mailed before the change is then 400 INVALID_TOKEN', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    assert.equal((await change(member, { currentPassword: 'correct horse', newPassword: 'battery staple' })).statusCode, 200)
    assertError(await api.reset({ token, newPassword: 'another horse' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
    assert.equal((await api.me(member)).statusCode, 200, 'the failed reset ended nothing')
  })

  it('refuses a common newPassword, in any case, with 400 naming newPassword and saying why, and keeps the password', async () => {
    const member = await ctx.api.member()
    for (const newPassword of ['password123', 'Sunshine1', '  qwertyuiop ']) {
      assertError(await change(member, { currentPassword: 'correct horse', newPassword }), {
        code: 'VALIDATION_FAILED', instance: CHANGE, detail: INVALID_REQUEST, invalidParams: [{ field: 'newPassword', message: TOO_COMMON }],
      })
    }
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
  })

  it('refuses a newPassword that is the email or its local part (ignoring case and surrounding spaces) with 400 naming newPassword', async () => {
    const member = await ctx.api.member('ada.lovelace')
    const local = member.email.slice(0, member.email.indexOf('@'))
    for (const newPassword of [member.email, ` ${member.email.toUpperCase()} `, local, `${local.toUpperCase()}  `]) {
      assertError(await change(member, { currentPassword: 'correct horse', newPassword }), {
        code: 'VALIDATION_FAILED', instance: CHANGE, detail: INVALID_REQUEST, invalidParams: [{ field: 'newPassword', message: IS_EMAIL }],
      })
    }
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
    assert.equal((await change(member, { currentPassword: 'correct horse', newPassword: `${local} and more` })).statusCode, 200, 'containing it is fine')
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a 7-character newPassword', { currentPassword: 'correct horse', newPassword: '1234567' }, [{ field: 'newPassword', message: 'must be at least 8 characters' }]],
    ['a 129-character newPassword', { currentPassword: 'correct horse', newPassword: 'p'.repeat(129) }, [{ field: 'newPassword', message: 'must be at most 128 characters' }]],
    ['a missing currentPassword', { newPassword: 'battery staple' }, [{ field: 'currentPassword', message: 'is required' }]],
    ['an unknown field', { currentPassword: 'correct horse', newPassword: 'battery staple', password: 'x' }, [{ field: 'password', message: 'is not a recognised field' }]],
  ]
  for (const [what, payload, invalidParams] of invalid) {
    it(`refuses ${what} with 400 naming the field and keeps the password`, async () => {
      const member = await ctx.api.member()
      assertError(await change(member, payload), { code: 'VALIDATION_FAILED', instance: CHANGE, detail: INVALID_BODY, invalidParams })
      assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
    })
  }

  it('refuses an anonymous caller with 401', async () => {
    const res = await ctx.api.inject({ method: 'PATCH', url: CHANGE, payload: { currentPassword: 'correct horse', newPassword: 'battery staple' } })
    assertError(res, {
      code: 'UNAUTHORIZED', instance: CHANGE, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
  })
}, { env: { SMTP_URL: smtpUrl } })

describeEachBackend('POST /api/v1/members/password/reset', (ctx) => {
  const api = calls(ctx)

  it('answers {email} with the same 201 whether or not an account has it, and mails a token only to the account', async () => {
    const member = await ctx.api.member()
    const unknown = await api.reset({ email: 'nobody-here@example.com' })
    const known = await api.reset({ email: member.email })
    for (const res of [unknown, known]) {
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual(res.json(), OK_NULL)
    }
    assert.equal(known.body, unknown.body)
    assert.equal(known.headers['content-type'], unknown.headers['content-type'])
    const mail = await sink.next(member.email, /Reset your password/)
    assert.match(tokenIn(mail), /^[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(sink.received('nobody-here@example.com'), [])
  })

  it('completes with {token, newPassword}: 201 data null, the new password works and the old one fails', async () => {
    const member = await ctx.api.member()
    const res = await api.reset({ token: await api.resetToken(member.email), newPassword: 'battery staple' })
    assert.equal(res.statusCode, 201, res.body)
    assert.deepEqual(res.json(), OK_NULL)
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 401)
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
  })

  it('ends every session the member had before the reset', async () => {
    const member = await ctx.api.member()
    const other = await ctx.api.login(member.email, 'correct horse')
    const bystander = await ctx.api.member('bystander')
    const token = await api.resetToken(member.email)
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201)
    await assertEnded(api, [member, other])
    assert.equal((await api.me(bystander)).statusCode, 200)
  })

  it('revokes every API key of the member: account recovery takes the account back from whoever held a key', async () => {
    const member = await ctx.api.member()
    const keys = [await api.apiKey(member, 'first'), await api.apiKey(member, 'second')]
    const bystander = await api.apiKey(await ctx.api.member('bystander'))
    assert.equal((await api.reset({ token: await api.resetToken(member.email), newPassword: 'battery staple' })).statusCode, 201)
    for (const key of keys) assertError(await api.meWithKey(key.secret), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: INVALID_KEY })
    assert.equal((await api.meWithKey(bystander.secret)).statusCode, 200)
    const fresh = await ctx.api.login(member.email, 'battery staple')
    const listed = (await ctx.api.inject({ url: KEYS, headers: fresh.headers })).json().data as Array<{ revokedAt: string | null }>
    assert.equal(listed.length, 2)
    for (const key of listed) assert.match(String(key.revokedAt), /^\d{4}-\d{2}-\d{2}T/)
    assert.equal((await api.meWithKey((await api.apiKey(fresh)).secret)).statusCode, 200, 'the member can make new keys')
  })

  it('changes nothing when the reset is refused: sessions, keys and the token stay (one transaction)', async () => {
    const member = await ctx.api.member()
    const key = await api.apiKey(member)
    const token = await api.resetToken(member.email)
    assertError(await api.reset({ token, newPassword: member.email }), {
      code: 'VALIDATION_FAILED', instance: RESET, detail: INVALID_REQUEST, invalidParams: [{ field: 'newPassword', message: IS_EMAIL }],
    })
    assert.equal((await api.me(member)).statusCode, 200)
    assert.equal((await api.meWithKey(key.secret)).statusCode, 200)
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201, 'the token was not spent')
  })

  it('refuses a common newPassword with 400 naming newPassword, whether or not the token is good, and keeps the token usable', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    for (const candidate of [token, 'x'.repeat(43)]) {
      assertError(await api.reset({ token: candidate, newPassword: 'iloveyou' }), {
        code: 'VALIDATION_FAILED', instance: RESET, detail: INVALID_REQUEST, invalidParams: [{ field: 'newPassword', message: TOO_COMMON }],
      })
    }
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201)
  })

  it('refuses a newPassword that is the email’s local part with 400 naming newPassword', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    const local = member.email.slice(0, member.email.indexOf('@'))
    assertError(await api.reset({ token, newPassword: ` ${local.toUpperCase()}` }), {
      code: 'VALIDATION_FAILED', instance: RESET, detail: INVALID_REQUEST, invalidParams: [{ field: 'newPassword', message: IS_EMAIL }],
    })
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
  })

  it('marks the email verified: the mailed token proves the address', async () => {
    const member = await ctx.api.member()
    assert.equal((await api.me(member)).json().data.emailVerified, false)
    assert.equal((await api.reset({ token: await api.resetToken(member.email), newPassword: 'battery staple' })).statusCode, 201)
    const fresh = await ctx.api.login(member.email, 'battery staple')
    assert.equal((await api.me(fresh)).json().data.emailVerified, true)
  })

  it('refuses the same token a second time with 400 INVALID_TOKEN and keeps the password the first use set', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201)
    assertError(await api.reset({ token, newPassword: 'another password' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    assert.equal((await api.login(member.email, 'another password')).statusCode, 401)
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
  })

  it('refuses an expired token with 400 INVALID_TOKEN and keeps the old password', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    await ctx.api.app.db.updateTable('member_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('member_id', '=', member.id).where('purpose', '=', 'PASSWORD_RESET').execute()
    assertError(await api.reset({ token, newPassword: 'battery staple' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
  })

  it('refuses a garbage token with 400 INVALID_TOKEN', async () => {
    for (const token of ['x'.repeat(43), 'garbage']) {
      assertError(await api.reset({ token, newPassword: 'battery staple' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    }
  })

  it('makes the first mailed token stop working when a second reset is requested', async () => {
    const member = await ctx.api.member()
    const first = await api.resetToken(member.email)
    const second = await api.resetToken(member.email)
    assert.notEqual(first, second)
    assertError(await api.reset({ token: first, newPassword: 'battery staple' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    assert.equal((await api.reset({ token: second, newPassword: 'battery staple' })).statusCode, 201)
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
  })

  const invalid: Array<[string, object, string, Array<{ field: string, message: string }>]> = [
    ['{}', {}, INVALID_REQUEST, [{ field: 'email', message: 'is required (or send token and newPassword)' }]],
    ['{token} without newPassword', { token: 'x'.repeat(43) }, INVALID_REQUEST, [{ field: 'newPassword', message: 'is required with token' }]],
    ['{email} that is not an email', { email: 'not-an-email' }, INVALID_BODY, [{ field: 'email', message: 'must be an email address' }]],
    ['a 7-character newPassword', { token: 'x'.repeat(43), newPassword: '1234567' }, INVALID_BODY, [{ field: 'newPassword', message: 'must be at least 8 characters' }]],
    ['an unknown field', { email: 'a@example.com', name: 'x' }, INVALID_BODY, [{ field: 'name', message: 'is not a recognised field' }]],
  ]
  for (const [what, payload, detail, invalidParams] of invalid) {
    it(`refuses ${what} with 400 naming ${invalidParams[0]!.field}`, async () => {
      assertError(await api.reset(payload), { code: 'VALIDATION_FAILED', instance: RESET, detail, invalidParams })
    })
  }

  it('refuses a body with both shapes {email, token, newPassword} with 400 naming token, and the token stays usable', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    assertError(await api.reset({ email: member.email, token, newPassword: 'battery staple' }), {
      code: 'VALIDATION_FAILED',
      instance: RESET,
      detail: INVALID_REQUEST,
      invalidParams: [{ field: 'token', message: 'send either {email} to request a reset or {token, newPassword} to complete one, not both' }],
    })
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201)
  })

  it('leaves one working token after requests at the same moment: one reset succeeds, the others are spent', async () => {
    const member = await ctx.api.member()
    const requests = await Promise.all(Array.from({ length: 8 }, () => api.reset({ email: member.email })))
    for (const res of requests) assert.equal(res.statusCode, 201, res.body)
    const tokens: string[] = []
    for (let i = 0; i < 8; i++) tokens.push(tokenIn(await sink.next(member.email, /Reset your password/)))
    const answers: number[] = []
    for (const [i, token] of tokens.entries()) answers.push((await api.reset({ token, newPassword: `new password ${i}` })).statusCode)
    assert.equal(answers.filter(status => status === 201).length, 1, `resets that succeeded: ${answers.join(', ')}`)
  })

  it('lets a member locked out by failed logins (429) log in with the new password at once after a reset', async () => {
    const member = await ctx.api.member()
    for (let i = 0; i < 2; i++) assert.equal((await api.login(member.email, 'wrong guess')).statusCode, 401)
    assertError(await api.login(member.email, 'correct horse'), {
      code: 'TOO_MANY_REQUESTS', instance: '/api/v1/auth/login', detail: 'Too many failed logins for this email; retry after the time in Retry-After.',
    })
    assert.equal((await api.reset({ token: await api.resetToken(member.email), newPassword: 'battery staple' })).statusCode, 201)
    assert.equal((await api.login(member.email, 'battery staple')).statusCode, 201)
  })
}, { env: { SMTP_URL: smtpUrl, LOGIN_FAILURE_LIMIT: '2' } })

describeEachBackend('POST /api/v1/members/email/verify', (ctx) => {
  const api = calls(ctx)
  const verificationToken = async (email: string) => tokenIn(await sink.next(email, /Verify your email address/))

  it('verifies the address with the token mailed at registration: 201 data null, then emailVerified is true', async () => {
    // Names of these lengths push the mail's lines past 76 characters, so it is sent quoted-printable.
    for (const name of ['V', 'Verity Quill-Hopkins', 'n'.repeat(100)]) {
      const email = `verify-${randomBytes(4).toString('hex')}@example.com`
      const registered = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name } })
      assert.equal(registered.statusCode, 201, registered.body)
      assert.equal(registered.json().data.emailVerified, false)
      const res = await api.verify({ token: await verificationToken(email) })
      assert.equal(res.statusCode, 201, res.body)
      assert.deepEqual(res.json(), OK_NULL)
      assert.equal((await api.me(await ctx.api.login(email, 'correct horse'))).json().data.emailVerified, true)
    }
  })

  it('refuses the same token a second time with 400 INVALID_TOKEN', async () => {
    const member = await ctx.api.member()
    const token = await verificationToken(member.email)
    assert.equal((await api.verify({ token })).statusCode, 201)
    assertError(await api.verify({ token }), { code: 'INVALID_TOKEN', instance: VERIFY, detail: INVALID_TOKEN })
  })

  it('refuses a password-reset token (another purpose) with 400 INVALID_TOKEN; it stays good for a reset', async () => {
    const member = await ctx.api.member()
    const token = await api.resetToken(member.email)
    assertError(await api.verify({ token }), { code: 'INVALID_TOKEN', instance: VERIFY, detail: INVALID_TOKEN })
    assert.equal((await api.me(member)).json().data.emailVerified, false)
    assert.equal((await api.reset({ token, newPassword: 'battery staple' })).statusCode, 201)
  })

  it('refuses a verification token for a password reset with 400 INVALID_TOKEN', async () => {
    const member = await ctx.api.member()
    const token = await verificationToken(member.email)
    assertError(await api.reset({ token, newPassword: 'battery staple' }), { code: 'INVALID_TOKEN', instance: RESET, detail: INVALID_TOKEN })
    assert.equal((await api.login(member.email, 'correct horse')).statusCode, 201)
  })

  it('refuses a garbage token with 400 INVALID_TOKEN', async () => {
    assertError(await api.verify({ token: 'x'.repeat(43) }), { code: 'INVALID_TOKEN', instance: VERIFY, detail: INVALID_TOKEN })
  })

  it('refuses a missing or empty token with 400 naming token', async () => {
    for (const [payload, message] of [[{}, 'is required'], [{ token: '' }, 'must not be empty']] as const) {
      assertError(await api.verify(payload), {
        code: 'VALIDATION_FAILED', instance: VERIFY, detail: INVALID_BODY, invalidParams: [{ field: 'token', message }],
      })
    }
  })
}, { env: { SMTP_URL: smtpUrl } })
