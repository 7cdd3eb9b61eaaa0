import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { Event } from '../../src/events/schemas.js'
import type { HistoryEntry, OrderDetail, OrderSummary } from '../../src/orders/schemas.js'
import type { Payment } from '../../src/payments/schemas.js'
import type { Return } from '../../src/returns/schemas.js'
import { assertError, describeEachBackend, successData } from '../helper.js'
import { get, patch } from '../payments/fixtures.js'
import { TIMESTAMP, adminOrder, assertReturn, deliveredOrder, eventsOf, everything, post } from './fixtures.js'

// CONTRACT §15.4, §15.5, §15.7: returns line by line: request, receive (restock, RETURN refund), the
// order's returnedQuantity, money and hasOpenReturn, history and events.

/** An event with its volatile id and timestamp checked and left out. */
function stable (event: Event) {
  const { eventId, timestamp, ...rest } = event
  assert.ok(Number.isSafeInteger(eventId))
  assert.match(timestamp, TIMESTAMP)
  return rest
}

/** The order as events carry it: the admin's detail without allowedActions and fulfillments. */
function eventOrder (order: OrderDetail) {
  const { allowedActions: _allowedActions, fulfillments: _fulfillments, ...rest } = order
  return rest
}

const returnedOf = (order: OrderDetail) => order.items.map(item => [item.productId, item.quantity, item.fulfilledQuantity, item.returnedQuantity])

describeEachBackend('returns', (ctx) => {
  it('the owner asks, an admin receives: stock back where asked, the received lines refunded at their price, returnedQuantity, money, history and events', async () => {
    const o = await deliveredOrder(ctx.api)
    const delivered = await adminOrder(ctx.api, o)
    const eventsBefore = await eventsOf(ctx.api, o)

    const res = await post(ctx.api, o.returnsUrl, o.owner, {
      items: [{ productId: o.beans, quantity: 2, reason: 'DAMAGED' }, { productId: o.cups, quantity: 1 }],
      note: 'The bag was torn open',
    })
    const requested = assertReturn(res, 201, {
      returnId: 1,
      orderId: o.orderId,
      status: 'REQUESTED',
      items: [
        { productId: o.beans, quantity: 2, reason: 'DAMAGED', receivedQuantity: null, restock: null },
        { productId: o.cups, quantity: 1, reason: null, receivedQuantity: null, restock: null },
      ],
      note: 'The bag was torn open',
      rejectionReason: null,
      refundAmount: null,
    })
    assert.equal(requested.createdAt, requested.updatedAt)
    assert.equal(res.headers.location, `${o.returnsUrl}/1`)
    const afterRequest = await adminOrder(ctx.api, o)
    assert.equal(afterRequest.version, delivered.version + 1)
    assert.equal(res.headers.etag, `"${afterRequest.version}"`)
    // Asking changes no stock, money or line yet.
    assert.deepEqual({ ...afterRequest, version: 0, updatedAt: '' }, { ...delivered, version: 0, updatedAt: '' })
    assert.deepEqual([await ctx.api.stockOf(o.beans), await ctx.api.stockOf(o.cups)], [8, 7])

    // The owner and admins read it, in the list and alone.
    for (const who of [o.owner, o.admin]) {
      assert.deepEqual(successData<Return[]>(await get(ctx.api, o.returnsUrl, who)), [requested])
      assert.deepEqual(successData<Return>(await get(ctx.api, `${o.returnsUrl}/1`, who)), requested)
    }

    const received = await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, {
      items: [{ productId: o.beans, quantity: 2, restock: true }, { productId: o.cups, quantity: 1, restock: false }],
    })
    const { createdAt: _createdAt, updatedAt: _updatedAt, ...asked } = requested
    const done = assertReturn(received, 200, {
      ...asked,
      status: 'RECEIVED',
      items: [
        { productId: o.beans, quantity: 2, reason: 'DAMAGED', receivedQuantity: 2, restock: true },
        { productId: o.cups, quantity: 1, reason: null, receivedQuantity: 1, restock: false },
      ],
      refundAmount: 1300,
    })
    assert.equal(done.createdAt, requested.createdAt)
    const afterReceipt = await adminOrder(ctx.api, o)
    assert.equal(afterReceipt.version, afterRequest.version + 1)
    assert.equal(received.headers.etag, `"${afterReceipt.version}"`)
    // Beans restocked, cups not; 2 × 500 + 1 × 300 refunded from the one payment.
    assert.deepEqual([await ctx.api.stockOf(o.beans), await ctx.api.stockOf(o.cups)], [10, 7])
    assert.deepEqual(returnedOf(afterReceipt), [[o.beans, 2, 2, 2], [o.cups, 3, 3, 1]])
    assert.deepEqual({
      status: afterReceipt.status,
      payments: afterReceipt.payments,
      paidAmount: afterReceipt.paidAmount,
      refundedAmount: afterReceipt.refundedAmount,
      balanceDue: afterReceipt.balanceDue,
      paymentStatus: afterReceipt.paymentStatus,
    }, {
      status: 'DELIVERED',
      payments: [{ paymentId: o.paymentId, amount: 1900, refundedAmount: 1300, status: 'PARTIALLY_REFUNDED' }],
      paidAmount: 1900,
      refundedAmount: 1300,
      // A RETURN refund is credited: nothing is owed after it.
      balanceDue: 0,
      paymentStatus: 'PARTIALLY_REFUNDED',
    })
    assert.deepEqual(successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner)).items, afterReceipt.items)
    assert.deepEqual(successData<OrderDetail['items']>(await get(ctx.api, `${o.orderUrl}/items`, o.owner)), afterReceipt.items)
    assert.deepEqual(await ctx.api.app.db.selectFrom('payment_refunds').select(['payment_id', 'amount', 'reason', 'return_id', 'edit_id']).execute(),
      [{ payment_id: o.paymentId, amount: 1300, reason: 'RETURN', return_id: 1, edit_id: null }])

    // History: each step, naming the return, the order's status unchanged.
    const history = successData<HistoryEntry[]>(await get(ctx.api, `${o.orderUrl}/history`, o.owner))
    const steps = history.slice(-2)
    for (const step of steps) assert.match(step.at, TIMESTAMP)
    assert.deepEqual(steps.map(({ at: _at, ...step }) => step), [
      { from: 'DELIVERED', to: 'DELIVERED', action: 'request_return', actorId: o.owner.id, actorRole: 'USER', returnId: 1 },
      { from: 'DELIVERED', to: 'DELIVERED', action: 'receive_return', actorId: o.admin.id, actorRole: 'ADMIN', returnId: 1 },
    ])

    // Events: return.requested, then the refund's payment.refunded before return.received, each with the order as committed.
    const payment = successData<Payment>(await get(ctx.api, o.paymentUrl, o.owner))
    const events = (await eventsOf(ctx.api, o)).slice(eventsBefore.length).map(stable)
    const sequence = eventsBefore.at(-1)!.sequence
    assert.deepEqual(events.map(event => event.data.payment?.paymentId), [o.paymentId, o.paymentId, o.paymentId])
    const paymentThen = events[0]!.data.payment!
    assert.deepEqual(events, [
      { type: 'return.requested', orderId: o.orderId, sequence: sequence + 1, data: { order: eventOrder(afterRequest), payment: paymentThen, return: requested } },
      {
        type: 'payment.refunded',
        orderId: o.orderId,
        sequence: sequence + 2,
        data: { order: eventOrder(afterReceipt), payment, refund: { amount: 1300, reason: 'RETURN', returnId: 1 } },
      },
      { type: 'return.received', orderId: o.orderId, sequence: sequence + 3, data: { order: eventOrder(afterReceipt), payment, return: done } },
    ])
    assert.deepEqual({ ...paymentThen, updatedAt: '' }, { ...payment, refundedAmount: 0, status: 'COMPLETED', updatedAt: '' })
  })

  it('a partial receipt refunds and restocks only what came back; the rest may be asked for again, never more than delivered minus returned or open', async () => {
    const o = await deliveredOrder(ctx.api)
    assertReturn(await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 2 }] }), 201, {
      returnId: 1,
      orderId: o.orderId,
      status: 'REQUESTED',
      items: [{ productId: o.beans, quantity: 2, reason: null, receivedQuantity: null, restock: null }],
      note: null,
      rejectionReason: null,
      refundAmount: null,
    })
    // The two beans are in an open return: none is left to ask for; cups are.
    const before = await everything(ctx.api, o)
    assertError(await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 4 }, { productId: o.beans, quantity: 1 }] }), {
      code: 'VALIDATION_FAILED',
      instance: o.returnsUrl,
      detail: 'The request has invalid parameters.',
      invalidParams: [
        { field: 'items[0].quantity', message: 'must be at most 3: 3 delivered, 0 returned, 0 in open returns' },
        { field: 'items[1].quantity', message: 'must be at most 0: 2 delivered, 0 returned, 2 in open returns' },
      ],
    })
    assert.deepEqual(await everything(ctx.api, o), before)

    // One bag came back, not restocked (torn), cups line untouched; the default refund is 1 × 500.
    assertReturn(await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, { items: [{ productId: o.beans, quantity: 1, restock: false }] }), 200, {
      returnId: 1,
      orderId: o.orderId,
      status: 'RECEIVED',
      items: [{ productId: o.beans, quantity: 2, reason: null, receivedQuantity: 1, restock: false }],
      note: null,
      rejectionReason: null,
      refundAmount: 500,
    })
    assert.deepEqual([await ctx.api.stockOf(o.beans), await ctx.api.stockOf(o.cups)], [8, 7])
    assert.deepEqual(returnedOf(await adminOrder(ctx.api, o)), [[o.beans, 2, 2, 1], [o.cups, 3, 3, 0]])

    // One bean is left to return now: 2 delivered, 1 returned, none open.
    assertError(await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 2 }] }), {
      code: 'VALIDATION_FAILED',
      instance: o.returnsUrl,
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'items[0].quantity', message: 'must be at most 1: 2 delivered, 1 returned, 0 in open returns' }],
    })
    const second = await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })
    assert.equal(second.statusCode, 201, second.body)
    assert.equal(second.json().data.returnId, 2)
  })

  it('receives with an explicit refundAmount (0 allowed: no payment.refunded) and refuses one above what is still refundable', async () => {
    const o = await deliveredOrder(ctx.api)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 3 }] })).statusCode, 201)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)

    const before = await everything(ctx.api, o)
    assertError(await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, { items: [{ productId: o.cups, quantity: 3, restock: true }], refundAmount: 1901 }), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/admin/returns/1/receive',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'refundAmount', message: 'must not exceed the 1900 still refundable' }],
    })
    assert.deepEqual(await everything(ctx.api, o), before)

    const eventsBefore = await eventsOf(ctx.api, o)
    const zero = await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, { items: [{ productId: o.cups, quantity: 3, restock: true }], refundAmount: 0 })
    assert.equal(successData<Return>(zero).refundAmount, 0)
    assert.deepEqual((await eventsOf(ctx.api, o)).slice(eventsBefore.length).map(event => event.type), ['return.received'])
    assert.equal(await ctx.api.stockOf(o.cups), 10)
    const order = await adminOrder(ctx.api, o)
    assert.deepEqual([order.refundedAmount, order.paymentStatus, order.balanceDue], [0, 'PAID', 0])

    // More than the goods were worth, but within what is refundable: as given.
    const more = await patch(ctx.api, '/api/v1/admin/returns/2/receive', o.admin, { items: [{ productId: o.beans, quantity: 1, restock: true }], refundAmount: 1900 })
    assert.equal(successData<Return>(more).refundAmount, 1900)
    const refunded = await adminOrder(ctx.api, o)
    assert.deepEqual([refunded.refundedAmount, refunded.paymentStatus, refunded.balanceDue], [1900, 'REFUNDED', 0])
    assert.deepEqual(refunded.payments, [{ paymentId: o.paymentId, amount: 1900, refundedAmount: 1900, status: 'REFUNDED' }])
  })

  it('caps the default refund at what is still refundable after a goodwill refund', async () => {
    const o = await deliveredOrder(ctx.api)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 1800 })).statusCode, 200)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 2 }] })).statusCode, 201)
    const res = await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, { items: [{ productId: o.beans, quantity: 2, restock: true }] })
    assert.equal(successData<Return>(res).refundAmount, 100)
    const order = await adminOrder(ctx.api, o)
    assert.deepEqual(order.payments, [{ paymentId: o.paymentId, amount: 1900, refundedAmount: 1900, status: 'REFUNDED' }])
    assert.deepEqual([order.refundedAmount, order.paymentStatus, order.balanceDue], [1900, 'REFUNDED', 0])
    // Nothing is left to refund: the default is 0 now, an explicit amount above 0 is refused.
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    assertError(await patch(ctx.api, '/api/v1/admin/returns/2/receive', o.admin, { items: [{ productId: o.cups, quantity: 1, restock: true }], refundAmount: 1 }), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/admin/returns/2/receive',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'refundAmount', message: 'must not exceed the 0 still refundable' }],
    })
    assert.equal(successData<Return>(await patch(ctx.api, '/api/v1/admin/returns/2/receive', o.admin, { items: [{ productId: o.cups, quantity: 1, restock: true }] })).refundAmount, 0)
  })

  it('a refund spanning two payments takes the newest first: one payment.refunded per payment, then return.received', async () => {
    const o = await deliveredOrder(ctx.api)
    // Two captured payments, as an edit that raised the total would leave them: 1200 (the first) and 700.
    const db = ctx.api.app.db
    await db.updateTable('payments').set({ amount: 1200 }).where('id', '=', o.paymentId).execute()
    const { id: newer } = await db.insertInto('payments').values({
      order_id: o.orderId, customer_id: o.owner.id, amount: 700, currency: 'USD', status: 'COMPLETED', method: 'CARD', provider: 'simulated', provider_reference: 'sim_ch_second',
    }).returning('id').executeTakeFirstOrThrow()
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 2 }, { productId: o.cups, quantity: 1 }] })).statusCode, 201)
    const eventsBefore = await eventsOf(ctx.api, o)
    const res = await patch(ctx.api, '/api/v1/admin/returns/1/receive', o.admin, {
      items: [{ productId: o.beans, quantity: 2, restock: false }, { productId: o.cups, quantity: 1, restock: false }],
    })
    assert.equal(successData<Return>(res).refundAmount, 1300)
    const order = await adminOrder(ctx.api, o)
    assert.deepEqual(order.payments, [
      { paymentId: o.paymentId, amount: 1200, refundedAmount: 600, status: 'PARTIALLY_REFUNDED' },
      { paymentId: newer, amount: 700, refundedAmount: 700, status: 'REFUNDED' },
    ])
    assert.deepEqual([order.paidAmount, order.refundedAmount, order.balanceDue, order.paymentStatus], [1900, 1300, 0, 'PARTIALLY_REFUNDED'])
    const events = (await eventsOf(ctx.api, o)).slice(eventsBefore.length)
    assert.deepEqual(events.map(event => [event.type, event.data.payment?.paymentId, event.data.refund]), [
      ['payment.refunded', newer, { amount: 700, reason: 'RETURN', returnId: 1 }],
      ['payment.refunded', o.paymentId, { amount: 600, reason: 'RETURN', returnId: 1 }],
      // Not a payment event: the order's most recent payment.
      ['return.received', newer, undefined],
    ])
    assert.deepEqual(await db.selectFrom('payment_refunds').select(['payment_id', 'amount', 'reason', 'return_id']).orderBy('id').execute(), [
      { payment_id: newer, amount: 700, reason: 'RETURN', return_id: 1 },
      { payment_id: o.paymentId, amount: 600, reason: 'RETURN', return_id: 1 },
    ])
  })

  it('cancel (owner or admin) and reject (admin, with a reason or none): 200 with the return and the new ETag; again → 200, nothing changes; other moves → 400', async () => {
    const o = await deliveredOrder(ctx.api)
    for (let i = 0; i < 3; i++) assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    const base = { orderId: o.orderId, items: [{ productId: o.cups, quantity: 1, reason: null, receivedQuantity: null, restock: null }], note: null, rejectionReason: null, refundAmount: null }
    const eventsBefore = await eventsOf(ctx.api, o)

    const cancelled = await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.owner)
    const cancelledReturn = assertReturn(cancelled, 200, { ...base, returnId: 1, status: 'CANCELLED' })
    const version = (await adminOrder(ctx.api, o)).version
    assert.equal(cancelled.headers.etag, `"${version}"`)
    // Again: the same answer, nothing changes (not even the version).
    const before = await everything(ctx.api, o)
    const again = await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.admin)
    assert.deepEqual(successData<Return>(again), cancelledReturn)
    assert.equal(again.headers.etag, `"${version}"`)
    assert.deepEqual(await everything(ctx.api, o), before)

    const rejected = assertReturn(await patch(ctx.api, '/api/v1/admin/returns/2/reject', o.admin, { reason: 'No damage visible on the photos' }), 200,
      { ...base, returnId: 2, status: 'REJECTED', rejectionReason: 'No damage visible on the photos' })
    const afterReject = await everything(ctx.api, o)
    assert.deepEqual(successData<Return>(await patch(ctx.api, '/api/v1/admin/returns/2/reject', o.admin, { reason: 'another reason' })), rejected)
    assert.deepEqual(await everything(ctx.api, o), afterReject)
    // No body at all: no reason.
    assertReturn(await ctx.api.inject({ method: 'PATCH', url: '/api/v1/admin/returns/3/reject', headers: o.admin.headers }), 200,
      { ...base, returnId: 3, status: 'REJECTED' })

    // Other moves from an ended return are refused, and change nothing.
    const ended = await everything(ctx.api, o)
    for (const [url, who, payload, detail] of [
      [`${o.returnsUrl}/2/cancel`, o.owner, undefined, 'Cannot cancel a return that is REJECTED; only a REQUESTED return can be cancelled.'],
      ['/api/v1/admin/returns/1/reject', o.admin, {}, 'Cannot reject a return that is CANCELLED; only a REQUESTED return can be rejected.'],
      ['/api/v1/admin/returns/1/receive', o.admin, { items: [{ productId: o.cups, quantity: 1, restock: true }] }, 'Cannot receive a return that is CANCELLED; only a REQUESTED return can be received.'],
      ['/api/v1/admin/returns/2/receive', o.admin, { items: [{ productId: o.cups, quantity: 1, restock: true }] }, 'Cannot receive a return that is REJECTED; only a REQUESTED return can be received.'],
    ] as const) {
      assertError(await patch(ctx.api, url, who, payload), { code: 'INVALID_RETURN_STATUS', instance: url, detail })
    }
    assert.deepEqual(await everything(ctx.api, o), ended)

    // A received return: receiving again answers it as it is; cancelling or rejecting it is refused.
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)
    const receipt = successData<Return>(await patch(ctx.api, '/api/v1/admin/returns/4/receive', o.admin, { items: [{ productId: o.beans, quantity: 1, restock: true }] }))
    const received = await everything(ctx.api, o)
    assert.deepEqual(successData<Return>(await patch(ctx.api, '/api/v1/admin/returns/4/receive', o.admin, { items: [{ productId: o.beans, quantity: 0, restock: false }], refundAmount: 5 })), receipt)
    assertError(await patch(ctx.api, `${o.returnsUrl}/4/cancel`, o.owner), {
      code: 'INVALID_RETURN_STATUS', instance: `${o.returnsUrl}/4/cancel`, detail: 'Cannot cancel a return that is RECEIVED; only a REQUESTED return can be cancelled.',
    })
    assertError(await patch(ctx.api, '/api/v1/admin/returns/4/reject', o.admin), {
      code: 'INVALID_RETURN_STATUS', instance: '/api/v1/admin/returns/4/reject', detail: 'Cannot reject a return that is RECEIVED; only a REQUESTED return can be rejected.',
    })
    assert.deepEqual(await everything(ctx.api, o), received)

    // History and events: one entry and one event per change.
    const history = successData<HistoryEntry[]>(await get(ctx.api, `${o.orderUrl}/history`, o.owner))
    assert.deepEqual(history.slice(-5).map(entry => [entry.action, entry.returnId, entry.actorRole]), [
      ['cancel_return', 1, 'USER'], ['reject_return', 2, 'ADMIN'], ['reject_return', 3, 'ADMIN'], ['request_return', 4, 'USER'], ['receive_return', 4, 'ADMIN'],
    ])
    assert.deepEqual((await eventsOf(ctx.api, o)).slice(eventsBefore.length).map(event => [event.type, event.data.return?.returnId, event.data.return?.status]), [
      ['return.cancelled', 1, 'CANCELLED'], ['return.rejected', 2, 'REJECTED'], ['return.rejected', 3, 'REJECTED'],
      ['return.requested', 4, 'REQUESTED'], ['payment.refunded', undefined, undefined], ['return.received', 4, 'RECEIVED'],
    ])
  })

  it('hasOpenReturn: admin lists, search and the export filter by it; it follows every step', async () => {
    const o = await deliveredOrder(ctx.api)
    const other = (await ctx.api.order(o.owner, [{ productId: o.beans, quantity: 1 }])).orderId
    const ids = async (url: string) => successData<{ content: OrderSummary[] }>(await get(ctx.api, url, o.admin)).content.map(order => order.orderId)
    const csvIds = async (query: string) => {
      const csv = await get(ctx.api, `/api/v1/admin/orders/export?${query}`, o.admin)
      assert.equal(csv.statusCode, 200, csv.body)
      return csv.body.trimEnd().split('\r\n').slice(1).map(line => Number(line.split(',')[0]))
    }
    const open = async () => {
      const found = []
      for (const path of ['/api/v1/admin/orders', '/api/v1/admin/orders/search']) {
        found.push([await ids(`${path}?hasOpenReturn=true`), await ids(`${path}?hasOpenReturn=false`)])
      }
      found.push([await csvIds('hasOpenReturn=true'), await csvIds('hasOpenReturn=false')])
      return found
    }
    const none = [[[], [other, o.orderId]], [[], [other, o.orderId]], [[], [other, o.orderId]]]
    const one = [[[o.orderId], [other]], [[o.orderId], [other]], [[o.orderId], [other]]]
    assert.deepEqual(await open(), none)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    assert.deepEqual(await open(), one)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)
    assert.equal((await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.owner)).statusCode, 200)
    // Return 2 is still open.
    assert.deepEqual(await open(), one)
    assert.deepEqual(await ids('/api/v1/admin/orders?hasOpenReturn=true&status=DELIVERED&fulfillmentStatus=FULFILLED'), [o.orderId])
    assert.deepEqual(await ids('/api/v1/admin/orders?hasOpenReturn=true&status=PLACED'), [])
    assert.equal((await patch(ctx.api, '/api/v1/admin/returns/2/reject', o.admin)).statusCode, 200)
    assert.deepEqual(await open(), none)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)
    assert.deepEqual(await open(), one)
    assert.equal((await patch(ctx.api, '/api/v1/admin/returns/3/receive', o.admin, { items: [{ productId: o.beans, quantity: 1, restock: true }] })).statusCode, 200)
    assert.deepEqual(await open(), none)

    for (const path of ['/api/v1/admin/orders', '/api/v1/admin/orders/search', '/api/v1/admin/orders/export']) {
      assertError(await get(ctx.api, `${path}?hasOpenReturn=yes`, o.admin), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The query has invalid parameters.',
        invalidParams: [{ field: 'hasOpenReturn', message: 'must be one of true, false' }],
      })
    }
    // Members' lists take no such filter.
    assertError(await get(ctx.api, '/api/v1/orders?hasOpenReturn=true', o.owner), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The query has invalid parameters.',
      invalidParams: [{ field: 'hasOpenReturn', message: 'is not a recognised query parameter' }],
    })
  })

  it('GET /admin/returns: every return newest first in the page shape, by status (comma list) and orderId', async () => {
    const o = await deliveredOrder(ctx.api)
    const p = await deliveredOrder(ctx.api)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    assert.equal((await post(ctx.api, p.returnsUrl, p.owner, { items: [{ productId: p.cups, quantity: 1 }] })).statusCode, 201)
    assert.equal((await post(ctx.api, o.returnsUrl, o.admin, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)
    assert.equal((await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.owner)).statusCode, 200)
    const all = [
      successData<Return>(await get(ctx.api, `${o.returnsUrl}/3`, o.admin)),
      successData<Return>(await get(ctx.api, `${p.returnsUrl}/2`, o.admin)),
      successData<Return>(await get(ctx.api, `${o.returnsUrl}/1`, o.admin)),
    ]
    const page = (query: string) => get(ctx.api, `/api/v1/admin/returns${query}`, o.admin)
    assert.deepEqual(successData(await page('')), { content: all, page: 0, size: 20, totalElements: 3, totalPages: 1, first: true, last: true })
    assert.deepEqual(successData(await page('?size=2&page=1')), { content: [all[2]], page: 1, size: 2, totalElements: 3, totalPages: 2, first: false, last: true })
    assert.deepEqual(successData(await page('?status=REQUESTED')), { content: [all[0], all[1]], page: 0, size: 20, totalElements: 2, totalPages: 1, first: true, last: true })
    assert.deepEqual(successData(await page('?status=CANCELLED,RECEIVED')), { content: [all[2]], page: 0, size: 20, totalElements: 1, totalPages: 1, first: true, last: true })
    assert.deepEqual(successData(await page(`?orderId=${o.orderId}`)), { content: [all[0], all[2]], page: 0, size: 20, totalElements: 2, totalPages: 1, first: true, last: true })
    assert.deepEqual(successData(await page(`?orderId=${o.orderId}&status=REQUESTED`)), { content: [all[0]], page: 0, size: 20, totalElements: 1, totalPages: 1, first: true, last: true })
    assertError(await page('?status=OPEN'), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/admin/returns',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'status', message: 'must be one or more of REQUESTED, RECEIVED, REJECTED, CANCELLED, comma-separated' }],
    })
    assertError(await get(ctx.api, '/api/v1/admin/returns', o.owner), {
      code: 'ACCESS_DENIED', instance: '/api/v1/admin/returns', detail: 'This operation requires the ADMIN role.',
    })
  })

  it('an idempotency key answers a repeat with the first 201 as 200 and Idempotent-Replayed; another body with the key is 422', async () => {
    const o = await deliveredOrder(ctx.api)
    const body = { items: [{ productId: o.cups, quantity: 1, reason: 'OTHER' }] }
    const first = await post(ctx.api, o.returnsUrl, o.owner, body, { 'Idempotency-Key': 'return-1' })
    assert.equal(first.statusCode, 201, first.body)
    const before = await everything(ctx.api, o)
    const again = await post(ctx.api, o.returnsUrl, o.owner, body, { 'Idempotency-Key': 'return-1' })
    assert.equal(again.statusCode, 200, again.body)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.headers.location, first.headers.location)
    assert.equal(again.headers.etag, first.headers.etag)
    assert.deepEqual(again.json(), first.json())
    assert.deepEqual(await everything(ctx.api, o), before)
    assertError(await post(ctx.api, o.returnsUrl, o.owner, { ...body, note: 'different' }, { 'Idempotency-Key': 'return-1' }), {
      code: 'IDEMPOTENCY_KEY_REUSED', instance: o.returnsUrl, detail: 'This idempotency key was already used with a different request body.',
    })
    assert.deepEqual(await everything(ctx.api, o), before)
  })
})
