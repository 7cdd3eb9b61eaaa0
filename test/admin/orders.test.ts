import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { HistoryEntry, OrderDetail, OrderSummary } from '../../src/orders/schemas.js'
import { assertError, describeEachBackend, type Member, successData, summaryOf } from '../helper.js'

const LIST = '/api/v1/admin/orders'
const SEARCH = '/api/v1/admin/orders/search'
const QUERY_INVALID = 'The query has invalid parameters.'
const REQUEST_INVALID = 'The request has invalid parameters.'
const BODY_INVALID = 'The request body has invalid parameters.'
const UNKNOWN_PARAM = 'is not a recognised query parameter'
const BAD_STATUS = 'must be one or more of PENDING, PLACED, CONFIRMED, DELIVERED, CANCELLED, DELETED, comma-separated'
const BAD_TIMESTAMP = 'must be an RFC 3339 timestamp with Z or an offset, in the years 0001 to 9999, e.g. 2026-11-22T09:30:00.000Z'
const NO_CREDENTIAL = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'
const NOT_ADMIN = 'This operation requires the ADMIN role.'

type Query = Record<string, string | number>
type Caller = Pick<Member, 'headers'> | undefined
interface Page { content: OrderSummary[], page: number, size: number, totalElements: number, totalPages: number, first: boolean, last: boolean }

describeEachBackend('admin: orders', (ctx) => {
  /** GET `path` with the query properly encoded (`+` in offsets becomes %2B). */
  const get = (caller: Caller, path: string, query: Query = {}) => ctx.api.get(path, query, caller)
  const patch = (caller: Caller, url: string, payload?: object, headers: Record<string, string> = {}) =>
    ctx.api.inject({ method: 'PATCH', url, ...(payload ? { payload } : {}), headers: { ...caller?.headers, ...headers } })

  /** The `data` of a 200 envelope. */
  const page = async (admin: Member, path: string, query: Query = {}) => successData<Page>(await get(admin, path, query))
  const ids = async (admin: Member, path: string, query: Query = {}) => (await page(admin, path, query)).content.map(o => o.orderId)
  const history = async (admin: Member, id: number) => successData<HistoryEntry[]>(await get(admin, `/api/v1/orders/${id}/history`))
  /** The last history entry of an order, its time checked for format and then left out. */
  const lastChange = async (admin: Member, id: number) => {
    const { at, ...entry } = (await history(admin, id)).at(-1)!
    assert.match(at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    return entry
  }
  const setColumn = (id: number, column: 'created_at' | 'updated_at', at: string) =>
    ctx.api.app.db.updateTable('orders').set({ [column]: new Date(at) }).where('id', '=', id).execute()

  /**
   * Two customers' orders created at midnight UTC on 1–5 January 2026, totals 1000 to 5000:
   * jan1 ann (beans), jan2 bob (beans, then CANCELLED by bob), jan3 ann (beans and mugs),
   * jan4 bob (mugs), jan5 ann (mugs, then DELETED by ann).
   */
  async function fixture () {
    const admin = await ctx.api.admin()
    const ann = await ctx.api.member('ann')
    const bob = await ctx.api.member('bob')
    const beans = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000, name: 'Beans' })
    const mugs = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000, name: 'Mug' })
    const plan: Array<[Member, Array<{ productId: number, quantity: number }>]> = [
      [ann, [{ productId: beans.productId, quantity: 1 }]],
      [bob, [{ productId: beans.productId, quantity: 2 }]],
      [ann, [{ productId: beans.productId, quantity: 1 }, { productId: mugs.productId, quantity: 2 }]],
      [bob, [{ productId: mugs.productId, quantity: 4 }]],
      [ann, [{ productId: mugs.productId, quantity: 5 }]],
    ]
    const orders: OrderDetail[] = []
    for (const [i, [customer, items]] of plan.entries()) {
      const order = await ctx.api.order(customer, items) as unknown as OrderDetail
      const createdAt = `2026-01-0${i + 1}T00:00:00.000Z`
      await setColumn(order.orderId, 'created_at', createdAt)
      orders.push({ ...order, createdAt })
    }
    const [jan1, jan2, jan3, jan4, jan5] = orders.map(o => o.orderId) as [number, number, number, number, number]
    assert.equal((await patch(bob, `/api/v1/orders/${jan2}/cancel`)).statusCode, 200)
    assert.equal((await patch(ann, `/api/v1/orders/${jan5}/delete`)).statusCode, 200)
    const statuses = ['PLACED', 'CANCELLED', 'PLACED', 'PLACED', 'DELETED'] as const
    const summaries = orders.map((o, i) => summaryOf(o, statuses[i]))
    return { admin, ann, bob, beans, mugs, summaries, jan1, jan2, jan3, jan4, jan5 }
  }

  /** A PLACED order of 2 units of a product with stock 10. */
  async function placed () {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { stockQuantity: 10 })
    const order = await ctx.api.order(owner, [{ productId: product.productId, quantity: 2 }])
    return { admin, owner, product, id: order.orderId, url: `${LIST}/${order.orderId}` }
  }

  /** A CONFIRMED order whose payment is PENDING, or COMPLETED when `paid`. */
  async function confirmed (paid: boolean) {
    const o = await placed()
    assert.equal((await patch(o.owner, `/api/v1/orders/${o.id}/confirm`)).statusCode, 200)
    const paymentId = successData<OrderDetail>(await get(o.owner, `/api/v1/orders/${o.id}`)).paymentId
    if (paid) {
      const res = await patch(o.owner, `/api/v1/payments/${paymentId}/process`, { paymentMethodToken: 'tok_visa' })
      assert.equal(successData<{ status: string }>(res).status, 'COMPLETED')
    }
    return { ...o, paymentId }
  }

  it('GET /admin/orders lists every customer’s orders, DELETED included, newest first, in the page shape', async () => {
    const { admin, summaries } = await fixture()
    assert.deepEqual(await page(admin, LIST), {
      content: [...summaries].reverse(), page: 0, size: 20, totalElements: 5, totalPages: 1, first: true, last: true,
    })
  })

  it('pages with page and size, totals right on every page, createdAt ties broken by id desc', async () => {
    const { admin, summaries, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const createdAt = '2026-02-01T00:00:00.000Z'
    await ctx.api.app.db.updateTable('orders').set({ created_at: new Date(createdAt) }).execute()
    const [s1, s2, s3, s4, s5] = summaries.map(summary => ({ ...summary, createdAt }))
    const pages = await Promise.all([0, 1, 2, 3].map(n => page(admin, LIST, { size: 2, page: n })))
    const expected = [[s5, s4], [s3, s2], [s1], []]
    pages.forEach((p, n) => assert.deepEqual(p, {
      content: expected[n], page: n, size: 2, totalElements: 5, totalPages: 3, first: n === 0, last: n >= 2,
    }))
    assert.deepEqual(await ids(admin, LIST, { sort: 'createdAt,asc', size: 3, page: 1 }), [jan4, jan5])
    assert.deepEqual(await ids(admin, LIST, { sort: 'createdAt,desc', size: 3, page: 0 }), [jan5, jan4, jan3])
    assert.deepEqual(await ids(admin, LIST, { sort: 'createdAt,asc', size: 3, page: 0 }), [jan1, jan2, jan3])
  })

  it('filters by status (one or several, DELETED too) and by customerId', async () => {
    const { admin, ann, bob, summaries, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      [{ status: 'PLACED' }, [jan4, jan3, jan1]],
      [{ status: 'DELETED' }, [jan5]],
      [{ status: 'CANCELLED,DELETED' }, [jan5, jan2]],
      [{ status: 'CONFIRMED' }, []],
      [{ customerId: ann.id }, [jan5, jan3, jan1]],
      [{ customerId: bob.id }, [jan4, jan2]],
      [{ customerId: admin.id }, []],
      [{ customerId: 999_999 }, []],
      [{ customerId: ann.id, status: 'PLACED,CANCELLED' }, [jan3, jan1]],
    ]
    for (const [query, expected] of cases) {
      assert.deepEqual(await ids(admin, LIST, query), expected, JSON.stringify(query))
      assert.deepEqual(await ids(admin, SEARCH, query), expected, `search ${JSON.stringify(query)}`)
    }
    assert.deepEqual(await page(admin, LIST, { status: 'PLACED', size: 2, page: 1 }), {
      content: [summaries[0]], page: 1, size: 2, totalElements: 3, totalPages: 2, first: false, last: true,
    })
  })

  it('sorts by createdAt, updatedAt, totalAmount or status (a field alone ascending), ties by id in the same direction', async () => {
    const { admin, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const updated = [[jan3, '2026-03-01'], [jan1, '2026-03-02'], [jan5, '2026-03-03'], [jan2, '2026-03-04'], [jan4, '2026-03-05']] as const
    for (const [id, day] of updated) await setColumn(id, 'updated_at', `${day}T00:00:00.000Z`)
    const cases: Array<[string, number[]]> = [
      ['createdAt', [jan1, jan2, jan3, jan4, jan5]],
      ['createdAt,desc', [jan5, jan4, jan3, jan2, jan1]],
      ['updatedAt', [jan3, jan1, jan5, jan2, jan4]],
      ['updatedAt,desc', [jan4, jan2, jan5, jan1, jan3]],
      ['totalAmount,asc', [jan1, jan2, jan3, jan4, jan5]],
      ['totalAmount,desc', [jan5, jan4, jan3, jan2, jan1]],
      ['status', [jan2, jan5, jan1, jan3, jan4]],
      ['status,desc', [jan4, jan3, jan1, jan5, jan2]],
    ]
    for (const [sort, expected] of cases) {
      assert.deepEqual(await ids(admin, LIST, { sort }), expected, sort)
      assert.deepEqual(await ids(admin, SEARCH, { sort }), expected, `search ${sort}`)
    }
  })

  it('GET /admin/orders/search filters by dates (from inclusive, to exclusive), totals (inclusive) and product', async () => {
    const { admin, beans, mugs, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      [{ createdFrom: '2026-01-02T00:00:00.000Z' }, [jan5, jan4, jan3, jan2]],
      [{ createdFrom: '2026-01-02T00:00:00.001Z' }, [jan5, jan4, jan3]],
      [{ createdTo: '2026-01-03T00:00:00.000Z' }, [jan2, jan1]],
      [{ createdTo: '2026-01-03T00:00:00.001Z' }, [jan3, jan2, jan1]],
      [{ createdFrom: '2026-01-02T02:00:00+02:00', createdTo: '2026-01-04T00:00:00Z' }, [jan3, jan2]],
      [{ minTotal: 2000 }, [jan5, jan4, jan3, jan2]],
      [{ minTotal: 2001 }, [jan5, jan4, jan3]],
      [{ maxTotal: 3000 }, [jan3, jan2, jan1]],
      [{ minTotal: 2000, maxTotal: 4000 }, [jan4, jan3, jan2]],
      [{ productId: beans.productId }, [jan3, jan2, jan1]],
      [{ productId: mugs.productId }, [jan5, jan4, jan3]],
      [{ productId: 999_999 }, []],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(admin, SEARCH, query), expected, JSON.stringify(query))
  })

  it('search combines every filter with sort and paging; with no filters it lists what GET /admin/orders lists', async () => {
    const { admin, ann, mugs, summaries, jan1, jan3, jan4, jan5 } = await fixture()
    const cases: Array<[Query, number[]]> = [
      [{ productId: mugs.productId, status: 'PLACED,DELETED' }, [jan5, jan4, jan3]],
      [{ productId: mugs.productId, customerId: ann.id, sort: 'totalAmount,asc' }, [jan3, jan5]],
      [{ createdFrom: '2026-01-01T00:00:00Z', createdTo: '2026-01-05T00:00:00Z', minTotal: 1000, maxTotal: 3000, status: 'PLACED', customerId: ann.id }, [jan3, jan1]],
    ]
    for (const [query, expected] of cases) assert.deepEqual(await ids(admin, SEARCH, query), expected, JSON.stringify(query))
    assert.deepEqual(await page(admin, SEARCH, { minTotal: 2000, sort: 'createdAt,asc', size: 2, page: 1 }), {
      content: [summaries[3], summaries[4]], page: 1, size: 2, totalElements: 4, totalPages: 2, first: false, last: true,
    })
    assert.deepEqual(await page(admin, SEARCH), await page(admin, LIST))
  })

  const badBoth: Array<[string, Query, string, Array<{ field: string, message: string | RegExp }>]> = [
    ['an unknown status', { status: 'NOPE' }, REQUEST_INVALID, [{ field: 'status', message: BAD_STATUS }]],
    ['an unknown status among known ones', { status: 'PLACED,SHIPPED' }, REQUEST_INVALID, [{ field: 'status', message: BAD_STATUS }]],
    ['an empty status', { status: '' }, QUERY_INVALID, [{ field: 'status', message: 'must not be empty' }]],
    ['an unknown sort field', { sort: 'customerId' }, QUERY_INVALID, [{ field: 'sort', message: /^must be one of createdAt, / }]],
    ['an unknown sort direction', { sort: 'totalAmount,down' }, QUERY_INVALID, [{ field: 'sort', message: /^must be one of createdAt, / }]],
    ['customerId 0', { customerId: 0 }, QUERY_INVALID, [{ field: 'customerId', message: 'must be at least 1' }]],
    ['page -1 and size 101', { page: -1, size: 101 }, QUERY_INVALID,
      [{ field: 'page', message: 'must be at least 0' }, { field: 'size', message: 'must be at most 100' }]],
    ['a page beyond 1,000,000', { page: 1_000_001 }, QUERY_INVALID, [{ field: 'page', message: 'must be at most 1000000' }]],
    ['a cursor (admin lists are pages)', { cursor: 'abc' }, QUERY_INVALID, [{ field: 'cursor', message: UNKNOWN_PARAM }]],
    ['an unknown parameter', { colour: 'blue' }, QUERY_INVALID, [{ field: 'colour', message: UNKNOWN_PARAM }]],
  ]
  for (const [what, query, detail, invalidParams] of badBoth) {
    it(`rejects ${what} with 400 naming the parameter, on the list and the search`, async () => {
      const admin = await ctx.api.admin()
      for (const path of [LIST, SEARCH]) assertError(await get(admin, path, query), { code: 'VALIDATION_FAILED', instance: path, detail, invalidParams })
    })
  }

  it('rejects bad search filters on the search, and search filters on the list, with 400', async () => {
    const admin = await ctx.api.admin()
    const cases: Array<[string, Query, Array<{ field: string, message: string }>]> = [
      [SEARCH, { createdFrom: '2026-01-01' }, [{ field: 'createdFrom', message: BAD_TIMESTAMP }]],
      [SEARCH, { createdTo: '2026-01-01T00:00:00' }, [{ field: 'createdTo', message: BAD_TIMESTAMP }]],
      [SEARCH, { minTotal: -1, maxTotal: 'lots' }, [{ field: 'minTotal', message: 'must be at least 0' }, { field: 'maxTotal', message: 'must be an integer' }]],
      [SEARCH, { productId: 0 }, [{ field: 'productId', message: 'must be at least 1' }]],
      [LIST, { createdFrom: '2026-01-01T00:00:00Z' }, [{ field: 'createdFrom', message: UNKNOWN_PARAM }]],
      [LIST, { productId: 1 }, [{ field: 'productId', message: UNKNOWN_PARAM }]],
    ]
    for (const [path, query, invalidParams] of cases) {
      assertError(await get(admin, path, query), { code: 'VALIDATION_FAILED', instance: path, detail: QUERY_INVALID, invalidParams })
    }
  })

  it('refuses search and export ranges that end before they start with 400 naming the second field', async () => {
    const admin = await ctx.api.admin()
    const cases: Array<[Query, string, string]> = [
      [{ minTotal: 2, maxTotal: 1 }, 'maxTotal', 'must be at least minTotal'],
      [{ createdFrom: '2026-01-03T00:00:00Z', createdTo: '2026-01-02T00:00:00Z' }, 'createdTo', 'must be after createdFrom'],
    ]
    for (const path of [SEARCH, `${LIST}/export`]) {
      for (const [query, field, message] of cases) {
        assertError(await get(admin, path, query), { code: 'VALIDATION_FAILED', instance: path, detail: REQUEST_INVALID, invalidParams: [{ field, message }] })
      }
    }
  })

  it('GET /admin/orders/{id} answers any customer’s order, soft-deleted ones too, with its ETag', async () => {
    const { admin, jan3, jan5 } = await fixture()
    for (const [id, status, allowedActions] of [[jan3, 'PLACED', ['cancel', 'delete', 'edit']], [jan5, 'DELETED', []]] as const) {
      const res = await get(admin, `${LIST}/${id}`)
      const order = successData<OrderDetail>(res)
      assert.equal(order.status, status)
      assert.deepEqual(order.allowedActions, allowedActions)
      assert.equal(res.headers.etag, `"${order.version}"`)
      assert.deepEqual(order, successData(await get(admin, `/api/v1/orders/${id}`)))
    }
    assertError(await get(admin, `${LIST}/999999`), { code: 'ORDER_NOT_FOUND', instance: `${LIST}/999999`, detail: 'Order 999999 does not exist.' })
    assertError(await get(admin, `${LIST}/0`), {
      code: 'VALIDATION_FAILED', instance: `${LIST}/0`, detail: 'The path has invalid parameters.', invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
    })
  })

  it('PATCH /admin/orders/{id} changes the memo: 200 with the detail, a new version and ETag, an "update" history entry', async () => {
    const o = await placed()
    const before = successData<OrderDetail>(await get(o.admin, o.url))
    const res = await patch(o.admin, o.url, { memo: 'Gift wrap, please' })
    const after = successData<OrderDetail>(res)
    assert.deepEqual({ ...after, updatedAt: before.updatedAt }, { ...before, memo: 'Gift wrap, please', version: before.version + 1 })
    assert.equal(res.headers.etag, `"${before.version + 1}"`)
    assert.deepEqual(successData(await get(o.admin, o.url)), after)
    assert.deepEqual(await lastChange(o.admin, o.id), { from: 'PLACED', to: 'PLACED', action: 'update', actorId: o.admin.id, actorRole: 'ADMIN' })

    // null and absent fields are left alone: nothing changes, not even the version.
    for (const payload of [{ memo: null }, { status: null }, {}]) assert.deepEqual(successData(await patch(o.admin, o.url, payload)), after)
    assert.equal((await history(o.admin, o.id)).length, 2)
  })

  it('PATCH /admin/orders/{id} with status CANCELLED cancels any customer’s order and releases its stock, once', async () => {
    const o = await confirmed(false)
    assert.equal(await ctx.api.stockOf(o.product.productId), 8)
    const cancelled = successData<OrderDetail>(await patch(o.admin, o.url, { status: 'CANCELLED', memo: 'Out of business' }))
    assert.equal(cancelled.status, 'CANCELLED')
    assert.equal(cancelled.memo, 'Out of business')
    assert.deepEqual(cancelled.allowedActions, ['delete'])
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)
    assert.deepEqual(await lastChange(o.admin, o.id), { from: 'CONFIRMED', to: 'CANCELLED', action: 'cancel', actorId: o.admin.id, actorRole: 'ADMIN' })

    assert.deepEqual(successData(await patch(o.admin, o.url, { status: 'CANCELLED' })), cancelled)
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)
  })

  it('PATCH /admin/orders/{id} with status DELIVERED needs a CONFIRMED order with a captured payment', async () => {
    const p = await placed()
    assertError(await patch(p.admin, p.url, { status: 'DELIVERED' }),
      { code: 'INVALID_ORDER_STATUS', instance: p.url, detail: 'Cannot deliver an order that is PLACED.' })
    const unpaid = await confirmed(false)
    assertError(await patch(unpaid.admin, unpaid.url, { status: 'DELIVERED' }), {
      code: 'INVALID_ORDER_STATUS',
      instance: unpaid.url,
      detail: 'Cannot deliver an order that is CONFIRMED: its balanceDue is 2500 (paymentStatus UNPAID); delivery needs it paid in full.',
    })
    assert.equal(successData<OrderDetail>(await get(unpaid.admin, unpaid.url)).status, 'CONFIRMED')

    const paid = await confirmed(true)
    assert.deepEqual(successData<OrderDetail>(await get(paid.admin, paid.url)).allowedActions, ['cancel', 'deliver', 'delete', 'edit', 'fulfil'])
    const delivered = successData<OrderDetail>(await patch(paid.admin, paid.url, { status: 'DELIVERED' }))
    assert.equal(delivered.status, 'DELIVERED')
    assert.equal(delivered.paymentId, paid.paymentId)
    assert.deepEqual(delivered.allowedActions, ['delete', 'return'])
    assert.deepEqual(await lastChange(paid.admin, paid.id), { from: 'CONFIRMED', to: 'DELIVERED', action: 'deliver', actorId: paid.admin.id, actorRole: 'ADMIN' })
    assertError(await patch(paid.admin, paid.url, { status: 'CANCELLED' }),
      { code: 'INVALID_ORDER_STATUS', instance: paid.url, detail: 'Cannot cancel an order that is DELIVERED.' })
  })

  const badBodies: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ...['PLACED', 'PENDING', 'CONFIRMED', 'DELETED', 'delivered'].map((status): [string, object, Array<{ field: string, message: string }>] =>
      [`status ${status}`, { status }, [{ field: 'status', message: 'must be one of DELIVERED, CANCELLED' }]]),
    ['an unknown field', { orderId: 1, memo: 'x' }, [{ field: 'orderId', message: 'is not a recognised field' }]],
    ['a memo over 1000 characters', { memo: 'x'.repeat(1001) }, [{ field: 'memo', message: 'must be at most 1000 characters' }]],
  ]
  for (const [what, payload, invalidParams] of badBodies) {
    it(`PATCH /admin/orders/{id} rejects ${what} with 400 and changes nothing`, async () => {
      const o = await placed()
      const before = successData(await get(o.admin, o.url))
      assertError(await patch(o.admin, o.url, payload), { code: 'VALIDATION_FAILED', instance: o.url, detail: BODY_INVALID, invalidParams })
      assert.deepEqual(successData(await get(o.admin, o.url)), before)
    })
  }

  it('PATCH /admin/orders/{id} honours If-Match: a stale ETag is 412 and changes nothing, the current one applies', async () => {
    const o = await placed()
    const etag = String((await get(o.admin, o.url)).headers.etag)
    successData(await patch(o.owner, `/api/v1/orders/${o.id}`, { orderId: o.id, memo: 'changed by the owner' }))
    const before = successData<OrderDetail>(await get(o.admin, o.url))
    assertError(await patch(o.admin, o.url, { status: 'CANCELLED' }, { 'if-match': etag }), {
      code: 'PRECONDITION_FAILED', instance: o.url, detail: `If-Match does not match the order's current ETag "${before.version}"; fetch it again.`,
    })
    assert.deepEqual(successData(await get(o.admin, o.url)), before)
    assert.equal(await ctx.api.stockOf(o.product.productId), 8)

    const res = await patch(o.admin, o.url, { status: 'CANCELLED' }, { 'if-match': `"${before.version}"` })
    assert.equal(successData<OrderDetail>(res).status, 'CANCELLED')
    assert.equal(res.headers.etag, `"${before.version + 1}"`)
  })

  it('PATCH /admin/orders/{id} answers 404 for an unknown order', async () => {
    const admin = await ctx.api.admin()
    assertError(await patch(admin, `${LIST}/999999`, { memo: 'x' }),
      { code: 'ORDER_NOT_FOUND', instance: `${LIST}/999999`, detail: 'Order 999999 does not exist.' })
  })

  it('refuses anonymous callers with 401 and members with 403 on every admin order route, even for their own order', async () => {
    const o = await placed()
    const routes: Array<[string, (caller: Caller) => Promise<LightMyRequestResponse>]> = [
      [LIST, caller => get(caller, LIST)],
      [SEARCH, caller => get(caller, SEARCH, { minTotal: 0 })],
      [o.url, caller => get(caller, o.url)],
      [o.url, caller => patch(caller, o.url, { status: 'CANCELLED' })],
    ]
    for (const [instance, call] of routes) {
      const anonymous = await call(undefined)
      assertError(anonymous, { code: 'UNAUTHORIZED', instance, detail: NO_CREDENTIAL })
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="order-service"')
      assertError(await call(o.owner), { code: 'ACCESS_DENIED', instance, detail: NOT_ADMIN })
    }
    assert.equal(successData<OrderDetail>(await get(o.admin, o.url)).status, 'PLACED')
  })
})
