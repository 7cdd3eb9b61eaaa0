import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Member as MemberView } from '../../src/members/schemas.js'
import { ADMIN, assertError, describeEachBackend, type Member, successData } from '../helper.js'

const LIST = '/api/v1/admin/members'
const SEARCH = '/api/v1/admin/members/search'
const PASSWORD = 'correct horse'
const QUERY_INVALID = 'The query has invalid parameters.'
const BODY_INVALID = 'The request body has invalid parameters.'
const UNKNOWN_PARAM = 'is not a recognised query parameter'
const NO_CREDENTIAL = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'
const NOT_ADMIN = 'This operation requires the ADMIN role.'
const REVOKED = 'The access token has been revoked.'
const INVALID_REFRESH = 'The refresh token is invalid, expired or revoked.'
const OWN_ROLE = 'an admin cannot change their own role or status; ask another admin'

type Query = Record<string, string | number>
type Caller = Pick<Member, 'headers'> | undefined
interface Page { content: MemberView[], page: number, size: number, totalElements: number, totalPages: number, first: boolean, last: boolean }

describeEachBackend('admin: members', (ctx) => {
  /** GET `path` with the query properly encoded. */
  const get = (caller: Caller, path: string, query: Query = {}) => ctx.api.get(path, query, caller)
  const patch = (caller: Caller, id: number | string, payload: object) =>
    ctx.api.inject({ method: 'PATCH', url: `${LIST}/${id}`, payload, ...(caller ? { headers: caller.headers } : {}) })
  const me = (caller: Caller) => get(caller, '/api/v1/members/me')
  const login = (email: string, password = PASSWORD) =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
  const refresh = (refreshToken: string) =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } })

  /** The `data` of a 200 envelope. */
  const page = async (admin: Member, path: string, query: Query = {}) => successData<Page>(await get(admin, path, query))
  const emails = async (admin: Member, path: string, query: Query = {}) => (await page(admin, path, query)).content.map(m => m.email)

  /** Registers a member through the API and returns the member as the API shows it. */
  async function register (email: string, name: string): Promise<MemberView> {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: PASSWORD, name } })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data
  }

  /** The bootstrap admin, logged in, and its member record. */
  async function bootstrapAdmin () {
    const admin = await ctx.api.admin()
    return { admin, record: successData<MemberView>(await get(admin, `${LIST}/${admin.id}`)) }
  }

  /** Three members registered after the bootstrap admin, oldest first. */
  async function threeMembers () {
    const alice = await register('alice@example.com', 'Alice Smith')
    const bob = await register('bob@shop.test', 'Bob Stone')
    const carol = await register('carol@example.com', 'Carol Jones')
    return { alice, bob, carol }
  }

  it('GET /admin/members lists every member, newest first, in the page shape', async () => {
    const { admin, record } = await bootstrapAdmin()
    const { alice, bob, carol } = await threeMembers()
    assert.deepEqual(await page(admin, LIST), {
      content: [carol, bob, alice, record],
      page: 0,
      size: 20,
      totalElements: 4,
      totalPages: 1,
      first: true,
      last: true,
    })
    const { createdAt, ...rest } = record
    assert.match(createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    assert.deepEqual(rest, { memberId: admin.id, email: ADMIN.email, name: 'Administrator', role: 'ADMIN', status: 'ACTIVE', emailVerified: true })
  })

  it('pages with page and size: totals, first and last are right on every page and past the end', async () => {
    const { admin, record } = await bootstrapAdmin()
    const { alice, bob, carol } = await threeMembers()
    const dave = await register('dave@example.com', 'Dave Brown')
    const pages = await Promise.all([0, 1, 2, 3].map(n => page(admin, LIST, { size: 2, page: n })))
    const expected = [[dave, carol], [bob, alice], [record], []]
    pages.forEach((p, n) => assert.deepEqual(p, {
      content: expected[n], page: n, size: 2, totalElements: 5, totalPages: 3, first: n === 0, last: n >= 2,
    }))
  })

  it('sorts by createdAt, email or name (a field alone ascending), breaking ties by id in the same direction', async () => {
    const { admin } = await bootstrapAdmin()
    await threeMembers()
    const all = ['carol@example.com', 'bob@shop.test', 'alice@example.com', ADMIN.email]
    const cases: Array<[string, string[]]> = [
      ['createdAt', [...all].reverse()],
      ['createdAt,asc', [...all].reverse()],
      ['createdAt,desc', all],
      ['email', [ADMIN.email, 'alice@example.com', 'bob@shop.test', 'carol@example.com']],
      ['email,desc', ['carol@example.com', 'bob@shop.test', 'alice@example.com', ADMIN.email]],
      ['name', [ADMIN.email, 'alice@example.com', 'bob@shop.test', 'carol@example.com']],
      ['name,desc', ['carol@example.com', 'bob@shop.test', 'alice@example.com', ADMIN.email]],
    ]
    for (const [sort, expected] of cases) assert.deepEqual(await emails(admin, LIST, { sort }), expected, sort)

    // Everyone joined in the same millisecond: the id decides, in the sort's direction.
    await ctx.api.app.db.updateTable('members').set({ created_at: new Date('2026-01-01T00:00:00.000Z') }).execute()
    assert.deepEqual(await emails(admin, LIST, { sort: 'createdAt,desc' }), all)
    assert.deepEqual(await emails(admin, LIST, { sort: 'createdAt,asc' }), [...all].reverse())
    assert.deepEqual(await emails(admin, LIST, { sort: 'createdAt,asc', size: 2, page: 1 }), ['bob@shop.test', 'carol@example.com'])
  })

  it('filters by role and status', async () => {
    const { admin } = await bootstrapAdmin()
    const { alice, bob } = await threeMembers()
    successData(await patch(admin, alice.memberId, { role: 'ADMIN' }))
    successData(await patch(admin, bob.memberId, { status: 'SUSPENDED' }))
    const cases: Array<[Query, string[]]> = [
      [{ role: 'ADMIN' }, ['alice@example.com', ADMIN.email]],
      [{ role: 'USER' }, ['carol@example.com', 'bob@shop.test']],
      [{ status: 'SUSPENDED' }, ['bob@shop.test']],
      [{ status: 'ACTIVE' }, ['carol@example.com', 'alice@example.com', ADMIN.email]],
      [{ role: 'USER', status: 'ACTIVE' }, ['carol@example.com']],
      [{ role: 'ADMIN', status: 'SUSPENDED' }, []],
      [{ role: 'ADMIN', sort: 'email,asc' }, [ADMIN.email, 'alice@example.com']],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await emails(admin, LIST, query), expected, JSON.stringify(query))
    assert.deepEqual(await page(admin, LIST, { status: 'SUSPENDED' }), {
      content: [{ ...bob, status: 'SUSPENDED' }], page: 0, size: 20, totalElements: 1, totalPages: 1, first: true, last: true,
    })
    assert.deepEqual(await page(admin, LIST, { role: 'ADMIN', status: 'SUSPENDED' }), {
      content: [], page: 0, size: 20, totalElements: 0, totalPages: 0, first: true, last: true,
    })
  })

  it('GET /admin/members/search matches q against email or name, ignoring case, with % and _ taken literally', async () => {
    const { admin } = await bootstrapAdmin()
    await register('ann@example.com', 'Ann Lee')
    await register('dan_x@example.com', 'Dan')
    await register('danax@example.com', 'Dana')
    await register('percy@example.com', '100% Percy')
    await register('p100x@example.com', 'Paul')
    await register('back@example.com', 'Back\\slash')
    await register('ilker@example.com', 'İlker ΟΔΟΣ')
    const cases: Array<[string, string[]]> = [
      ['ann', ['ann@example.com']],
      ['İlker', ['ilker@example.com']],
      ['ΟΔΟΣ', ['ilker@example.com']],
      ['LEE', ['ann@example.com']],
      ['nobody', []],
      ['EXAMPLE.COM', ['ilker@example.com', 'back@example.com', 'p100x@example.com', 'percy@example.com', 'danax@example.com', 'dan_x@example.com', 'ann@example.com', ADMIN.email]],
      ['n_x', ['dan_x@example.com']],
      ['_', ['dan_x@example.com']],
      ['0%', ['percy@example.com']],
      ['%', ['percy@example.com']],
      ['\\', ['back@example.com']],
      ['dan', ['danax@example.com', 'dan_x@example.com']],
      ['administrator', [ADMIN.email]],
    ]
    for (const [q, expected] of cases) assert.deepEqual(await emails(admin, SEARCH, { q }), expected, q)
  })

  it('search combines q with role, status, sort and paging, and without q lists what GET /admin/members lists', async () => {
    const { admin, record } = await bootstrapAdmin()
    const { alice, bob, carol } = await threeMembers()
    successData(await patch(admin, carol.memberId, { status: 'SUSPENDED' }))
    assert.deepEqual(await emails(admin, SEARCH, { q: 'example', status: 'ACTIVE' }), ['alice@example.com', ADMIN.email])
    assert.deepEqual(await emails(admin, SEARCH, { q: 'example', role: 'USER' }), ['carol@example.com', 'alice@example.com'])
    assert.deepEqual(await emails(admin, SEARCH, { q: 'on', sort: 'name,asc' }), ['bob@shop.test', 'carol@example.com'])
    assert.deepEqual(await page(admin, SEARCH, { q: 'E', sort: 'email,asc', size: 2, page: 1 }), {
      content: [bob, { ...carol, status: 'SUSPENDED' }], page: 1, size: 2, totalElements: 4, totalPages: 2, first: false, last: true,
    })
    assert.deepEqual(await page(admin, SEARCH), await page(admin, LIST))
    assert.deepEqual((await page(admin, SEARCH)).content, [{ ...carol, status: 'SUSPENDED' }, bob, alice, record])
  })

  const badQueries: Array<[string, Query, Array<{ field: string, message: string | RegExp }>]> = [
    ['an unknown sort field', { sort: 'password' }, [{ field: 'sort', message: /^must be one of / }]],
    ['an unknown sort direction', { sort: 'email,up' }, [{ field: 'sort', message: /^must be one of / }]],
    ['page -1', { page: -1 }, [{ field: 'page', message: 'must be at least 0' }]],
    ['a page beyond 1,000,000', { page: 1_000_001 }, [{ field: 'page', message: 'must be at most 1000000' }]],
    ['size 0', { size: 0 }, [{ field: 'size', message: 'must be at least 1' }]],
    ['size 101', { size: 101 }, [{ field: 'size', message: 'must be at most 100' }]],
    ['a non-numeric size', { size: 'ten' }, [{ field: 'size', message: 'must be an integer' }]],
    ['an unknown role', { role: 'OWNER' }, [{ field: 'role', message: 'must be one of USER, ADMIN' }]],
    ['an unknown status', { status: 'BANNED' }, [{ field: 'status', message: 'must be one of ACTIVE, SUSPENDED' }]],
    ['a cursor (admin lists are pages)', { cursor: 'abc' }, [{ field: 'cursor', message: UNKNOWN_PARAM }]],
    ['an unknown parameter', { foo: 'bar' }, [{ field: 'foo', message: UNKNOWN_PARAM }]],
  ]
  for (const [what, query, invalidParams] of badQueries) {
    it(`rejects ${what} with 400 naming the parameter, on the list and the search`, async () => {
      const { admin } = await bootstrapAdmin()
      for (const path of [LIST, SEARCH]) {
        assertError(await get(admin, path, query), { code: 'VALIDATION_FAILED', instance: path, detail: QUERY_INVALID, invalidParams })
      }
    })
  }

  it('rejects an empty q on the search, and q on the list, with 400', async () => {
    const { admin } = await bootstrapAdmin()
    assertError(await get(admin, SEARCH, { q: '' }),
      { code: 'VALIDATION_FAILED', instance: SEARCH, detail: QUERY_INVALID, invalidParams: [{ field: 'q', message: 'must not be empty' }] })
    assertError(await get(admin, LIST, { q: 'ann' }),
      { code: 'VALIDATION_FAILED', instance: LIST, detail: QUERY_INVALID, invalidParams: [{ field: 'q', message: UNKNOWN_PARAM }] })
  })

  it('GET /admin/members/{id} answers any member; an unknown id is 404 and a malformed one 400', async () => {
    const { admin } = await bootstrapAdmin()
    const { bob } = await threeMembers()
    assert.deepEqual(successData(await get(admin, `${LIST}/${bob.memberId}`)), bob)
    assertError(await get(admin, `${LIST}/999999`), { code: 'MEMBER_NOT_FOUND', instance: `${LIST}/999999`, detail: 'Member 999999 does not exist.' })
    assertError(await get(admin, `${LIST}/bob`), {
      code: 'VALIDATION_FAILED', instance: `${LIST}/bob`, detail: 'The path has invalid parameters.', invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
    })
  })

  it('PATCH /admin/members/{id} renames a member without ending their session; an empty body changes nothing', async () => {
    const { admin } = await bootstrapAdmin()
    const member = await ctx.api.member('ada')
    const before = successData<MemberView>(await get(admin, `${LIST}/${member.id}`))
    const renamed = successData(await patch(admin, member.id, { name: 'Ada Lovelace' }))
    assert.deepEqual(renamed, { ...before, name: 'Ada Lovelace' })
    assert.deepEqual(successData(await get(admin, `${LIST}/${member.id}`)), renamed)
    assert.deepEqual(successData(await patch(admin, member.id, {})), renamed)
    assert.deepEqual(successData(await patch(admin, member.id, { role: 'USER', status: 'ACTIVE' })), renamed)
    assert.deepEqual(successData(await me(member)), { ...renamed, identityProviders: [] })
  })

  it('suspending ends the member’s tokens at once and blocks login; reinstating allows login but the old tokens stay dead', async () => {
    const { admin } = await bootstrapAdmin()
    const member = await ctx.api.member()
    const { identityProviders: _providers, ...before } = successData<MemberView & { identityProviders: string[] }>(await me(member))

    assert.deepEqual(successData(await patch(admin, member.id, { status: 'SUSPENDED' })), { ...before, status: 'SUSPENDED' })
    const revoked = await me(member)
    assertError(revoked, { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assert.equal(revoked.headers['www-authenticate'], 'Bearer realm="order-service", error="invalid_token"')
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    assertError(await login(member.email), { code: 'ACCOUNT_SUSPENDED', instance: '/api/v1/auth/login', detail: 'This account is suspended.' })

    assert.deepEqual(successData(await patch(admin, member.id, { status: 'ACTIVE' })), before)
    assertError(await me(member), { code: 'UNAUTHORIZED', instance: '/api/v1/members/me', detail: REVOKED })
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    const again = await ctx.api.login(member.email, PASSWORD)
    assert.deepEqual(successData(await me(again)), { ...before, identityProviders: [] })
  })

  it('a new role ends the member’s sessions; signed in again, the role applies both ways', async () => {
    const { admin } = await bootstrapAdmin()
    const member = await ctx.api.member()
    assertError(await get(member, LIST), { code: 'ACCESS_DENIED', instance: LIST, detail: NOT_ADMIN })

    const promoted = successData<MemberView>(await patch(admin, member.id, { role: 'ADMIN' }))
    assert.equal(promoted.role, 'ADMIN')
    assertError(await get(member, LIST), { code: 'UNAUTHORIZED', instance: LIST, detail: REVOKED })
    assertError(await refresh(member.refreshToken), { code: 'UNAUTHORIZED', instance: '/api/v1/auth/refresh', detail: INVALID_REFRESH })
    const asAdmin = await ctx.api.login(member.email, PASSWORD)
    assert.equal(successData<Page>(await get(asAdmin, LIST)).totalElements, 2)

    assert.equal(successData<MemberView>(await patch(admin, member.id, { role: 'USER' })).role, 'USER')
    assertError(await get(asAdmin, LIST), { code: 'UNAUTHORIZED', instance: LIST, detail: REVOKED })
    const asUser = await ctx.api.login(member.email, PASSWORD)
    assertError(await get(asUser, LIST), { code: 'ACCESS_DENIED', instance: LIST, detail: NOT_ADMIN })
  })

  it('refuses an admin changing their own role or status with 400, but lets them rename themselves', async () => {
    const { admin, record } = await bootstrapAdmin()
    const url = `${LIST}/${admin.id}`
    assertError(await patch(admin, admin.id, { role: 'USER' }),
      { code: 'VALIDATION_FAILED', instance: url, detail: 'The request has invalid parameters.', invalidParams: [{ field: 'role', message: OWN_ROLE }] })
    assertError(await patch(admin, admin.id, { status: 'SUSPENDED' }),
      { code: 'VALIDATION_FAILED', instance: url, detail: 'The request has invalid parameters.', invalidParams: [{ field: 'status', message: OWN_ROLE }] })
    assertError(await patch(admin, admin.id, { name: 'Boss', status: 'SUSPENDED' }),
      { code: 'VALIDATION_FAILED', instance: url, detail: 'The request has invalid parameters.', invalidParams: [{ field: 'status', message: OWN_ROLE }] })
    assert.deepEqual(successData(await get(admin, url)), record)

    assert.deepEqual(successData(await patch(admin, admin.id, { name: 'Boss', role: 'ADMIN', status: 'ACTIVE' })), { ...record, name: 'Boss' })
    assert.equal((await me(admin)).statusCode, 200)
  })

  const badBodies: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['an unknown field', { email: 'new@example.com' }, [{ field: 'email', message: 'is not a recognised field' }]],
    ['an unknown role', { role: 'ROOT' }, [{ field: 'role', message: 'must be one of USER, ADMIN' }]],
    ['an unknown status', { status: 'DELETED' }, [{ field: 'status', message: 'must be one of ACTIVE, SUSPENDED' }]],
    ['an empty name', { name: '' }, [{ field: 'name', message: 'must not be empty' }]],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, [{ field: 'name', message: 'must be at most 100 characters' }]],
    ['a null status', { status: null }, [{ field: 'status', message: 'must be one of ACTIVE, SUSPENDED' }]],
  ]
  for (const [what, payload, invalidParams] of badBodies) {
    it(`PATCH /admin/members/{id} rejects ${what} with 400 and changes nothing`, async () => {
      const { admin } = await bootstrapAdmin()
      const member = await ctx.api.member()
      const before = successData(await me(member))
      assertError(await patch(admin, member.id, payload), { code: 'VALIDATION_FAILED', instance: `${LIST}/${member.id}`, detail: BODY_INVALID, invalidParams })
      assert.deepEqual(successData(await me(member)), before)
    })
  }

  it('PATCH /admin/members/{id} answers 404 for an unknown member', async () => {
    const { admin } = await bootstrapAdmin()
    assertError(await patch(admin, 999999, { status: 'SUSPENDED' }),
      { code: 'MEMBER_NOT_FOUND', instance: `${LIST}/999999`, detail: 'Member 999999 does not exist.' })
  })

  it('refuses anonymous callers with 401 and members with 403 on every admin member route', async () => {
    const member = await ctx.api.member()
    const routes: Array<[string, (caller: Caller) => Promise<LightMyRequestResponse>]> = [
      [LIST, caller => get(caller, LIST)],
      [SEARCH, caller => get(caller, SEARCH, { q: 'a' })],
      [`${LIST}/${member.id}`, caller => get(caller, `${LIST}/${member.id}`)],
      [`${LIST}/${member.id}`, caller => patch(caller, member.id, { name: 'Mallory' })],
    ]
    for (const [instance, call] of routes) {
      const anonymous = await call(undefined)
      assertError(anonymous, { code: 'UNAUTHORIZED', instance, detail: NO_CREDENTIAL })
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="order-service"')
      assertError(await call(member), { code: 'ACCESS_DENIED', instance, detail: NOT_ADMIN })
    }
    assert.equal(successData<MemberView>(await me(member)).name, 'member')
  })

  it('a rename at the same moment as a suspension keeps both: the member stays SUSPENDED and cannot log in', async () => {
    const admin = await ctx.api.admin()
    for (let round = 0; round < 5; round++) {
      const member = await ctx.api.member('racer')
      const url = `/api/v1/admin/members/${member.id}`
      const [suspend, rename] = await Promise.all([
        ctx.api.inject({ method: 'PATCH', url, headers: admin.headers, payload: { status: 'SUSPENDED' } }),
        ctx.api.inject({ method: 'PATCH', url, headers: admin.headers, payload: { name: 'Renamed' } }),
      ])
      assert.equal(suspend.statusCode, 200, suspend.body)
      assert.equal(rename.statusCode, 200, rename.body)
      const now = successData<{ status: string, name: string }>(await ctx.api.inject({ url, headers: admin.headers }))
      assert.deepEqual([now.status, now.name], ['SUSPENDED', 'Renamed'], `round ${round}: one change undid the other`)
      const login = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: member.email, password: 'correct horse' } })
      assert.equal(login.statusCode, 403)
    }
  })

  it('two admins demoting each other at the same moment: one succeeds, the other is 403, an admin remains', async () => {
    const root = await ctx.api.admin()
    const other = await ctx.api.member('second-admin')
    assert.equal((await ctx.api.inject({ method: 'PATCH', url: `/api/v1/admin/members/${other.id}`, headers: root.headers, payload: { role: 'ADMIN' } })).statusCode, 200)
    const second = await ctx.api.login(other.email, 'correct horse')
    const [byRoot, bySecond] = await Promise.all([
      ctx.api.inject({ method: 'PATCH', url: `/api/v1/admin/members/${second.id}`, headers: root.headers, payload: { role: 'USER' } }),
      ctx.api.inject({ method: 'PATCH', url: `/api/v1/admin/members/${root.id}`, headers: second.headers, payload: { role: 'USER' } }),
    ])
    const refused = [byRoot, bySecond].filter(res => res.statusCode !== 200)
    assert.equal(refused.length, 1, `answers: ${byRoot.statusCode}, ${bySecond.statusCode}`)
    const admins = await ctx.api.app.db.selectFrom('members').select('id').where('role', '=', 'ADMIN').where('status', '=', 'ACTIVE').execute()
    assert.equal(admins.length, 1)
    const loser = refused[0]!
    if (loser.statusCode === 403) {
      assertError(loser, { code: 'ACCESS_DENIED', instance: loser === byRoot ? `/api/v1/admin/members/${second.id}` : `/api/v1/admin/members/${root.id}`, detail: 'You are no longer an active admin.' })
    } else {
      // The demotion that came second found its caller's session revoked first.
      assert.equal(loser.statusCode, 401, loser.body)
    }
  })
})
