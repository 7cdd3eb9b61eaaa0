import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Category } from '../../src/catalog/schemas.js'
import { assertError, describeEachBackend, type Member } from '../helper.js'

const URL = '/api/v1/products/categories'
const BODY_INVALID = 'The request body has invalid parameters.'
const PATH_INVALID = 'The path has invalid parameters.'

describeEachBackend('categories', (ctx) => {
  const post = (caller: Pick<Member, 'headers'> | undefined, payload: object): Promise<LightMyRequestResponse> =>
    ctx.api.inject({ method: 'POST', url: URL, payload, ...(caller ? { headers: caller.headers } : {}) })

  async function create (admin: Member, name: string, parentId?: number): Promise<Category> {
    const res = await post(admin, { name, ...(parentId ? { parentId } : {}) })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data
  }

  /** The `data` of a 200 success envelope, fetched anonymously. */
  async function read (url: string): Promise<unknown> {
    const res = await ctx.api.inject({ url })
    assert.equal(res.statusCode, 200, res.body)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const { data, ...envelope } = res.json()
    assert.deepEqual(envelope, { success: true, error: null })
    return data
  }

  const stored = () => ctx.api.app.db.selectFrom('categories').select(['id', 'name', 'parent_id']).orderBy('id').execute()

  it('lets an admin create a top-level category: 201, the category, Location', async () => {
    const admin = await ctx.api.admin()
    const res = await post(admin, { name: 'Coffee' })
    assert.equal(res.statusCode, 201, res.body)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const { categoryId } = res.json().data
    assert.deepEqual(res.json(), { success: true, data: { categoryId, name: 'Coffee', parentId: null }, error: null })
    assert.equal(res.headers.location, `${URL}/${categoryId}`)
    assert.deepEqual(await read(res.headers.location as string), res.json().data)
  })

  it('creates subcategories under an existing parent, at any depth; parentId null is top level', async () => {
    const admin = await ctx.api.admin()
    const coffee = await create(admin, 'Coffee')
    const beans = await create(admin, 'Beans', coffee.categoryId)
    const espresso = await create(admin, 'Espresso', beans.categoryId)
    assert.deepEqual([beans.parentId, espresso.parentId], [coffee.categoryId, beans.categoryId])
    assert.deepEqual(await read(`${URL}/${espresso.categoryId}`), { categoryId: espresso.categoryId, name: 'Espresso', parentId: beans.categoryId })
    const tea = await post(admin, { name: 'Tea', parentId: null })
    assert.equal(tea.statusCode, 201, tea.body)
    assert.equal(tea.json().data.parentId, null)
  })

  it('accepts a 100-character name', async () => {
    const admin = await ctx.api.admin()
    assert.equal((await create(admin, 'n'.repeat(100))).name, 'n'.repeat(100))
  })

  it('refuses members with 403 and anonymous callers with 401, and creates nothing', async () => {
    const member = await ctx.api.member()
    assertError(await post(member, { name: 'Coffee' }), { code: 'ACCESS_DENIED', instance: URL, detail: 'This operation requires the ADMIN role.' })
    assertError(await post(undefined, { name: 'Coffee' }), {
      code: 'UNAUTHORIZED', instance: URL, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
    assert.deepEqual(await stored(), [])
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a missing name', {}, [{ field: 'name', message: 'is required' }]],
    ['an empty name', { name: '' }, [{ field: 'name', message: 'must not be empty' }]],
    ['a 101-character name', { name: 'n'.repeat(101) }, [{ field: 'name', message: 'must be at most 100 characters' }]],
    ['a name that is not a string', { name: 7 }, [{ field: 'name', message: 'must be a string' }]],
    ['a name with a line feed', { name: 'Coffee\nTea' }, [{ field: 'name', message: 'must not contain control characters, format characters (such as U+200B or U+202E) or line separators' }]],
    ['a name with a C1 control character', { name: 'Coffee\u0085' }, [{ field: 'name', message: 'must not contain control characters, format characters (such as U+200B or U+202E) or line separators' }]],
    ['parentId 0', { name: 'Beans', parentId: 0 }, [{ field: 'parentId', message: 'must be at least 1' }]],
    ['a parentId that is a string', { name: 'Beans', parentId: '1' }, [{ field: 'parentId', message: 'must be an integer or null' }]],
    ['an unknown field', { name: 'Beans', slug: 'beans' }, [{ field: 'slug', message: 'is not a recognised field' }]],
  ]
  for (const [what, payload, invalidParams] of invalid) {
    it(`refuses ${what} with 400 and creates nothing`, async () => {
      const admin = await ctx.api.admin()
      assertError(await post(admin, payload), { code: 'VALIDATION_FAILED', instance: URL, detail: BODY_INVALID, invalidParams })
      assert.deepEqual(await stored(), [])
    })
  }

  it('refuses a parentId that is not an existing category with 400 naming parentId', async () => {
    const admin = await ctx.api.admin()
    const coffee = await create(admin, 'Coffee')
    assertError(await post(admin, { name: 'Beans', parentId: coffee.categoryId + 1 }), {
      code: 'VALIDATION_FAILED',
      instance: URL,
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'parentId', message: 'is not an existing category' }],
    })
    assert.deepEqual(await stored(), [{ id: coffee.categoryId, name: 'Coffee', parent_id: null }])
  })

  it('lists every category to anyone as a plain array, by name and then by id', async () => {
    assert.deepEqual(await read(URL), [])
    const admin = await ctx.api.admin()
    const tea = await create(admin, 'tea')
    const coffee = await create(admin, 'coffee')
    const beans = await create(admin, 'beans', coffee.categoryId)
    const otherBeans = await create(admin, 'beans', tea.categoryId)
    assert.deepEqual(await read(URL), [beans, otherBeans, coffee, tea])
    // Public paths ignore an invalid credential: the caller is treated as anonymous.
    const res = await ctx.api.inject({ url: URL, headers: { authorization: 'Bearer not-a-token' } })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().data, [beans, otherBeans, coffee, tea])
  })

  it('answers 404 CATEGORY_NOT_FOUND for an unknown category', async () => {
    for (const id of ['1', '9223372036854775807']) {
      assertError(await ctx.api.inject({ url: `${URL}/${id}` }), {
        code: 'CATEGORY_NOT_FOUND', instance: `${URL}/${id}`, detail: `Category ${id} does not exist.`,
      })
    }
  })

  it('refuses a category id that is not a positive 64-bit integer with 400 naming categoryId', async () => {
    for (const id of ['abc', '0', '-1', '01', '9223372036854775808']) {
      assertError(await ctx.api.inject({ url: `${URL}/${id}` }), {
        code: 'VALIDATION_FAILED',
        instance: `${URL}/${id}`,
        detail: PATH_INVALID,
        invalidParams: [{ field: 'categoryId', message: 'must be a positive 64-bit integer' }],
      })
    }
  })

  it('refuses unknown query parameters on both reads', async () => {
    const admin = await ctx.api.admin()
    const coffee = await create(admin, 'Coffee')
    for (const path of [URL, `${URL}/${coffee.categoryId}`]) {
      assertError(await ctx.api.inject({ url: `${path}?parentId=1` }), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The query has invalid parameters.',
        invalidParams: [{ field: 'parentId', message: 'is not a recognised query parameter' }],
      })
    }
  })
})
