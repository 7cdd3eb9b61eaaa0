import assert from 'node:assert/strict'
import { it } from 'node:test'
import { ADMIN, assertError, describeEachBackend, successData, type Member } from '../helper.js'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const INVALID_BODY = 'The request body has invalid parameters.'
const INVALID_PATH = 'The path has invalid parameters.'
const NOT_OWNER = 'Only the owner of this account or an admin may do this.'
const NO_CREDENTIAL = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'

describeEachBackend('members: reading and renaming an account', (ctx) => {
  const me = (member?: Pick<Member, 'headers'>) => ctx.api.inject({ url: '/api/v1/members/me', headers: member?.headers })
  /** /me's answer as GET /members/{id} gives it: without the OpenID providers that only /me adds. */
  const meAsMember = async (member: Pick<Member, 'headers'>) => {
    const body = (await me(member)).json()
    delete body.data.identityProviders
    return body
  }
  const get = (caller: Pick<Member, 'headers'> | undefined, id: number | string) =>
    ctx.api.inject({ url: `/api/v1/members/${id}`, headers: caller?.headers })
  const patch = (caller: Pick<Member, 'headers'>, id: number | string, payload: object) =>
    ctx.api.inject({ method: 'PATCH', url: `/api/v1/members/${id}`, headers: caller.headers, payload })
  const nameOf = async (id: number) =>
    (await ctx.api.app.db.selectFrom('members').select(['name', 'role']).where('id', '=', id).executeTakeFirstOrThrow())

  /** The member's data with createdAt checked for format and then left out. */
  const withoutCreatedAt = (data: Record<string, unknown>) => {
    const { createdAt, ...rest } = data
    assert.match(String(createdAt), TIMESTAMP)
    return rest
  }

  it('GET /members/me answers 200 with the caller’s own member', async () => {
    const member = await ctx.api.member('ada')
    const data = successData<Record<string, unknown>>(await me(member))
    assert.deepEqual(Object.keys(data).sort(), ['createdAt', 'email', 'emailVerified', 'identityProviders', 'memberId', 'name', 'role', 'status'])
    assert.deepEqual(withoutCreatedAt(data), {
      memberId: member.id, email: member.email, name: 'ada', role: 'USER', status: 'ACTIVE', emailVerified: false, identityProviders: [],
    })
    const admin = await me(await ctx.api.admin())
    assert.deepEqual(withoutCreatedAt(admin.json().data), {
      memberId: admin.json().data.memberId, email: ADMIN.email, name: 'Administrator', role: 'ADMIN', status: 'ACTIVE', emailVerified: true, identityProviders: [],
    })
  })

  it('GET /members/me refuses an anonymous caller with 401 and WWW-Authenticate', async () => {
    const res = await me()
    assertError(res, { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: NO_CREDENTIAL })
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
  })

  it('GET /members/{id} answers the owner with 200 and the same member as /me', async () => {
    const member = await ctx.api.member()
    const res = await get(member, member.id)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), await meAsMember(member))
  })

  it('GET /members/{id} refuses another member with 403, whether or not the id exists', async () => {
    const owner = await ctx.api.member('owner')
    const other = await ctx.api.member('other')
    assertError(await get(other, owner.id), { code: 'ACCESS_DENIED', instance: `/api/v1/members/${owner.id}`, detail: NOT_OWNER })
    // 403 rather than 404 for an unknown id: a member cannot probe which ids exist.
    assertError(await get(other, 999999), { code: 'ACCESS_DENIED', instance: '/api/v1/members/999999', detail: NOT_OWNER })
  })

  it('GET /members/{id} answers an admin with 200 for any member', async () => {
    const member = await ctx.api.member('someone')
    const res = await get(await ctx.api.admin(), member.id)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(withoutCreatedAt(res.json().data), {
      memberId: member.id, email: member.email, name: 'someone', role: 'USER', status: 'ACTIVE', emailVerified: false,
    })
  })

  it('GET /members/{id} answers an admin with 404 MEMBER_NOT_FOUND for a well-formed unknown id', async () => {
    const admin = await ctx.api.admin()
    for (const id of ['999999', '9223372036854775807']) {
      assertError(await get(admin, id), { code: 'MEMBER_NOT_FOUND', instance: `/api/v1/members/${id}`, detail: `Member ${id} does not exist.` })
    }
  })

  for (const id of ['abc', '0', '-1', '01', '1.5', '9223372036854775808']) {
    it(`GET /members/{id} refuses the malformed id ${JSON.stringify(id)} with 400 naming id`, async () => {
      const admin = await ctx.api.admin()
      assertError(await get(admin, id), {
        code: 'VALIDATION_FAILED',
        instance: `/api/v1/members/${id}`,
        detail: INVALID_PATH,
        invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
      })
    })
  }

  it('GET /members/{id} refuses an anonymous caller with 401', async () => {
    const member = await ctx.api.member()
    assertError(await get(undefined, member.id), {
      code: 'UNAUTHORIZED', instance: `/api/v1/members/${member.id}`, detail: NO_CREDENTIAL,
    })
  })

  it('PATCH /members/{id} lets the owner rename themself: 200 with the updated member, and GET shows it', async () => {
    const member = await ctx.api.member('before')
    const res = await patch(member, member.id, { name: 'Ada Lovelace' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(withoutCreatedAt(res.json().data), {
      memberId: member.id, email: member.email, name: 'Ada Lovelace', role: 'USER', status: 'ACTIVE', emailVerified: false,
    })
    assert.deepEqual((await meAsMember(member)).data, res.json().data)
    assert.equal((await get(member, member.id)).json().data.name, 'Ada Lovelace')
  })

  it('PATCH /members/{id} accepts a name of exactly 100 characters', async () => {
    const member = await ctx.api.member()
    const res = await patch(member, member.id, { name: 'n'.repeat(100) })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await nameOf(member.id)).name, 'n'.repeat(100))
  })

  it('PATCH /members/{id} lets an admin rename another member', async () => {
    const member = await ctx.api.member('user')
    const res = await patch(await ctx.api.admin(), member.id, { name: 'Renamed by admin' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().data.memberId, member.id)
    assert.equal(res.json().data.name, 'Renamed by admin')
    assert.equal((await me(member)).json().data.name, 'Renamed by admin')
  })

  it('PATCH /members/{id} refuses another member with 403 and leaves the name unchanged', async () => {
    const owner = await ctx.api.member('owner')
    const other = await ctx.api.member('other')
    assertError(await patch(other, owner.id, { name: 'Hijacked' }), {
      code: 'ACCESS_DENIED', instance: `/api/v1/members/${owner.id}`, detail: NOT_OWNER,
    })
    assert.deepEqual(await nameOf(owner.id), { name: 'owner', role: 'USER' })
  })

  it('PATCH /members/{id} refuses an admin renaming an unknown member with 404', async () => {
    assertError(await patch(await ctx.api.admin(), 999999, { name: 'Nobody' }), {
      code: 'MEMBER_NOT_FOUND', instance: '/api/v1/members/999999', detail: 'Member 999999 does not exist.',
    })
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['an empty name', { name: '' }, [{ field: 'name', message: 'must not be empty' }]],
    ['a name of 101 characters', { name: 'n'.repeat(101) }, [{ field: 'name', message: 'must be at most 100 characters' }]],
    ['a name that is not a string', { name: 42 }, [{ field: 'name', message: 'must be a string' }]],
    ['an email (not editable here)', { name: 'x', email: 'new@example.com' }, [{ field: 'email', message: 'is not a recognised field' }]],
    ['a role (no mass assignment)', { role: 'ADMIN' }, [{ field: 'role', message: 'is not a recognised field' }]],
    ['a status (no mass assignment)', { status: 'SUSPENDED' }, [{ field: 'status', message: 'is not a recognised field' }]],
  ]
  for (const [what, payload, invalidParams] of invalid) {
    it(`PATCH /members/{id} refuses ${what} with 400 naming the field and changes nothing`, async () => {
      const member = await ctx.api.member('unchanged')
      assertError(await patch(member, member.id, payload), {
        code: 'VALIDATION_FAILED', instance: `/api/v1/members/${member.id}`, detail: INVALID_BODY, invalidParams,
      })
      const after = (await me(member)).json().data
      assert.deepEqual([after.name, after.email, after.role, after.status], ['unchanged', member.email, 'USER', 'ACTIVE'])
    })
  }

  it('PATCH /members/{id} validates the body before ownership: another member’s bad body is 400, not 403', async () => {
    const owner = await ctx.api.member('owner')
    const other = await ctx.api.member('other')
    assertError(await patch(other, owner.id, { role: 'ADMIN' }), {
      code: 'VALIDATION_FAILED',
      instance: `/api/v1/members/${owner.id}`,
      detail: INVALID_BODY,
      invalidParams: [{ field: 'role', message: 'is not a recognised field' }],
    })
    assert.deepEqual(await nameOf(owner.id), { name: 'owner', role: 'USER' })
  })
})
