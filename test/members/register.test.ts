import assert from 'node:assert/strict'
import { it } from 'node:test'
import { assertError, describeEachBackend } from '../helper.js'

const INVALID = 'The request body has invalid parameters.'
const TOO_COMMON = 'is too common: it is in a list of passwords that attackers try first; choose a longer or less predictable one'
const IS_EMAIL = 'must not be your email address or the part of it before the @'

describeEachBackend('POST /api/v1/members', (ctx) => {
  const register = (payload: object) => ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload })

  it('registers a member: 201, the member, Location', async () => {
    const res = await register({ email: 'Ada@Example.com', password: 'correct horse', name: 'Ada' })
    assert.equal(res.statusCode, 201, res.body)
    const { createdAt, memberId, ...member } = res.json().data
    assert.deepEqual(member, { email: 'Ada@Example.com', name: 'Ada', role: 'USER', status: 'ACTIVE', emailVerified: false })
    assert.match(createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    assert.equal(res.headers.location, `/api/v1/members/${memberId}`)
  })

  it('stores an argon2id hash, never the password', async () => {
    await register({ email: 'hash@example.com', password: 'correct horse', name: 'H' })
    const row = await ctx.api.app.db.selectFrom('members').select('password_hash').where('email', '=', 'hash@example.com').executeTakeFirstOrThrow()
    assert.match(row.password_hash ?? '', /^\$argon2id\$/)
    assert.ok(!row.password_hash!.includes('correct horse'))
  })

  it('refuses a taken email, whatever its case, with 409', async () => {
    assert.equal((await register({ email: 'taken@example.com', password: 'correct horse', name: 'T' })).statusCode, 201)
    const res = await register({ email: 'TAKEN@example.COM', password: 'another one', name: 'T2' })
    assertError(res, { code: 'EMAIL_ALREADY_REGISTERED', instance: '/api/v1/members', detail: 'An account with this email already exists.' })
    const count = await ctx.api.app.db.selectFrom('members').select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 2) // the admin and the first registration
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a 7-character password', { email: 'a@example.com', password: '1234567', name: 'A' }, [{ field: 'password', message: 'must be at least 8 characters' }]],
    ['a 129-character password', { email: 'a@example.com', password: 'p'.repeat(129), name: 'A' }, [{ field: 'password', message: 'must be at most 128 characters' }]],
    ['an email that is not one', { email: 'not-an-email', password: 'correct horse', name: 'A' }, [{ field: 'email', message: 'must be an email address' }]],
    ['a missing name', { email: 'a@example.com', password: 'correct horse' }, [{ field: 'name', message: 'is required' }]],
    ['an empty name', { email: 'a@example.com', password: 'correct horse', name: '' }, [{ field: 'name', message: 'must not be empty' }]],
    ['a role (no mass assignment)', { email: 'a@example.com', password: 'correct horse', name: 'A', role: 'ADMIN' }, [{ field: 'role', message: 'is not a recognised field' }]],
  ]
  const refused: Array<[string, object, string]> = [
    ['a common password', { email: 'a@example.com', password: 'password123', name: 'A' }, TOO_COMMON],
    ['a common password in another case', { email: 'a@example.com', password: 'IloveYou1', name: 'A' }, TOO_COMMON],
    ['a password that is the email', { email: 'a@example.com', password: 'a@example.com', name: 'A' }, IS_EMAIL],
    ['a password that is the email in another case, with spaces around', { email: 'a@example.com', password: '  A@Example.COM ', name: 'A' }, IS_EMAIL],
    ['a password that is the email’s local part', { email: 'ada.lovelace@example.com', password: 'Ada.Lovelace', name: 'A' }, IS_EMAIL],
  ]
  for (const [what, payload, message] of refused) {
    it(`refuses ${what} with 400 naming password and saying why, and creates nobody`, async () => {
      assertError(await register(payload), {
        code: 'VALIDATION_FAILED', instance: '/api/v1/members', detail: 'The request has invalid parameters.', invalidParams: [{ field: 'password', message }],
      })
      const rows = await ctx.api.app.db.selectFrom('members').select('id').where('role', '=', 'USER').execute()
      assert.deepEqual(rows, [])
    })
  }

  it('accepts a password that only contains the email’s local part', async () => {
    const res = await register({ email: 'ada.lovelace@example.com', password: 'ada.lovelace rides', name: 'Ada' })
    assert.equal(res.statusCode, 201, res.body)
  })

  for (const [what, payload, invalidParams] of invalid) {
    it(`refuses ${what} with 400 and creates nobody`, async () => {
      assertError(await register(payload), { code: 'VALIDATION_FAILED', instance: '/api/v1/members', detail: INVALID, invalidParams })
      const row = await ctx.api.app.db.selectFrom('members').select('id').where('email', '=', 'a@example.com').executeTakeFirst()
      assert.equal(row, undefined)
    })
  }
})

describeEachBackend('ADMIN_PASSWORD', (ctx) => {
  it('is not held to the common-password list: a common ADMIN_PASSWORD still makes the admin, who logs in with it', async () => {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'admin@example.com', password: 'password123' } })
    assert.equal(res.statusCode, 201, res.body)
  })
}, { env: { ADMIN_PASSWORD: 'password123' } })
