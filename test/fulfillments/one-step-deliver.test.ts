import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import type { Event } from '../../src/events/schemas.js'
import { assertError, describeEachBackend, feedSettled, successData } from '../helper.js'
import { confirmedOrder, get, patch } from '../payments/fixtures.js'
import type { OrderDetail, OrderSummary } from '../../src/orders/schemas.js'

// §3's one-step deliver (CONTRACT §15.3): everything leaves as one fulfilment without tracking,
// delivered at once, and the order is FULFILLED, in the transaction that delivers the order.

describeEachBackend('the one-step deliver and fulfilments', (ctx) => {
  const stored = async (orderId: number) => {
    const db = ctx.api.app.db
    const order = await db.selectFrom('orders').select(['status', 'fulfillment_status']).where('id', '=', orderId).executeTakeFirstOrThrow()
    const fulfillments = await db.selectFrom('fulfillments')
      .select(['id', 'order_id', 'status', 'carrier', 'tracking_number', 'tracking_url', 'shipped_at', 'delivered_at'])
      .where('order_id', '=', orderId).orderBy('id').execute()
    const items = await db.selectFrom('fulfillment_items').innerJoin('fulfillments', 'fulfillments.id', 'fulfillment_items.fulfillment_id')
      .select(['fulfillment_items.fulfillment_id', 'fulfillment_items.product_id', 'fulfillment_items.quantity'])
      .where('fulfillments.order_id', '=', orderId).orderBy('fulfillment_items.fulfillment_id').orderBy('fulfillment_items.product_id').execute()
    return { order, fulfillments, items }
  }

  for (const [how, url, method, payload] of [
    ['PATCH /admin/orders/{id} {status: DELIVERED}', (id: number) => `/api/v1/admin/orders/${id}`, 'PATCH', { status: 'DELIVERED' }],
    ['PUT /orders/{id} with status DELIVERED', (id: number) => `/api/v1/orders/${id}`, 'PUT', { status: 'DELIVERED', memo: null, shippingAddress: null }],
  ] as const) {
    it(`ships every line as one delivered fulfilment without tracking and makes the order FULFILLED: ${how}`, async () => {
      const o = await confirmedOrder(ctx.api)
      successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
      assert.deepEqual(await stored(o.orderId), { order: { status: 'CONFIRMED', fulfillment_status: 'UNFULFILLED' }, fulfillments: [], items: [] })

      const before = Date.now()
      const res = await ctx.api.inject({ method, url: url(o.orderId), headers: o.admin.headers, payload })
      assert.equal(successData<OrderDetail>(res).status, 'DELIVERED')
      // The answer and every later read show every line shipped, nothing returned.
      for (const detail of [successData<OrderDetail>(res), successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner))]) {
        assert.deepEqual(detail.items.map(i => [i.productId, i.quantity, i.fulfilledQuantity, i.returnedQuantity]), [[o.productId, 2, 2, 0]])
        assert.equal(detail.fulfillmentStatus, 'FULFILLED')
      }

      const { order, fulfillments, items } = await stored(o.orderId)
      assert.deepEqual(order, { status: 'DELIVERED', fulfillment_status: 'FULFILLED' })
      assert.equal(fulfillments.length, 1)
      const [{ id, shipped_at: shippedAt, delivered_at: deliveredAt, ...fulfillment }] = fulfillments as [typeof fulfillments[0]]
      assert.deepEqual({ ...fulfillment, order_id: Number(fulfillment.order_id) },
        { order_id: o.orderId, status: 'DELIVERED', carrier: null, tracking_number: null, tracking_url: null })
      assert.ok(shippedAt.getTime() >= before - 1000 && shippedAt.getTime() <= Date.now(), String(shippedAt))
      assert.deepEqual(deliveredAt, shippedAt)
      assert.deepEqual(items.map(row => [Number(row.fulfillment_id), Number(row.product_id), row.quantity]), [[Number(id), o.productId, 2]])
    })
  }

  it('writes no fulfilment when the deliver is refused, nor when it is repeated', async () => {
    const o = await confirmedOrder(ctx.api)
    // Not paid: refused, and nothing shipped.
    assert.equal((await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' })).statusCode, 400)
    assert.deepEqual(await stored(o.orderId), { order: { status: 'CONFIRMED', fulfillment_status: 'UNFULFILLED' }, fulfillments: [], items: [] })

    successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
    successData(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' }))
    const delivered = await stored(o.orderId)
    const version = successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner)).version
    // Delivering again changes nothing (PATCH verbs are idempotent).
    successData(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' }))
    assert.deepEqual(await stored(o.orderId), delivered)
    assert.equal(successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner)).version, version)
  })

  it('shows fulfillmentStatus in detail and summary, and admin lists and the export filter by it (comma list); a bad value is 400 naming the field', async () => {
    const o = await confirmedOrder(ctx.api)
    successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
    successData(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' }))
    const delivered = o.orderId
    const placed = (await ctx.api.order(o.owner, [{ productId: o.productId, quantity: 1 }])).orderId
    assert.equal(successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner)).fulfillmentStatus, 'FULFILLED')
    assert.equal(successData<OrderDetail>(await get(ctx.api, `/api/v1/orders/${placed}`, o.owner)).fulfillmentStatus, 'UNFULFILLED')
    assert.deepEqual(successData<{ content: OrderSummary[] }>(await get(ctx.api, '/api/v1/orders', o.owner)).content
      .map(order => [order.orderId, order.fulfillmentStatus]), [[placed, 'UNFULFILLED'], [delivered, 'FULFILLED']])

    const ids = async (url: string) => successData<{ content: OrderSummary[] }>(await get(ctx.api, url, o.admin)).content.map(order => order.orderId)
    for (const path of ['/api/v1/admin/orders', '/api/v1/admin/orders/search']) {
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=FULFILLED`), [delivered])
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=UNFULFILLED`), [placed])
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=PARTIALLY_FULFILLED`), [])
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=${encodeURIComponent('PARTIALLY_FULFILLED, FULFILLED')}`), [delivered])
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=UNFULFILLED,FULFILLED&sort=createdAt,asc`), [delivered, placed])
      assert.deepEqual(await ids(`${path}?fulfillmentStatus=FULFILLED&paymentStatus=UNPAID`), [])

      const before = await ids(path)
      assertError(await get(ctx.api, `${path}?fulfillmentStatus=FULFILLED,SHIPPED`, o.admin), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The request has invalid parameters.',
        invalidParams: [{ field: 'fulfillmentStatus', message: 'must be one or more of UNFULFILLED, PARTIALLY_FULFILLED, FULFILLED, comma-separated' }],
      })
      assertError(await get(ctx.api, `${path}?fulfillmentStatus=`, o.admin), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The query has invalid parameters.',
        invalidParams: [{ field: 'fulfillmentStatus', message: 'must not be empty' }],
      })
      assert.deepEqual(await ids(path), before)
    }
    const csv = await get(ctx.api, '/api/v1/admin/orders/export?fulfillmentStatus=FULFILLED', o.admin)
    assert.equal(csv.statusCode, 200, csv.body)
    assert.deepEqual(csv.body.trimEnd().split('\r\n').slice(1).map(line => Number(line.split(',')[0])), [delivered])
    // Members' lists take no such filter.
    assertError(await get(ctx.api, '/api/v1/orders?fulfillmentStatus=FULFILLED', o.owner), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The query has invalid parameters.',
      invalidParams: [{ field: 'fulfillmentStatus', message: 'is not a recognised query parameter' }],
    })
  })

  it('shows fulfillmentStatus in events, and reads events written before the column existed as the migration does', async () => {
    const o = await confirmedOrder(ctx.api)
    successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
    successData(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' }))
    // The feed shows only what no transaction still open on the server (another file's) may precede.
    await feedSettled(ctx.api.app)
    const events = async () => successData<{ content: Event[] }>(await get(ctx.api, `/api/v1/admin/events?orderId=${o.orderId}`, o.admin)).content
      .map(({ type, data: { order } }) => [type, order.status, order.fulfillmentStatus, order.items.map(i => [i.fulfilledQuantity, i.returnedQuantity])])
    const expected = [
      ['order.placed', 'PLACED', 'UNFULFILLED', [[0, 0]]],
      ['payment.created', 'CONFIRMED', 'UNFULFILLED', [[0, 0]]],
      ['order.confirmed', 'CONFIRMED', 'UNFULFILLED', [[0, 0]]],
      ['payment.succeeded', 'CONFIRMED', 'UNFULFILLED', [[0, 0]]],
      ['fulfillment.created', 'DELIVERED', 'FULFILLED', [[2, 0]]],
      ['fulfillment.delivered', 'DELIVERED', 'FULFILLED', [[2, 0]]],
      ['order.delivered', 'DELIVERED', 'FULFILLED', [[2, 0]]],
    ]
    assert.deepEqual(await events(), expected)
    // Snapshots written before fulfilments existed have no fulfillment_status.
    await sql`update events set snapshot = jsonb_set(jsonb_set(snapshot, '{order}', (snapshot->'order') - 'fulfillment_status'), '{items}',
        (select jsonb_agg(item - 'fulfilledQuantity' - 'returnedQuantity') from jsonb_array_elements(snapshot->'items') item))
      where order_id = ${o.orderId}`.execute(ctx.api.app.db)
    assert.deepEqual(await events(), expected)
  })
})
