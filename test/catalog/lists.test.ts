import assert from 'node:assert/strict'
import { beforeEach, describe, it } from 'node:test'
import { sql } from 'kysely'
import { prefixQuery } from '../../src/catalog/repository.js'
import type { Category, Product } from '../../src/catalog/schemas.js'
import { assertError, describeEachBackend, type Member, successData } from '../helper.js'

const LIST = '/api/v1/products'
const SEARCH = '/api/v1/products/search'
const ADMIN_LIST = '/api/v1/admin/products'
const QUERY_INVALID = 'The query has invalid parameters.'
const REQUEST_INVALID = 'The request has invalid parameters.'
const UNKNOWN_PARAM = 'is not a recognised query parameter'
const NOT_A_CURSOR = 'is not a cursor this API issued; pass the nextCursor of the previous slice'

type Query = Record<string, string | number>
type Caller = Pick<Member, 'headers'> | undefined
interface Slice { content: Product[], size: number, hasNext: boolean, nextCursor: string | null }
interface Page { content: Product[], page: number, size: number, totalElements: number, totalPages: number, first: boolean, last: boolean }
interface NewProduct { name: string, description?: string, price?: number, stockQuantity?: number, categoryId?: number, status?: 'ACTIVE' | 'INACTIVE' }

/** Query cases that every list refuses, with the field and message it names. */
type Invalid = [what: string, query: Query, detail: string, field: string, message: string | RegExp]

describeEachBackend('catalog lists', (ctx) => {
  /** GET `path` with the query properly encoded. */
  const get = (caller: Caller, path: string, query: Query = {}) => ctx.api.get(path, query, caller)

  /** The `data` of a 200 success envelope. */
  async function data<T> (caller: Caller, path: string, query: Query = {}): Promise<T> {
    return successData<T>(await get(caller, path, query))
  }

  /** The product ids of the public slice (anonymous caller), in the order listed. */
  const ids = async (path: string, query: Query = {}) => (await data<Slice>(undefined, path, query)).content.map(p => p.productId)

  /** The product ids of an admin page, in the order listed. */
  const adminIds = async (admin: Member, query: Query = {}) => (await data<Page>(admin, ADMIN_LIST, query)).content.map(p => p.productId)

  /** Follows nextCursor from the first slice to the last; returns every slice. */
  async function walk (path: string, query: Query): Promise<Slice[]> {
    const slices = [await data<Slice>(undefined, path, query)]
    while (slices.at(-1)!.nextCursor !== null) {
      assert.ok(slices.length < 50, 'cursor paging does not end')
      slices.push(await data<Slice>(undefined, path, { ...query, cursor: slices.at(-1)!.nextCursor! }))
    }
    return slices
  }

  // Every product a test creates is one second newer than the one before, so "newest first" does
  // not depend on the clock.
  let tick = 0
  beforeEach(() => { tick = 0 })

  /** Creates a product through the API and gives it the next creation time; returns what the API now shows. */
  async function create (admin: Member, fields: NewProduct, createdAt = new Date(Date.UTC(2026, 0, 1) + 1000 * tick++).toISOString()): Promise<Product> {
    const res = await ctx.api.inject({
      method: 'POST', url: ADMIN_LIST, headers: admin.headers, payload: { price: 1000, stockQuantity: 10, ...fields },
    })
    assert.equal(res.statusCode, 201, res.body)
    const product = res.json().data as Product
    await ctx.api.app.db.updateTable('products').set({ created_at: new Date(createdAt) }).where('id', '=', product.productId).execute()
    return { ...product, createdAt }
  }

  async function category (admin: Member, name: string, parentId?: number): Promise<Category> {
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/products/categories', headers: admin.headers, payload: { name, ...(parentId ? { parentId } : {}) },
    })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data
  }

  /** Coffee > Beans > Espresso, and Tea; a product in each, one inactive, one without a category. */
  async function catalogTree (admin: Member) {
    const coffee = await category(admin, 'Coffee')
    const beans = await category(admin, 'Beans', coffee.categoryId)
    const espresso = await category(admin, 'Espresso', beans.categoryId)
    const tea = await category(admin, 'Tea')
    const products = {
      machine: await create(admin, { name: 'Machine', categoryId: coffee.categoryId }),
      arabica: await create(admin, { name: 'Arabica', categoryId: beans.categoryId }),
      ristretto: await create(admin, { name: 'Ristretto', categoryId: espresso.categoryId }),
      retired: await create(admin, { name: 'Old blend', categoryId: espresso.categoryId, status: 'INACTIVE' }),
      sencha: await create(admin, { name: 'Sencha', categoryId: tea.categoryId }),
      cup: await create(admin, { name: 'Cup' }),
    }
    return { categories: { coffee, beans, espresso, tea }, products }
  }

  describe('public list and search', () => {
    it('lists active products only, newest first, as a slice; /search answers the same', async () => {
      const admin = await ctx.api.admin()
      // Creation times deliberately out of id order: the list follows createdAt, not the id.
      const mug = await create(admin, { name: 'Mug', price: 899 }, '2026-03-02T10:00:00.000Z')
      const beans = await create(admin, { name: 'Beans', description: 'Dark roast', price: 2450 }, '2026-03-03T10:00:00.000Z')
      const kettle = await create(admin, { name: 'Kettle', price: 3900 }, '2026-03-01T10:00:00.000Z')
      await create(admin, { name: 'Grinder', status: 'INACTIVE' }, '2026-03-04T10:00:00.000Z')
      for (const path of [LIST, SEARCH]) {
        const res = await get(undefined, path)
        assert.equal(res.statusCode, 200, res.body)
        assert.match(String(res.headers['content-type']), /^application\/json/)
        assert.deepEqual(res.json(), {
          success: true,
          data: { content: [beans, mug, kettle], size: 20, hasNext: false, nextCursor: null },
          error: null,
        })
      }
    })

    it('answers an empty slice when nothing matches, echoing the size', async () => {
      assert.deepEqual(await data(undefined, LIST), { content: [], size: 20, hasNext: false, nextCursor: null })
      assert.deepEqual(await data(undefined, SEARCH, { size: 5, q: 'nothing' }), { content: [], size: 5, hasNext: false, nextCursor: null })
    })

    it('breaks createdAt ties by id, highest first, also across slice boundaries', async () => {
      const admin = await ctx.api.admin()
      const products = []
      for (let i = 0; i < 5; i++) products.push(await create(admin, { name: `Item ${i}` }, '2026-05-05T05:05:05.555Z'))
      const expected = products.map(p => p.productId).sort((x, y) => y - x)
      assert.deepEqual(await ids(LIST), expected)
      const slices = await walk(LIST, { size: 2 })
      assert.deepEqual(slices.map(s => s.content.map(p => p.productId)), [expected.slice(0, 2), expected.slice(2, 4), expected.slice(4)])
    })

    it('walks every matching product exactly once with cursor paging, keeping the filters', async () => {
      const admin = await ctx.api.admin()
      // Groups of equal creation times that straddle the slice boundaries, and products the filter leaves out.
      const times = ['2026-02-01', '2026-02-01', '2026-02-02', '2026-02-02', '2026-02-02', '2026-02-03', '2026-02-03']
      const items: Product[] = []
      for (const [i, day] of times.entries()) {
        items.push(await create(admin, { name: `Item ${i}` }, `${day}T00:00:00.000Z`))
        await create(admin, { name: `Other ${i}` }, `${day}T00:00:00.000Z`)
      }
      await create(admin, { name: 'Item retired', status: 'INACTIVE' }, '2026-02-02T00:00:00.000Z')
      const expected = [...items].sort((x, y) => x.createdAt === y.createdAt ? y.productId - x.productId : x.createdAt < y.createdAt ? 1 : -1)
      for (const size of [1, 2, 3, 7]) {
        const slices = await walk(SEARCH, { q: 'item', size })
        assert.deepEqual(slices.flatMap(s => s.content), expected, `size ${size}`)
        assert.equal(slices.length, Math.ceil(7 / size), `size ${size}`)
        assert.ok(slices.every(s => s.size === size && s.hasNext === (s.nextCursor !== null)), `size ${size}`)
      }
    })

    it('returns 20 products by default and the rest through nextCursor; page paging is offset-based', async () => {
      const admin = await ctx.api.admin()
      const newestFirst: number[] = []
      for (let i = 0; i < 21; i++) newestFirst.unshift((await create(admin, { name: `Item ${i}` })).productId)
      const first = await data<Slice>(undefined, LIST)
      assert.deepEqual({ ...first, content: first.content.map(p => p.productId), nextCursor: typeof first.nextCursor },
        { content: newestFirst.slice(0, 20), size: 20, hasNext: true, nextCursor: 'string' })
      const last = await data<Slice>(undefined, LIST, { cursor: first.nextCursor! })
      assert.deepEqual({ ...last, content: last.content.map(p => p.productId) },
        { content: newestFirst.slice(20), size: 20, hasNext: false, nextCursor: null })

      assert.deepEqual(await ids(LIST, { page: 1, size: 8 }), newestFirst.slice(8, 16))
      const end = await data<Slice>(undefined, LIST, { page: 2, size: 8 })
      assert.deepEqual([end.content.map(p => p.productId), end.hasNext, end.nextCursor], [newestFirst.slice(16), false, null])
      assert.deepEqual(await ids(LIST, { page: 3, size: 8 }), [])
    })

    it('filters by category: the category and its subcategories at any depth; an unknown one gives nothing', async () => {
      const admin = await ctx.api.admin()
      const { categories: c, products: p } = await catalogTree(admin)
      const cases: Array<[number, Product[]]> = [
        [c.coffee.categoryId, [p.ristretto, p.arabica, p.machine]],
        [c.beans.categoryId, [p.ristretto, p.arabica]],
        [c.espresso.categoryId, [p.ristretto]],
        [c.tea.categoryId, [p.sencha]],
        [999, []],
      ]
      for (const [categoryId, expected] of cases) {
        for (const path of [LIST, SEARCH]) {
          assert.deepEqual(await ids(path, { categoryId }), expected.map(x => x.productId), `${path} categoryId=${categoryId}`)
        }
      }
      assert.deepEqual(await ids(LIST), [p.cup, p.sencha, p.ristretto, p.arabica, p.machine].map(x => x.productId))
    })

    it('searches by q: every word must start a word of the name or description, case-insensitively', async () => {
      const admin = await ctx.api.admin()
      const espresso = await create(admin, { name: 'Espresso beans', description: 'Dark roast from Brazil' })
      const decaf = await create(admin, { name: 'Decaf', description: 'Light roast, mild' })
      const muesli = await create(admin, { name: 'MÜSLI Crunch' })
      const mug = await create(admin, { name: 'Mug', description: 'Holds espresso-sized shots' })
      await create(admin, { name: 'Espresso cups', description: 'Dark roast', status: 'INACTIVE' })
      const cases: Array<[string, Product[]]> = [
        ['espr', [mug, espresso]],
        ['ESPR', [mug, espresso]],
        ['Espresso bea', [espresso]],
        ['roast', [decaf, espresso]],
        ['dark roast', [espresso]],
        ['  roast,  DARK!! ', [espresso]],
        ['dark mild', []],
        ['brazil', [espresso]],
        ['spresso', []],
        ['müsli', [muesli]],
        ['Müs cru', [muesli]],
        ['sized', [mug]],
      ]
      for (const [q, expected] of cases) {
        for (const path of [LIST, SEARCH]) {
          assert.deepEqual(await ids(path, { q }), expected.map(x => x.productId), `${path} q=${JSON.stringify(q)}`)
        }
      }
    })

    it('searches by q in letters that JavaScript and PostgreSQL lower-case differently (Turkish İ, Greek final Σ)', async () => {
      const admin = await ctx.api.admin()
      const istanbul = await create(admin, { name: 'İstanbul kahvesi' })
      const greek = await create(admin, { name: 'ΟΔΟΣ ΚΑΦΕΣ' })
      for (const [q, expected] of [['İstanbul', istanbul], ['İSTANBUL KAHVESİ', istanbul], ['ΟΔΟΣ', greek], ['ΚΑΦΕΣ', greek]] as const) {
        for (const path of [LIST, SEARCH]) {
          assert.deepEqual(await ids(path, { q }), [expected.productId], `${path} q=${JSON.stringify(q)}`)
        }
      }
    })

    it('filters by price, both bounds inclusive, and combines every filter', async () => {
      const admin = await ctx.api.admin()
      const coffee = await category(admin, 'Coffee')
      const free = await create(admin, { name: 'Sample', price: 0 })
      const cheap = await create(admin, { name: 'Beans small', price: 500, categoryId: coffee.categoryId })
      const mid = await create(admin, { name: 'Beans large', price: 1000, categoryId: coffee.categoryId })
      const dear = await create(admin, { name: 'Beans huge', price: 1500, categoryId: coffee.categoryId })
      await create(admin, { name: 'Beans hidden', price: 1000, categoryId: coffee.categoryId, status: 'INACTIVE' })
      const cases: Array<[Query, Product[]]> = [
        [{ minPrice: 500 }, [dear, mid, cheap]],
        [{ maxPrice: 1000 }, [mid, cheap, free]],
        [{ minPrice: 500, maxPrice: 1000 }, [mid, cheap]],
        [{ minPrice: 1000, maxPrice: 1000 }, [mid]],
        [{ minPrice: 0, maxPrice: 0 }, [free]],
        [{ minPrice: 1501 }, []],
        [{ q: 'beans', categoryId: coffee.categoryId, minPrice: 600, maxPrice: 1500 }, [dear, mid]],
      ]
      for (const [query, expected] of cases) {
        assert.deepEqual(await ids(SEARCH, query), expected.map(x => x.productId), JSON.stringify(query))
      }
    })

    const invalid: Invalid[] = [
      ['size 0', { size: 0 }, QUERY_INVALID, 'size', 'must be at least 1'],
      ['size 101', { size: 101 }, QUERY_INVALID, 'size', 'must be at most 100'],
      ['a size that is not a number', { size: 'ten' }, QUERY_INVALID, 'size', 'must be an integer'],
      ['a negative page', { page: -1 }, QUERY_INVALID, 'page', 'must be at least 0'],
      ['a page beyond 1000000 (its offset would overflow)', { page: 1_000_000_000_000 }, QUERY_INVALID, 'page', 'must be at most 1000000'],
      ['cursor together with page', { cursor: 'abc', page: 0 }, REQUEST_INVALID, 'cursor', 'cannot be combined with page; send one of them'],
      ['a cursor the API did not issue', { cursor: 'not-a-cursor' }, REQUEST_INVALID, 'cursor', NOT_A_CURSOR],
      ['a q without a letter or digit', { q: '!!!' }, REQUEST_INVALID, 'q', 'must contain at least one letter or digit'],
      ['a q of more than ten words', { q: 'espr '.repeat(10) + 'zzz' }, REQUEST_INVALID, 'q', 'must have at most 10 words'],
      ['an empty q', { q: '' }, QUERY_INVALID, 'q', 'must not be empty'],
      ['a 201-character q', { q: 'q'.repeat(201) }, QUERY_INVALID, 'q', 'must be at most 200 characters'],
      ['minPrice above maxPrice', { minPrice: 1001, maxPrice: 1000 }, REQUEST_INVALID, 'maxPrice', 'must be at least minPrice'],
      ['a negative minPrice', { minPrice: -1 }, QUERY_INVALID, 'minPrice', 'must be at least 0'],
      ['a fractional maxPrice', { maxPrice: 9.99 }, QUERY_INVALID, 'maxPrice', 'must be an integer'],
      ['categoryId 0', { categoryId: 0 }, QUERY_INVALID, 'categoryId', 'must be at least 1'],
      ['a categoryId that is not a number', { categoryId: 'coffee' }, QUERY_INVALID, 'categoryId', 'must be an integer'],
      ['a status filter (public lists show active products only)', { status: 'INACTIVE' }, QUERY_INVALID, 'status', UNKNOWN_PARAM],
      ['a sort (only admin lists sort)', { sort: 'price,asc' }, QUERY_INVALID, 'sort', UNKNOWN_PARAM],
    ]
    for (const [what, query, detail, field, message] of invalid) {
      it(`refuses ${what} with 400 on the list and on /search`, async () => {
        for (const path of [LIST, SEARCH]) {
          assertError(await get(undefined, path, query), { code: 'VALIDATION_FAILED', instance: path, detail, invalidParams: [{ field, message }] })
        }
      })
    }

    it('serves the text search from the GIN index products_search_idx', async () => {
      assert.equal(prefixQuery(['espr', 'bea']), 'espr:* & bea:*')
      const admin = await ctx.api.admin()
      await create(admin, { name: 'Espresso beans' })
      const plan = await ctx.api.app.db.transaction().execute(async (trx) => {
        // With a handful of rows the planner rightly prefers a sequential scan; turning that off
        // (for this transaction only) shows whether the index can serve the condition at all.
        await sql`set local enable_seqscan = off`.execute(trx)
        // The condition the repository builds for q=espr.
        const { rows } = await sql<{ 'QUERY PLAN': string }>`explain select id from products where search @@ to_tsquery('simple', 'espr:*')`.execute(trx)
        return rows.map(row => row['QUERY PLAN']).join('\n')
      })
      assert.match(plan, /products_search_idx/, plan)
    })
  })

  describe('admin list', () => {
    it('lists every product, inactive included, newest first, in the page shape', async () => {
      const admin = await ctx.api.admin()
      const mug = await create(admin, { name: 'Mug' })
      const retired = await create(admin, { name: 'Grinder', status: 'INACTIVE' })
      const beans = await create(admin, { name: 'Beans', description: 'Dark roast' })
      const res = await get(admin, ADMIN_LIST)
      assert.equal(res.statusCode, 200, res.body)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      assert.deepEqual(res.json(), {
        success: true,
        data: { content: [beans, retired, mug], page: 0, size: 20, totalElements: 3, totalPages: 1, first: true, last: true },
        error: null,
      })
    })

    it('answers an empty first page when there are no products', async () => {
      const admin = await ctx.api.admin()
      assert.deepEqual(await data(admin, ADMIN_LIST),
        { content: [], page: 0, size: 20, totalElements: 0, totalPages: 0, first: true, last: true })
    })

    it('refuses members with 403 and anonymous callers with 401', async () => {
      const member = await ctx.api.member()
      assertError(await get(member, ADMIN_LIST), { code: 'ACCESS_DENIED', instance: ADMIN_LIST, detail: 'This operation requires the ADMIN role.' })
      assertError(await get(undefined, ADMIN_LIST), {
        code: 'UNAUTHORIZED', instance: ADMIN_LIST, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
      })
    })

    it('pages with page and size, counting every matching product', async () => {
      const admin = await ctx.api.admin()
      const newestFirst: number[] = []
      for (let i = 0; i < 5; i++) newestFirst.unshift((await create(admin, { name: `Item ${i}`, status: i % 2 ? 'INACTIVE' : 'ACTIVE' })).productId)
      const page = async (query: Query) => {
        const { content, ...rest } = await data<Page>(admin, ADMIN_LIST, query)
        return { ids: content.map(p => p.productId), ...rest }
      }
      assert.deepEqual(await page({ size: 2 }),
        { ids: newestFirst.slice(0, 2), page: 0, size: 2, totalElements: 5, totalPages: 3, first: true, last: false })
      assert.deepEqual(await page({ size: 2, page: 1 }),
        { ids: newestFirst.slice(2, 4), page: 1, size: 2, totalElements: 5, totalPages: 3, first: false, last: false })
      assert.deepEqual(await page({ size: 2, page: 2 }),
        { ids: newestFirst.slice(4), page: 2, size: 2, totalElements: 5, totalPages: 3, first: false, last: true })
      assert.deepEqual(await page({ size: 2, page: 3 }),
        { ids: [], page: 3, size: 2, totalElements: 5, totalPages: 3, first: false, last: true })
      assert.deepEqual(await page({ size: 5 }),
        { ids: newestFirst, page: 0, size: 5, totalElements: 5, totalPages: 1, first: true, last: true })
    })

    it('filters by status, category subtree, q and price, and counts only the matches', async () => {
      const admin = await ctx.api.admin()
      const { categories: c, products: p } = await catalogTree(admin)
      const cheap = await create(admin, { name: 'Espresso sample', price: 50, status: 'INACTIVE' })
      const cases: Array<[Query, Product[]]> = [
        [{ status: 'INACTIVE' }, [cheap, p.retired]],
        [{ status: 'ACTIVE' }, [p.cup, p.sencha, p.ristretto, p.arabica, p.machine]],
        [{ categoryId: c.beans.categoryId }, [p.retired, p.ristretto, p.arabica]],
        [{ categoryId: c.beans.categoryId, status: 'ACTIVE' }, [p.ristretto, p.arabica]],
        [{ categoryId: 999 }, []],
        [{ q: 'old BLE' }, [p.retired]],
        [{ q: 'espresso' }, [cheap]],
        [{ maxPrice: 50 }, [cheap]],
        [{ minPrice: 51, q: 'c' }, [p.cup]],
      ]
      for (const [query, expected] of cases) {
        const page = await data<Page>(admin, ADMIN_LIST, query)
        assert.deepEqual([page.content, page.totalElements], [expected, expected.length], JSON.stringify(query))
      }
    })

    it('sorts by createdAt, name, price or stockQuantity (newest first by default, ascending when no direction is given), breaking ties by id in the same direction', async () => {
      const admin = await ctx.api.admin()
      // Ties in every column: b and c share a creation time, a and c a price, a and b a stock, b and d a name.
      const a = await create(admin, { name: 'Bravo', price: 300, stockQuantity: 5 }, '2026-04-01T00:00:00.000Z')
      const b = await create(admin, { name: 'Alpha', price: 200, stockQuantity: 5 }, '2026-04-02T00:00:00.000Z')
      const c = await create(admin, { name: 'Charlie', price: 300, stockQuantity: 1, status: 'INACTIVE' }, '2026-04-02T00:00:00.000Z')
      const d = await create(admin, { name: 'Alpha', price: 100, stockQuantity: 9 }, '2026-04-03T00:00:00.000Z')
      const cases: Array<[string | undefined, Product[]]> = [
        [undefined, [d, c, b, a]],
        ['createdAt', [a, b, c, d]], // a field alone sorts ascending
        ['createdAt,desc', [d, c, b, a]],
        ['createdAt,asc', [a, b, c, d]],
        ['name', [b, d, a, c]],
        ['name,desc', [c, a, d, b]],
        ['name,asc', [b, d, a, c]],
        ['price,asc', [d, b, a, c]],
        ['price,desc', [c, a, b, d]],
        ['stockQuantity,asc', [c, a, b, d]],
        ['stockQuantity,desc', [d, b, a, c]],
      ]
      for (const [sort, expected] of cases) {
        assert.deepEqual(await adminIds(admin, sort ? { sort } : {}), expected.map(x => x.productId), `sort=${sort}`)
      }
      // The order holds across pages too.
      assert.deepEqual(await adminIds(admin, { sort: 'price,desc', size: 1, page: 1 }), [a.productId])
    })

    const invalid: Invalid[] = [
      ['an unknown sort field', { sort: 'id' }, QUERY_INVALID, 'sort', /^must be one of /],
      ['an unknown sort direction', { sort: 'price,up' }, QUERY_INVALID, 'sort', /^must be one of /],
      ['a cursor (admin lists are pages)', { cursor: 'abc' }, QUERY_INVALID, 'cursor', UNKNOWN_PARAM],
      ['an unknown status', { status: 'DELETED' }, QUERY_INVALID, 'status', 'must be one of ACTIVE, INACTIVE'],
      ['a negative page', { page: -1 }, QUERY_INVALID, 'page', 'must be at least 0'],
      ['a page beyond 1000000 (its offset would overflow)', { page: '461168601842738790' }, QUERY_INVALID, 'page', 'must be at most 1000000'],
      ['size 101', { size: 101 }, QUERY_INVALID, 'size', 'must be at most 100'],
      ['minPrice above maxPrice', { minPrice: 2, maxPrice: 1 }, REQUEST_INVALID, 'maxPrice', 'must be at least minPrice'],
      ['a q without a letter or digit', { q: '-- ;' }, REQUEST_INVALID, 'q', 'must contain at least one letter or digit'],
    ]
    for (const [what, query, detail, field, message] of invalid) {
      it(`refuses ${what} with 400`, async () => {
        const admin = await ctx.api.admin()
        assertError(await get(admin, ADMIN_LIST, query), { code: 'VALIDATION_FAILED', instance: ADMIN_LIST, detail, invalidParams: [{ field, message }] })
      })
    }
  })
})
