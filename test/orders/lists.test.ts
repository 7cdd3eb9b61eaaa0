import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { OrderDetail, OrderSummary } from '../../src/orders/schemas.js'
import { assertError, describeEachBackend, successData, type Api, type Member, summaryOf } from '../helper.js'

const LIST = '/api/v1/orders'
const SEARCH = '/api/v1/orders/search'
const QUERY_INVALID = 'The query has invalid parameters.'
const REQUEST_INVALID = 'The request has invalid parameters.'
const NOT_A_CURSOR = 'is not a cursor this API issued; pass the nextCursor of the previous slice'
const BAD_TIMESTAMP = 'must be an RFC 3339 timestamp with Z or an offset, in the years 0001 to 9999, e.g. 2026-11-22T09:30:00.000Z'
const BAD_STATUS = 'must be one or more of PENDING, PLACED, CONFIRMED, DELIVERED, CANCELLED, DELETED, comma-separated'
const UNKNOWN_PARAM = 'is not a recognised query parameter'

type Ctx = { readonly api: Api }
type Query = Record<string, string | number>
interface Slice { content: OrderSummary[], size: number, hasNext: boolean, nextCursor: string | null }

/** GET `path` as `member` (or anonymously) with the query encoded. */
const get = (ctx: Ctx, member: Member | undefined, path: string, query: Query = {}) => ctx.api.get(path, query, member)

/** A 200 slice. */
async function slice (ctx: Ctx, member: Member, path: string, query: Query = {}): Promise<Slice> {
  return successData<Slice>(await get(ctx, member, path, query))
}

/** The order ids of a 200 slice, in the order listed. */
async function ids (ctx: Ctx, member: Member, path: string, query: Query = {}): Promise<number[]> {
  return (await slice(ctx, member, path, query)).content.map(order => order.orderId)
}

/** Follows nextCursor from the first slice to the last; returns every slice. */
async function walk (ctx: Ctx, member: Member, path: string, query: Query): Promise<Slice[]> {
  const slices = [await slice(ctx, member, path, query)]
  while (slices.at(-1)!.nextCursor !== null) {
    assert.ok(slices.length < 50, 'cursor paging does not end')
    slices.push(await slice(ctx, member, path, { ...query, cursor: slices.at(-1)!.nextCursor! }))
  }
  return slices
}

async function place (ctx: Ctx, member: Member, items: Array<{ productId: number, quantity: number }>): Promise<OrderDetail> {
  return await ctx.api.order(member, items) as unknown as OrderDetail
}

/** Gives orders known creation times, so that "newest first" and date filters are deterministic. */
async function setCreatedAt (ctx: Ctx, order: OrderDetail, createdAt: string): Promise<OrderDetail> {
  await ctx.api.app.db.updateTable('orders').set({ created_at: new Date(createdAt) }).where('id', '=', order.orderId).execute()
  return { ...order, createdAt }
}

async function patchVerb (ctx: Ctx, member: Member, orderId: number, verb: 'confirm' | 'cancel' | 'delete'): Promise<void> {
  const res = await ctx.api.inject({ method: 'PATCH', url: `${LIST}/${orderId}/${verb}`, headers: member.headers })
  assert.equal(res.statusCode, 200, res.body)
}

function cursorOf (value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

describeEachBackend('GET /api/v1/orders', (ctx) => {
  /** A member with `count` orders, oldest first, one second apart from 2026-01-01T00:00:00Z. */
  async function memberWithOrders (count: number) {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { price: 1000, stockQuantity: 10_000 })
    const orders: OrderDetail[] = []
    for (let i = 0; i < count; i++) {
      const order = await place(ctx, member, [{ productId: beans.productId, quantity: 1 + i }])
      orders.push(await setCreatedAt(ctx, order, new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString()))
    }
    return { admin, member, beans, orders, newestFirst: orders.map(o => o.orderId).reverse() }
  }

  it("lists only the caller's own orders, newest first by createdAt, as a slice of summaries", async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const other = await ctx.api.member('other')
    const beans = await ctx.api.product(admin, { price: 1250 })
    const mugs = await ctx.api.product(admin, { price: 899 })
    // Creation times deliberately out of id order: the list follows createdAt, not the id.
    const a = await setCreatedAt(ctx, await place(ctx, member, [{ productId: beans.productId, quantity: 1 }]), '2026-03-02T10:00:00.000Z')
    const b = await setCreatedAt(ctx, await place(ctx, member, [{ productId: beans.productId, quantity: 2 }, { productId: mugs.productId, quantity: 1 }]), '2026-03-03T10:00:00.000Z')
    const c = await setCreatedAt(ctx, await place(ctx, member, [{ productId: mugs.productId, quantity: 3 }]), '2026-03-01T10:00:00.000Z')
    await place(ctx, other, [{ productId: beans.productId, quantity: 1 }])

    const res = await get(ctx, member, LIST)
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), {
      success: true,
      data: { content: [summaryOf(b), summaryOf(a), summaryOf(c)], size: 20, hasNext: false, nextCursor: null },
      error: null,
    })
    assert.deepEqual(Object.keys(res.json().data.content[0]).sort(),
      ['balanceDue', 'createdAt', 'currency', 'customerId', 'fulfillmentStatus', 'itemCount', 'orderId', 'paidAmount',
        'paymentStatus', 'refundedAmount', 'status', 'totalAmount'])
    assert.deepEqual(res.json().data.content.map((o: OrderSummary) => [o.itemCount, o.totalAmount]), [[2, 3399], [1, 1250], [1, 2697]])
  })

  it("shows an order an admin placed for a member in the member's list, not in the admin's", async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin)
    const res = await ctx.api.inject({
      method: 'POST', url: LIST, headers: admin.headers, payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 1 }] },
    })
    assert.equal(res.statusCode, 201, res.body)
    assert.deepEqual(await ids(ctx, member, LIST), [res.json().data.orderId])
    assert.deepEqual(await ids(ctx, admin, LIST), [])
  })

  it('answers an empty slice when the caller has no orders', async () => {
    const member = await ctx.api.member()
    assert.deepEqual(await slice(ctx, member, LIST), { content: [], size: 20, hasNext: false, nextCursor: null })
    assert.deepEqual(await slice(ctx, member, LIST, { size: 7 }), { content: [], size: 7, hasNext: false, nextCursor: null })
  })

  it('leaves soft-deleted orders out, but keeps cancelled ones', async () => {
    const { member, orders } = await memberWithOrders(3)
    await patchVerb(ctx, member, orders[0]!.orderId, 'cancel')
    await patchVerb(ctx, member, orders[1]!.orderId, 'delete')
    const data = await slice(ctx, member, LIST)
    assert.deepEqual(data.content, [summaryOf(orders[2]!), summaryOf(orders[0]!, 'CANCELLED')])
  })

  it('breaks createdAt ties by orderId, highest first, also across slice boundaries', async () => {
    const { member, orders } = await memberWithOrders(5)
    for (const order of orders) await setCreatedAt(ctx, order, '2026-05-05T05:05:05.555Z')
    const expected = orders.map(o => o.orderId).sort((x, y) => y - x)
    assert.deepEqual(await ids(ctx, member, LIST), expected)
    const slices = await walk(ctx, member, LIST, { size: 2 })
    assert.deepEqual(slices.map(s => s.content.map(o => o.orderId)), [expected.slice(0, 2), expected.slice(2, 4), expected.slice(4)])
  })

  it('returns 20 orders by default and the rest through nextCursor', async () => {
    const { member, newestFirst } = await memberWithOrders(21)
    const first = await slice(ctx, member, LIST)
    assert.equal(first.size, 20)
    assert.equal(first.hasNext, true)
    assert.equal(typeof first.nextCursor, 'string')
    assert.deepEqual(first.content.map(o => o.orderId), newestFirst.slice(0, 20))
    const last = await slice(ctx, member, LIST, { cursor: first.nextCursor! })
    assert.deepEqual(last, { ...last, size: 20, hasNext: false, nextCursor: null })
    assert.deepEqual(last.content.map(o => o.orderId), newestFirst.slice(20))
  })

  it('echoes the requested size and ends with nextCursor null, also when the last slice is exactly full', async () => {
    const { member, newestFirst } = await memberWithOrders(4)
    const first = await slice(ctx, member, LIST, { size: 2 })
    assert.deepEqual([first.size, first.hasNext, first.content.length], [2, true, 2])
    assert.notEqual(first.nextCursor, null)
    const second = await slice(ctx, member, LIST, { size: 2, cursor: first.nextCursor! })
    assert.deepEqual({ ...second, content: second.content.map(o => o.orderId) },
      { content: newestFirst.slice(2), size: 2, hasNext: false, nextCursor: null })
    const roomy = await slice(ctx, member, LIST, { size: 100 })
    assert.deepEqual([roomy.size, roomy.hasNext, roomy.nextCursor, roomy.content.length], [100, false, null, 4])
    const single = await slice(ctx, member, LIST, { size: 1 })
    assert.deepEqual([single.size, single.hasNext, single.content.map(o => o.orderId)], [1, true, newestFirst.slice(0, 1)])
  })

  it('walks every order exactly once with cursor paging', async () => {
    const { member, orders } = await memberWithOrders(7)
    // Groups of equal creation times that straddle the slice boundaries.
    const times = ['2026-02-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-02-02T00:00:00.000Z',
      '2026-02-02T00:00:00.000Z', '2026-02-02T00:00:00.000Z', '2026-02-03T00:00:00.000Z', '2026-02-03T00:00:00.000Z']
    for (const [i, order] of orders.entries()) await setCreatedAt(ctx, order, times[i]!)
    const expected = orders.map((o, i) => ({ id: o.orderId, at: times[i]! }))
      .sort((x, y) => (x.at === y.at ? y.id - x.id : x.at < y.at ? 1 : -1)).map(o => o.id)
    for (const size of [1, 2, 3, 6, 7]) {
      const slices = await walk(ctx, member, LIST, { size })
      const walked = slices.flatMap(s => s.content.map(o => o.orderId))
      assert.deepEqual(walked, expected, `size ${size}`)
      assert.equal(slices.length, Math.ceil(7 / size), `size ${size}`)
    }
  })

  it('keeps cursor paging stable while new orders are placed: no duplicates, no gaps, no newcomers', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { stockQuantity: 1000 })
    const existing: number[] = []
    for (let i = 0; i < 5; i++) existing.unshift((await place(ctx, member, [{ productId: beans.productId, quantity: 1 }])).orderId)

    const first = await slice(ctx, member, LIST, { size: 2 })
    const newcomers = [
      (await place(ctx, member, [{ productId: beans.productId, quantity: 1 }])).orderId,
      (await place(ctx, member, [{ productId: beans.productId, quantity: 1 }])).orderId,
    ]
    const second = await slice(ctx, member, LIST, { size: 2, cursor: first.nextCursor! })
    newcomers.push((await place(ctx, member, [{ productId: beans.productId, quantity: 1 }])).orderId)
    const third = await slice(ctx, member, LIST, { size: 2, cursor: second.nextCursor! })

    assert.deepEqual([first, second, third].map(s => s.content.map(o => o.orderId)), [existing.slice(0, 2), existing.slice(2, 4), existing.slice(4)])
    assert.equal(third.nextCursor, null)
    assert.deepEqual(await ids(ctx, member, LIST, { size: 3 }), [...newcomers].reverse())
  })

  it('pages by zero-based page number', async () => {
    const { member, newestFirst } = await memberWithOrders(5)
    const pages = await Promise.all([0, 1, 2, 3].map(page => slice(ctx, member, LIST, { size: 2, page })))
    assert.deepEqual(pages.map(p => p.content.map(o => o.orderId)), [newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4), []])
    assert.deepEqual(pages.map(p => [p.size, p.hasNext, p.nextCursor === null]), [[2, true, false], [2, true, false], [2, false, true], [2, false, true]])
    assert.deepEqual(await ids(ctx, member, LIST, { size: 2 }), newestFirst.slice(0, 2), 'page defaults to 0')
  })

  it("continues an offset slice with its nextCursor to the following page's orders", async () => {
    const { member, newestFirst } = await memberWithOrders(5)
    const page1 = await slice(ctx, member, LIST, { size: 2, page: 1 })
    assert.deepEqual(await ids(ctx, member, LIST, { size: 2, cursor: page1.nextCursor! }), newestFirst.slice(4))
  })

  it('filters by one status and by several comma-separated ones; status=DELETED finds nothing', async () => {
    const { member, orders } = await memberWithOrders(5)
    const [placed, confirmed, cancelled, deleted, placedToo] = orders.map(o => o.orderId) as [number, number, number, number, number]
    await patchVerb(ctx, member, confirmed, 'confirm')
    await patchVerb(ctx, member, cancelled, 'cancel')
    await patchVerb(ctx, member, deleted, 'delete')
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'PLACED' }), [placedToo, placed])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'CANCELLED' }), [cancelled])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'PLACED,CONFIRMED' }), [placedToo, confirmed, placed])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'CONFIRMED,CANCELLED,DELIVERED' }), [cancelled, confirmed])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'DELIVERED' }), [])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'DELETED' }), [])
    assert.deepEqual(await ids(ctx, member, LIST, { status: 'DELETED,CANCELLED' }), [cancelled])
    const statuses = (await slice(ctx, member, LIST, { status: 'CONFIRMED' })).content.map(o => o.status)
    assert.deepEqual(statuses, ['CONFIRMED'])
  })

  it('pages through a status filter with the cursor', async () => {
    const { member, orders } = await memberWithOrders(6)
    for (const order of [orders[1]!, orders[3]!]) await patchVerb(ctx, member, order.orderId, 'cancel')
    const slices = await walk(ctx, member, LIST, { status: 'PLACED', size: 1 })
    assert.deepEqual(slices.flatMap(s => s.content.map(o => o.orderId)), [orders[5]!, orders[4]!, orders[2]!, orders[0]!].map(o => o.orderId))
  })

  const badQueries: Array<[string, Query, string, Array<{ field: string, message: string }>]> = [
    ['size 0', { size: 0 }, QUERY_INVALID, [{ field: 'size', message: 'must be at least 1' }]],
    ['size 101', { size: 101 }, QUERY_INVALID, [{ field: 'size', message: 'must be at most 100' }]],
    ['a non-numeric size', { size: 'abc' }, QUERY_INVALID, [{ field: 'size', message: 'must be an integer' }]],
    ['a fractional size', { size: '2.5' }, QUERY_INVALID, [{ field: 'size', message: 'must be an integer' }]],
    ['a hexadecimal size', { size: '0x10' }, QUERY_INVALID, [{ field: 'size', message: 'must be an integer' }]],
    ['a size with an exponent', { size: '1e1' }, QUERY_INVALID, [{ field: 'size', message: 'must be an integer' }]],
    ['a size with a space', { size: ' 5' }, QUERY_INVALID, [{ field: 'size', message: 'must be an integer' }]],
    ['page -1', { page: -1 }, QUERY_INVALID, [{ field: 'page', message: 'must be at least 0' }]],
    ['a non-numeric page', { page: 'first' }, QUERY_INVALID, [{ field: 'page', message: 'must be an integer' }]],
    ['a bad size and a bad page together', { size: 0, page: -1 }, QUERY_INVALID,
      [{ field: 'size', message: 'must be at least 1' }, { field: 'page', message: 'must be at least 0' }]],
    ['cursor together with page', { cursor: cursorOf(['2026-01-01T00:00:00.000Z', 5]), page: 0 }, REQUEST_INVALID,
      [{ field: 'cursor', message: 'cannot be combined with page; send one of them' }]],
    ['a garbage cursor', { cursor: 'not-a-cursor' }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor of the wrong shape', { cursor: cursorOf({ id: 5 }) }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor with no date', { cursor: cursorOf(['yesterday', 5]) }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor with id 0', { cursor: cursorOf(['2026-01-01T00:00:00.000Z', 0]) }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor with a text id', { cursor: cursorOf(['2026-01-01T00:00:00.000Z', '5']) }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor dated in the year 0000', { cursor: cursorOf(['0000-01-01T00:00:00.000Z', 5]) }, REQUEST_INVALID, [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['a cursor dated at the end of JavaScript time', { cursor: cursorOf(['+275760-09-13T00:00:00.000Z', 5]) }, REQUEST_INVALID,
      [{ field: 'cursor', message: NOT_A_CURSOR }]],
    ['an empty cursor', { cursor: '' }, QUERY_INVALID, [{ field: 'cursor', message: 'must not be empty' }]],
    ['an unknown status', { status: 'SHIPPED' }, REQUEST_INVALID, [{ field: 'status', message: BAD_STATUS }]],
    ['an unknown status among known ones', { status: 'PLACED,NOPE' }, REQUEST_INVALID, [{ field: 'status', message: BAD_STATUS }]],
    ['an empty status', { status: '' }, QUERY_INVALID, [{ field: 'status', message: 'must not be empty' }]],
    ['an unknown parameter', { colour: 'blue' }, QUERY_INVALID, [{ field: 'colour', message: UNKNOWN_PARAM }]],
    ['sort, which only admin lists have', { sort: 'createdAt,desc' }, QUERY_INVALID, [{ field: 'sort', message: UNKNOWN_PARAM }]],
    ['a search-only filter (createdFrom)', { createdFrom: '2026-01-01T00:00:00Z' }, QUERY_INVALID, [{ field: 'createdFrom', message: UNKNOWN_PARAM }]],
    ['a search-only filter (minTotal)', { minTotal: 100 }, QUERY_INVALID, [{ field: 'minTotal', message: UNKNOWN_PARAM }]],
  ]
  for (const [what, query, detail, invalidParams] of badQueries) {
    it(`rejects ${what} with 400 naming the parameter`, async () => {
      const member = await ctx.api.member()
      assertError(await get(ctx, member, LIST, query), { code: 'VALIDATION_FAILED', instance: LIST, detail, invalidParams })
    })
  }

  it('refuses anonymous callers with 401, before looking at the query', async () => {
    for (const query of [{}, { size: 0 }, { colour: 'blue' }] as Query[]) {
      const res = await get(ctx, undefined, LIST, query)
      assertError(res, { code: 'UNAUTHORIZED', instance: LIST, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.' })
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
    }
  })
}, { env: { MAX_UNPAID_ORDERS: '0' } }) // a member places 21 unpaid orders to fill two pages

describeEachBackend('GET /api/v1/orders/search', (ctx) => {
  /**
   * A member with four orders created at midnight UTC on 1–4 January 2026, totals 1000, 2000, 3000
   * and 4000; the first two contain beans, the last two mugs, the third both.
   */
  async function fixture () {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000 })
    const mugs = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000 })
    const items = [
      [{ productId: beans.productId, quantity: 1 }],
      [{ productId: beans.productId, quantity: 2 }],
      [{ productId: beans.productId, quantity: 1 }, { productId: mugs.productId, quantity: 2 }],
      [{ productId: mugs.productId, quantity: 4 }],
    ]
    const orders: OrderDetail[] = []
    for (const [i, orderItems] of items.entries()) {
      orders.push(await setCreatedAt(ctx, await place(ctx, member, orderItems), `2026-01-0${i + 1}T00:00:00.000Z`))
    }
    const [jan1, jan2, jan3, jan4] = orders.map(o => o.orderId) as [number, number, number, number]
    return { admin, member, beans, mugs, orders, jan1, jan2, jan3, jan4 }
  }

  it('with no filters, lists the same as GET /orders', async () => {
    const { member, orders } = await fixture()
    const data = await slice(ctx, member, SEARCH)
    assert.deepEqual(data, { content: [...orders].reverse().map(o => summaryOf(o)), size: 20, hasNext: false, nextCursor: null })
    assert.deepEqual(data, await slice(ctx, member, LIST))
  })

  it('filters by createdFrom (inclusive) and createdTo (exclusive), to the millisecond', async () => {
    const { member, jan1, jan2, jan3, jan4 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      [{ createdFrom: '2026-01-02T00:00:00.000Z' }, [jan4, jan3, jan2]],
      [{ createdFrom: '2026-01-02T00:00:00.001Z' }, [jan4, jan3]],
      [{ createdFrom: '2026-01-01T23:59:59.999Z' }, [jan4, jan3, jan2]],
      [{ createdTo: '2026-01-03T00:00:00.000Z' }, [jan2, jan1]],
      [{ createdTo: '2026-01-03T00:00:00.001Z' }, [jan3, jan2, jan1]],
      [{ createdFrom: '2026-01-02T00:00:00Z', createdTo: '2026-01-04T00:00:00Z' }, [jan3, jan2]],
      [{ createdFrom: '2026-01-05T00:00:00Z' }, []],
      [{ createdTo: '2026-01-01T00:00:00Z' }, []],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(ctx, member, SEARCH, query), expected, JSON.stringify(query))
  })

  it('reads createdFrom and createdTo with explicit offsets as the instants they name', async () => {
    const { member, jan1, jan2, jan3, jan4 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      // 2026-01-02T00:00Z exactly: inclusive
      [{ createdFrom: '2026-01-02T02:00:00+02:00' }, [jan4, jan3, jan2]],
      // 2026-01-01T23:00Z (read as UTC it would drop jan2)
      [{ createdFrom: '2026-01-02T01:00:00+02:00' }, [jan4, jan3, jan2]],
      // 2026-01-03T00:00Z exactly
      [{ createdFrom: '2026-01-03T05:30:00.000+05:30' }, [jan4, jan3]],
      // 2026-01-03T00:00Z exactly: exclusive
      [{ createdTo: '2026-01-02T21:00:00-03:00' }, [jan2, jan1]],
      // 2026-01-03T01:00Z (read as UTC it would drop jan3)
      [{ createdTo: '2026-01-02T22:00:00-03:00' }, [jan3, jan2, jan1]],
      [{ createdFrom: '2026-01-02T00:00:00+00:00', createdTo: '2026-01-03T23:59:59.999-00:00' }, [jan3, jan2]],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(ctx, member, SEARCH, query), expected, JSON.stringify(query))
  })

  const badTimestamps: Array<[string, string]> = [
    ['without an offset', '2026-01-01T00:00:00'],
    ['a date only', '2026-01-01'],
    ['with a space instead of T', '2026-01-01 00:00:00Z'],
    ['epoch milliseconds', '1767225600000'],
    ['in month 13', '2026-13-01T00:00:00Z'],
    ['with an offset without a colon', '2026-01-01T00:00:00+0200'],
    ['not a timestamp at all', 'yesterday'],
    ['in the year 0000', '0000-01-01T00:00:00Z'],
    ['past the year 9999 in UTC', '9999-12-31T23:59:59-01:00'],
  ]
  for (const [what, value] of badTimestamps) {
    it(`rejects a timestamp ${what} with 400 naming the field`, async () => {
      const member = await ctx.api.member()
      for (const field of ['createdFrom', 'createdTo']) {
        assertError(await get(ctx, member, SEARCH, { [field]: value }), {
          code: 'VALIDATION_FAILED', instance: SEARCH, detail: QUERY_INVALID, invalidParams: [{ field, message: BAD_TIMESTAMP }],
        })
      }
    })
  }

  it('rejects calendar-impossible timestamps (30 February, hour 24) with 400 naming the field', async () => {
    const member = await ctx.api.member()
    const values = ['2026-02-30T00:00:00Z', '2026-04-31T00:00:00Z', '2026-01-01T24:00:00Z']
    const statuses = await Promise.all(values.map(async value => [value, (await get(ctx, member, SEARCH, { createdFrom: value })).statusCode]))
    assert.deepEqual(statuses, values.map(value => [value, 400]))
    for (const value of values) {
      assertError(await get(ctx, member, SEARCH, { createdFrom: value }), {
        code: 'VALIDATION_FAILED', instance: SEARCH, detail: QUERY_INVALID, invalidParams: [{ field: 'createdFrom', message: BAD_TIMESTAMP }],
      })
    }
  })

  it('names both fields when both timestamps are bad', async () => {
    const member = await ctx.api.member()
    assertError(await get(ctx, member, SEARCH, { createdFrom: '2026-01-01', createdTo: '2026-01-02T00:00:00' }), {
      code: 'VALIDATION_FAILED',
      instance: SEARCH,
      detail: QUERY_INVALID,
      invalidParams: [{ field: 'createdFrom', message: BAD_TIMESTAMP }, { field: 'createdTo', message: BAD_TIMESTAMP }],
    })
  })

  it('filters by minTotal and maxTotal, both inclusive', async () => {
    const { member, jan1, jan2, jan3, jan4 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      [{ minTotal: 2000 }, [jan4, jan3, jan2]],
      [{ minTotal: 2001 }, [jan4, jan3]],
      [{ maxTotal: 3000 }, [jan3, jan2, jan1]],
      [{ maxTotal: 2999 }, [jan2, jan1]],
      [{ minTotal: 2000, maxTotal: 2000 }, [jan2]],
      [{ minTotal: 2000, maxTotal: 3000 }, [jan3, jan2]],
      [{ minTotal: 0 }, [jan4, jan3, jan2, jan1]],
      [{ maxTotal: 999 }, []],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(ctx, member, SEARCH, query), expected, JSON.stringify(query))
  })

  it('refuses ranges that end before they start with 400 naming the second field (CONTRACT §11)', async () => {
    const member = await ctx.api.member()
    const cases: Array<[Query, string, string]> = [
      [{ minTotal: 3000, maxTotal: 2000 }, 'maxTotal', 'must be at least minTotal'],
      [{ createdFrom: '2026-01-02T00:00:00Z', createdTo: '2026-01-02T00:00:00Z' }, 'createdTo', 'must be after createdFrom'],
      [{ createdFrom: '2026-01-02T00:00:00Z', createdTo: '2026-01-02T01:00:00+02:00' }, 'createdTo', 'must be after createdFrom'],
    ]
    for (const [query, field, message] of cases) {
      assertError(await get(ctx, member, SEARCH, query), { code: 'VALIDATION_FAILED', instance: SEARCH, detail: REQUEST_INVALID, invalidParams: [{ field, message }] })
    }
  })

  it('filters by productId: the orders with that product among their items', async () => {
    const { member, beans, mugs, jan1, jan2, jan3, jan4 } = await fixture()
    assert.deepEqual(await ids(ctx, member, SEARCH, { productId: beans.productId }), [jan3, jan2, jan1])
    assert.deepEqual(await ids(ctx, member, SEARCH, { productId: mugs.productId }), [jan4, jan3])
    assert.deepEqual(await ids(ctx, member, SEARCH, { productId: 999_999 }), [])
  })

  it('combines filters, and pages through the result with the cursor', async () => {
    const { member, beans, jan1, jan2, jan3, jan4 } = await fixture()
    await patchVerb(ctx, member, jan2, 'cancel')
    const cases: Array<[Query, number[]]> = [
      [{ productId: beans.productId, status: 'PLACED' }, [jan3, jan1]],
      [{ productId: beans.productId, minTotal: 2000 }, [jan3, jan2]],
      [{ createdFrom: '2026-01-02T00:00:00Z', maxTotal: 3000 }, [jan3, jan2]],
      [{ createdFrom: '2026-01-02T00:00:00Z', createdTo: '2026-01-04T00:00:00Z', status: 'CANCELLED' }, [jan2]],
      [{ createdTo: '2026-01-04T00:00:00.001Z', minTotal: 1000, maxTotal: 4000, status: 'PLACED,CONFIRMED', productId: beans.productId }, [jan3, jan1]],
      [{ createdFrom: '2026-01-01T00:00:00Z', minTotal: 4000, productId: beans.productId }, []],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(ctx, member, SEARCH, query), expected, JSON.stringify(query))

    const walked = await walk(ctx, member, SEARCH, { createdFrom: '2026-01-01T00:00:00.001Z', size: 1 })
    assert.deepEqual(walked.map(s => s.content.map(o => o.orderId)), [[jan4], [jan3], [jan2]])
    const paged = await Promise.all([0, 1].map(page => ids(ctx, member, SEARCH, { minTotal: 2000, size: 2, page })))
    assert.deepEqual(paged, [[jan4, jan3], [jan2]])
  })

  it("finds only the caller's own orders and never deleted ones", async () => {
    const { admin, member, beans, jan1, jan2, jan3, jan4 } = await fixture()
    const other = await ctx.api.member('other')
    const theirs = await place(ctx, other, [{ productId: beans.productId, quantity: 1 }])
    const adminsOwn = await place(ctx, admin, [{ productId: beans.productId, quantity: 1 }])
    await patchVerb(ctx, member, jan3, 'delete')
    assert.deepEqual(await ids(ctx, member, SEARCH, { productId: beans.productId }), [jan2, jan1])
    assert.deepEqual(await ids(ctx, member, SEARCH, { createdFrom: '2026-01-01T00:00:00Z' }), [jan4, jan2, jan1])
    assert.deepEqual(await ids(ctx, member, SEARCH, { status: 'DELETED' }), [])
    assert.deepEqual(await ids(ctx, other, SEARCH, { productId: beans.productId }), [theirs.orderId])
    assert.deepEqual(await ids(ctx, admin, SEARCH, { productId: beans.productId }), [adminsOwn.orderId])
  })

  const badQueries: Array<[string, Query, Array<{ field: string, message: string }>]> = [
    ['a negative minTotal', { minTotal: -1 }, [{ field: 'minTotal', message: 'must be at least 0' }]],
    ['a fractional maxTotal', { maxTotal: '12.5' }, [{ field: 'maxTotal', message: 'must be an integer' }]],
    ['a productId of 0', { productId: 0 }, [{ field: 'productId', message: 'must be at least 1' }]],
    ['a non-numeric productId', { productId: 'beans' }, [{ field: 'productId', message: 'must be an integer' }]],
    ['size 101', { size: 101 }, [{ field: 'size', message: 'must be at most 100' }]],
    ['customerId, which members cannot filter by', { customerId: 1 }, [{ field: 'customerId', message: UNKNOWN_PARAM }]],
    ['an unknown parameter', { q: 'beans' }, [{ field: 'q', message: UNKNOWN_PARAM }]],
  ]
  for (const [what, query, invalidParams] of badQueries) {
    it(`rejects ${what} with 400 naming the parameter`, async () => {
      const member = await ctx.api.member()
      assertError(await get(ctx, member, SEARCH, query), { code: 'VALIDATION_FAILED', instance: SEARCH, detail: QUERY_INVALID, invalidParams })
    })
  }

  it('rejects an unknown status and cursor with page, as GET /orders does', async () => {
    const member = await ctx.api.member()
    assertError(await get(ctx, member, SEARCH, { status: 'LOST' }),
      { code: 'VALIDATION_FAILED', instance: SEARCH, detail: REQUEST_INVALID, invalidParams: [{ field: 'status', message: BAD_STATUS }] })
    assertError(await get(ctx, member, SEARCH, { cursor: 'x', page: 1 }), {
      code: 'VALIDATION_FAILED',
      instance: SEARCH,
      detail: REQUEST_INVALID,
      invalidParams: [{ field: 'cursor', message: 'cannot be combined with page; send one of them' }],
    })
  })

  it('refuses anonymous callers with 401', async () => {
    const res = await get(ctx, undefined, SEARCH, { createdFrom: '2026-01-01T00:00:00Z' })
    assertError(res, { code: 'UNAUTHORIZED', instance: SEARCH, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.' })
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
  })
})
