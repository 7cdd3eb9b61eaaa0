import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import { expireLapsedReservations } from '../../src/orders/lifecycle.js'
import { assertError, describeEachBackend, feedSettled, successData, type Api, type Member } from '../helper.js'

// CONTRACT §12 "What is announced": every committed change of an order or its payment writes its
// events in the change's own transaction, numbered per order without gaps; nothing else does.

interface Event {
  eventId: number
  type: string
  timestamp: string
  orderId: number
  sequence: number
  data: { order: Record<string, unknown>, payment: Record<string, unknown> | null, refund?: { amount: number } }
}

const FEED = '/api/v1/admin/events'

/** Every event of the order, through the feed, oldest first. */
async function eventsOf (api: Api, admin: Member, orderId: number): Promise<Event[]> {
  await feedSettled(api.app)
  const slice = successData<{ content: Event[], hasNext: boolean }>(await api.get(FEED, { orderId, size: 100 }, admin))
  assert.equal(slice.hasNext, false)
  return slice.content
}

const typesOf = (events: Event[]) => events.map(event => [event.sequence, event.type])

/** The order as an admin reads it now, without allowedActions and fulfillments: what an event of its last change carries. */
async function orderNow (api: Api, admin: Member, orderId: number) {
  const { allowedActions: _actions, fulfillments: _shipments, ...order } = successData<Record<string, unknown>>(await api.get(`/api/v1/admin/orders/${orderId}`, {}, admin))
  return order
}

async function paymentNow (api: Api, admin: Member, paymentId: number) {
  return successData<Record<string, unknown>>(await api.get(`/api/v1/payments/${paymentId}`, {}, admin))
}

describeEachBackend('events written with each change', (ctx) => {
  async function placed (stock = 10) {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { price: 500, stockQuantity: stock })
    const order = await ctx.api.order(owner, [{ productId: product.productId, quantity: 2 }])
    return { admin, owner, product, orderId: order.orderId, url: `/api/v1/orders/${order.orderId}` }
  }
  const patch = (url: string, who: Member, payload?: object) =>
    ctx.api.inject({ method: 'PATCH', url, headers: who.headers, ...(payload ? { payload } : {}) })

  it('announces a placed order as order.placed, sequence 1, carrying the order as created and no payment', async () => {
    const o = await placed()
    const [event, ...rest] = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(rest, [])
    assert.equal(event!.type, 'order.placed')
    assert.equal(event!.sequence, 1)
    assert.equal(event!.orderId, o.orderId)
    assert.equal(event!.timestamp, (await orderNow(ctx.api, o.admin, o.orderId)).createdAt)
    assert.deepEqual(event!.data, { order: await orderNow(ctx.api, o.admin, o.orderId), payment: null })
    assert.deepEqual(successData(await ctx.api.get(`${FEED}/${event!.eventId}`, {}, o.admin)), event)
  })

  it('numbers a paid order’s whole life 1…9 without gaps, payment events before their order’s', async () => {
    const o = await placed()
    assert.equal((await patch(`${o.url}/confirm`, o.owner)).statusCode, 200)
    const paymentId = (await orderNow(ctx.api, o.admin, o.orderId)).paymentId as number
    const pay = `/api/v1/payments/${paymentId}`
    assert.equal((await patch(`${pay}/process`, o.owner, { paymentMethodToken: 'tok_declined' })).statusCode, 402)
    assert.equal((await patch(`${pay}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    assert.equal((await patch(`${pay}/refund`, o.admin, { amount: 300 })).statusCode, 200)
    assert.equal((await patch(`${o.url}/cancel`, o.owner)).statusCode, 200)
    assert.equal((await patch(`${o.url}/delete`, o.owner)).statusCode, 200)

    const events = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(typesOf(events), [
      [1, 'order.placed'], [2, 'payment.created'], [3, 'order.confirmed'], [4, 'payment.failed'], [5, 'payment.succeeded'],
      [6, 'payment.refunded'], [7, 'payment.refunded'], [8, 'order.cancelled'], [9, 'order.deleted'],
    ])
    assert.deepEqual(events.map(event => event.data.refund), [
      undefined, undefined, undefined, undefined, undefined, { amount: 300, reason: 'GOODWILL' }, { amount: 700, reason: 'CANCEL' }, undefined, undefined,
    ])
    // The order's money as each event's transaction committed it (CONTRACT §15.1).
    assert.deepEqual(events.map(({ data: { order } }) => [order.paymentStatus, order.paidAmount, order.refundedAmount, order.balanceDue]), [
      ['UNPAID', 0, 0, 1000], ['UNPAID', 0, 0, 1000], ['UNPAID', 0, 0, 1000], ['UNPAID', 0, 0, 1000], ['PAID', 1000, 0, 0],
      ['PARTIALLY_REFUNDED', 1000, 300, 0], ['REFUNDED', 1000, 1000, 0], ['REFUNDED', 1000, 1000, 0], ['REFUNDED', 1000, 1000, 0],
    ])
    assert.deepEqual(events.map(event => (event.data.order.payments as Array<{ status: string }>).map(payment => payment.status)),
      [[], ['PENDING'], ['PENDING'], ['FAILED'], ['COMPLETED'], ['PARTIALLY_REFUNDED'], ['REFUNDED'], ['REFUNDED'], ['REFUNDED']])
    assert.deepEqual(events.map(event => event.data.payment?.status ?? null),
      [null, 'PENDING', 'PENDING', 'FAILED', 'COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED', 'REFUNDED', 'REFUNDED'])
    assert.deepEqual(events.map(event => event.data.order.status),
      ['PLACED', 'CONFIRMED', 'CONFIRMED', 'CONFIRMED', 'CONFIRMED', 'CONFIRMED', 'CANCELLED', 'CANCELLED', 'DELETED'])
    // The events of one transaction carry the order and payment as that transaction commits them.
    assert.deepEqual(events[1]!.data, events[2]!.data)
    assert.deepEqual(events[6]!.data.order, events[7]!.data.order)
    assert.deepEqual(events.at(-1)!.data, { order: await orderNow(ctx.api, o.admin, o.orderId), payment: await paymentNow(ctx.api, o.admin, paymentId) })
    assert.deepEqual(events.map(event => event.eventId), [...events.map(event => event.eventId)].sort((a, b) => a - b))
  })

  it('announces payment.cancelled then order.cancelled when an unpaid confirmed order is cancelled', async () => {
    const o = await placed()
    assert.equal((await patch(`${o.url}/confirm`, o.owner)).statusCode, 200)
    assert.equal((await patch(`${o.url}/cancel`, o.admin)).statusCode, 200)
    const events = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(typesOf(events), [[1, 'order.placed'], [2, 'payment.created'], [3, 'order.confirmed'], [4, 'payment.cancelled'], [5, 'order.cancelled']])
    assert.equal(events[4]!.data.payment!.status, 'CANCELLED')
  })

  it('announces order.delivered', async () => {
    const o = await placed()
    assert.equal((await patch(`${o.url}/confirm`, o.owner)).statusCode, 200)
    const paymentId = (await orderNow(ctx.api, o.admin, o.orderId)).paymentId as number
    assert.equal((await patch(`/api/v1/payments/${paymentId}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    assert.equal((await patch(`/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' })).statusCode, 200)
    const events = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(events.at(-1)!.type, 'order.delivered')
    assert.deepEqual(events.at(-1)!.data.order, await orderNow(ctx.api, o.admin, o.orderId))
  })

  it('announces a memo or address change as order.updated, a status change with a memo as the status event only, and no change as nothing', async () => {
    const o = await placed()
    const put = (payload: object) => ctx.api.inject({ method: 'PUT', url: o.url, headers: o.owner.headers, payload })
    assert.equal((await put({ status: 'PLACED', memo: 'ring twice', shippingAddress: '1 Main St' })).statusCode, 200)
    assert.equal((await put({ status: 'PLACED', memo: 'ring twice', shippingAddress: '1 Main St' })).statusCode, 200)
    assert.equal((await patch(o.url, o.owner, { orderId: o.orderId, status: 'CANCELLED', memo: 'changed my mind' })).statusCode, 200)
    assert.equal((await patch(`${o.url}/cancel`, o.owner)).statusCode, 200)
    const events = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(typesOf(events), [[1, 'order.placed'], [2, 'order.updated'], [3, 'order.cancelled']])
    assert.equal(events[1]!.data.order.memo, 'ring twice')
    assert.equal(events[2]!.data.order.memo, 'changed my mind')
  })

  it('announces an expired reservation as order.expired', async () => {
    const o = await placed()
    await sql`update orders set reserved_until = now() - interval '1 second' where id = ${o.orderId}`.execute(ctx.api.app.db)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 1)
    const events = await eventsOf(ctx.api, o.admin, o.orderId)
    assert.deepEqual(typesOf(events), [[1, 'order.placed'], [2, 'order.expired']])
    assert.equal(events[1]!.data.order.status, 'CANCELLED')
  })

  it('announces nothing for a replayed POST or a refused request', async () => {
    const o = await placed(3)
    const body = { customerId: o.owner.id, items: [{ productId: o.product.productId, quantity: 1 }] }
    const send = () => ctx.api.inject({ method: 'POST', url: '/api/v1/orders', headers: { ...o.owner.headers, 'idempotency-key': 'k-1' }, payload: body })
    assert.equal((await send()).statusCode, 201)
    assert.equal((await send()).statusCode, 200)
    const short = await ctx.api.inject({ method: 'POST', url: '/api/v1/orders', headers: o.owner.headers, payload: { ...body, items: [{ productId: o.product.productId, quantity: 5 }] } })
    assert.equal(short.statusCode, 409)
    assert.equal((await patch(`${o.url}/confirm`, o.admin)).statusCode, 403)
    assert.equal((await patch(`${o.url}/cancel`, o.owner, { reason: 'x' })).statusCode, 400)
    await feedSettled(ctx.api.app)
    const all = successData<{ content: Event[] }>(await ctx.api.get(FEED, { size: 100 }, o.admin)).content
    assert.deepEqual(all.map(event => [event.orderId, event.type]), [[o.orderId, 'order.placed'], [o.orderId + 1, 'order.placed']])
  })
})

describeEachBackend('the event feed', (ctx) => {
  async function someEvents () {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { stockQuantity: 100 })
    const orders = []
    for (let i = 0; i < 3; i++) orders.push(await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }]))
    await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${orders[0]!.orderId}/confirm`, headers: owner.headers })
    return { admin, owner, orders }
  }

  it('pages oldest first by cursor, ends with hasNext false, and its nextCursor is never null', async () => {
    const { admin } = await someEvents()
    await feedSettled(ctx.api.app)
    const seen: string[] = []
    let cursor: string | undefined
    for (let turn = 0; turn < 4; turn++) {
      const slice = successData<{ content: Event[], size: number, hasNext: boolean, nextCursor: string }>(
        await ctx.api.get(FEED, { size: 2, ...(cursor ? { cursor } : {}) }, admin))
      assert.equal(slice.size, 2)
      assert.equal(typeof slice.nextCursor, 'string')
      seen.push(...slice.content.map(event => `${event.orderId}:${event.type}`))
      assert.equal(slice.hasNext, turn < 2, `turn ${turn}`)
      cursor = slice.nextCursor
    }
    assert.deepEqual(seen, ['1:order.placed', '2:order.placed', '3:order.placed', '1:payment.created', '1:order.confirmed'])
    // At the end, the cursor is where to poll from: later events come after it, earlier ones do not.
    const owner = await ctx.api.member('late')
    const product = await ctx.api.product(admin)
    const late = await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
    await feedSettled(ctx.api.app)
    const next = successData<{ content: Event[], hasNext: boolean }>(await ctx.api.get(FEED, { cursor: cursor! }, admin))
    assert.deepEqual(next.content.map(event => [event.orderId, event.type]), [[late.orderId, 'order.placed']])
    assert.equal(next.hasNext, false)
  })

  it('filters by type (comma list) and orderId', async () => {
    const { admin, orders } = await someEvents()
    await feedSettled(ctx.api.app)
    const byType = successData<{ content: Event[] }>(await ctx.api.get(FEED, { type: 'order.confirmed,payment.created' }, admin)).content
    assert.deepEqual(byType.map(event => event.type), ['payment.created', 'order.confirmed'])
    const byOrder = successData<{ content: Event[] }>(await ctx.api.get(FEED, { orderId: orders[1]!.orderId }, admin)).content
    assert.deepEqual(byOrder.map(event => [event.orderId, event.sequence]), [[orders[1]!.orderId, 1]])
  })

  it('refuses bad queries with 400 naming the parameter, and an old cursor with 410 CURSOR_EXPIRED', async () => {
    const admin = await ctx.api.admin()
    const cases: Array<[Record<string, string | number>, string, string, string]> = [
      [{ type: 'order.shipped' }, 'The request has invalid parameters.', 'type', 'must be one or more of order.placed, order.confirmed, order.cancelled, order.expired, order.delivered, order.deleted, order.updated, payment.created, payment.succeeded, payment.failed, payment.refunded, payment.cancelled, order.edited, payment.updated, fulfillment.created, fulfillment.delivered, fulfillment.cancelled, return.requested, return.received, return.rejected, return.cancelled, comma-separated'],
      [{ page: 0 }, 'The query has invalid parameters.', 'page', 'is not a recognised query parameter'],
      [{ cursor: 'bm90LWEtY3Vyc29y' }, 'The request has invalid parameters.', 'cursor', 'is not a cursor this API issued; pass the nextCursor of the previous slice'],
      [{ size: 101 }, 'The query has invalid parameters.', 'size', 'must be at most 100'],
    ]
    for (const [query, detail, field, message] of cases) {
      assertError(await ctx.api.get(FEED, query, admin), { code: 'VALIDATION_FAILED', instance: FEED, detail, invalidParams: [{ field, message }] })
    }
    const old = Buffer.from(JSON.stringify(['0', 0, Date.now() - 31 * 24 * 3600 * 1000])).toString('base64url')
    assertError(await ctx.api.get(FEED, { cursor: old }, admin), {
      code: 'CURSOR_EXPIRED',
      instance: FEED,
      detail: 'This cursor is older than the event retention; events after it may have been purged. Read the feed from its start, or catch up from the orders themselves.',
    })
  })

  it('answers an unknown event with 404 EVENT_NOT_FOUND and keeps the feed for admins', async () => {
    const admin = await ctx.api.admin()
    assertError(await ctx.api.get(`${FEED}/999999`, {}, admin), { code: 'EVENT_NOT_FOUND', instance: `${FEED}/999999`, detail: 'Event 999999 does not exist.' })
    const member = await ctx.api.member()
    for (const url of [FEED, `${FEED}/1`]) {
      assertError(await ctx.api.get(url, {}, member), { code: 'ACCESS_DENIED', instance: url, detail: 'This operation requires the ADMIN role.' })
      assert.equal((await ctx.api.get(url)).statusCode, 401)
    }
  })
})
