import assert from 'node:assert/strict'
import { beforeEach, it } from 'node:test'
import { simulatedProvider, type PaymentProvider } from '../../src/payments/provider.js'
import { assertError, describeEachBackend, successData } from '../helper.js'
import { get } from '../payments/fixtures.js'
import { adminOrder, assertEdit, confirmed, edit, everything, eventsOf, pay, placedOrder, type Placed } from './fixtures.js'

// How an admin's edit of a CONFIRMED order settles its difference in money (CONTRACT §15.2, §15.7;
// docs/decisions.md "Editing an order"): the answer, the payments, the order's money, and the events
// (the payments' first, then order.edited).

/** An edit of A's quantity from `before` to `after` (500 each) by the admin, from `fromVersion`. */
const changeOfA = (o: Placed, fromVersion: number, before: number, after: number, settlement: { kind: string, amount: number, paymentId: number | null }) => ({
  orderId: o.orderId,
  fromVersion,
  toVersion: fromVersion + 1,
  changes: [{ productId: o.a, productName: 'Beans', quantityBefore: before, quantityAfter: after, unitPrice: 500 }],
  shippingAddressChanged: false,
  totalBefore: before * 500,
  totalAfter: after * 500,
  settlement: settlement as any,
  actorId: 0,
  actorRole: 'ADMIN' as const,
})

const money = (order: any) => ({
  totalAmount: order.totalAmount,
  payments: order.payments,
  paidAmount: order.paidAmount,
  refundedAmount: order.refundedAmount,
  balanceDue: order.balanceDue,
  paymentStatus: order.paymentStatus,
})

/** The events after `skip`, as [type, paymentId, refund] and the edit of order.edited. */
async function eventsAfter (ctx: { api: any }, o: Placed, skip: number) {
  const events = (await eventsOf(ctx.api, o)).slice(skip)
  return events.map((event: any) => [event.type, event.data.payment?.paymentId ?? null, event.data.refund ?? null, event.data.edit ?? null])
}

describeEachBackend('settling an edit of a confirmed order', (ctx) => {
  it('nothing captured: the open payment becomes the new total, PAYMENT_ADJUSTED by the difference; payment.updated, then order.edited', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    const seen = (await eventsOf(ctx.api, o)).length
    const res = await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"2"' })
    const done = assertEdit(res, 201, { ...changeOfA(o, 2, 2, 3, { kind: 'PAYMENT_ADJUSTED', amount: 500, paymentId }), actorId: o.admin.id })
    assert.equal(res.headers.etag, '"3"')
    assert.deepEqual(money(await adminOrder(ctx.api, o)), {
      totalAmount: 1500, payments: [{ paymentId, amount: 1500, refundedAmount: 0, status: 'PENDING' }], paidAmount: 0, refundedAmount: 0, balanceDue: 1500, paymentStatus: 'UNPAID',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [['payment.updated', paymentId, null, null], ['order.edited', paymentId, null, done]])
    // Lowering it adjusts it down again, by 1000.
    assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"3"' }), 201,
      { ...changeOfA(o, 3, 3, 1, { kind: 'PAYMENT_ADJUSTED', amount: 1000, paymentId }), actorId: o.admin.id })
    assert.equal((await adminOrder(ctx.api, o)).payments[0].amount, 500)
    assert.equal(await ctx.api.stockOf(o.a), 9)
  })

  it('money captured and the total fell: REFUND of the difference, reason EDIT; payment.refunded with the editId, then order.edited', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    await pay(ctx.api, o, paymentId)
    const seen = (await eventsOf(ctx.api, o)).length
    const res = await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"2"' })
    const done = assertEdit(res, 201, { ...changeOfA(o, 2, 2, 1, { kind: 'REFUND', amount: 500, paymentId }), actorId: o.admin.id })
    assert.deepEqual(money(await adminOrder(ctx.api, o)), {
      totalAmount: 500, payments: [{ paymentId, amount: 1000, refundedAmount: 500, status: 'PARTIALLY_REFUNDED' }], paidAmount: 1000, refundedAmount: 500, balanceDue: 0, paymentStatus: 'PARTIALLY_REFUNDED',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [
      ['payment.refunded', paymentId, { amount: 500, reason: 'EDIT', editId: done.editId }, null],
      ['order.edited', paymentId, null, done],
    ])
    const refunds = await ctx.api.app.db.selectFrom('payment_refunds').select(['payment_id', 'amount', 'reason', 'edit_id']).execute()
    assert.deepEqual(refunds, [{ payment_id: paymentId, amount: 500, reason: 'EDIT', edit_id: done.editId }])
    assert.equal(await ctx.api.stockOf(o.a), 9)
  })

  it('money captured and the total rose: a new PENDING payment for the difference (PAYMENT); payment.created, then order.edited; the new payment is paid as any', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    await pay(ctx.api, o, paymentId)
    const seen = (await eventsOf(ctx.api, o)).length
    const res = await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"2"' })
    const second = res.json().data.settlement.paymentId as number
    assert.ok(second > paymentId)
    const done = assertEdit(res, 201, { ...changeOfA(o, 2, 2, 3, { kind: 'PAYMENT', amount: 500, paymentId: second }), actorId: o.admin.id })
    assert.deepEqual(money(await adminOrder(ctx.api, o)), {
      totalAmount: 1500,
      payments: [{ paymentId, amount: 1000, refundedAmount: 0, status: 'COMPLETED' }, { paymentId: second, amount: 500, refundedAmount: 0, status: 'PENDING' }],
      paidAmount: 1000,
      refundedAmount: 0,
      balanceDue: 500,
      paymentStatus: 'PARTIALLY_PAID',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [['payment.created', second, null, null], ['order.edited', second, null, done]])
    await pay(ctx.api, o, second)
    assert.deepEqual(money(await adminOrder(ctx.api, o)).paymentStatus, 'PAID')
  })

  it('a preview of each kind shows the figures and changes nothing', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    await pay(ctx.api, o, paymentId)
    const before = await everything(ctx.api, o)
    assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"2"', query: '?dryRun=true' }), 200,
      { ...changeOfA(o, 2, 2, 1, { kind: 'REFUND', amount: 500, paymentId }), actorId: o.admin.id, editId: null })
    assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"2"', query: '?dryRun=true' }), 200,
      { ...changeOfA(o, 2, 2, 3, { kind: 'PAYMENT', amount: 500, paymentId: null }), actorId: o.admin.id, editId: null })
    assert.deepEqual(await everything(ctx.api, o), before)
  })

  it('a refund spanning two payments takes from the newest first: two payment.refunded, newest first, then order.edited', async () => {
    const o = await placedOrder(ctx.api)
    const first = await confirmed(ctx.api, o)
    await pay(ctx.api, o, first)
    const second = (await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"2"' })).json().data.settlement.paymentId as number
    await pay(ctx.api, o, second)
    const seen = (await eventsOf(ctx.api, o)).length
    const done = assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"3"' }), 201,
      { ...changeOfA(o, 3, 3, 1, { kind: 'REFUND', amount: 1000, paymentId: second }), actorId: o.admin.id })
    assert.deepEqual(money(await adminOrder(ctx.api, o)), {
      totalAmount: 500,
      payments: [{ paymentId: first, amount: 1000, refundedAmount: 500, status: 'PARTIALLY_REFUNDED' }, { paymentId: second, amount: 500, refundedAmount: 500, status: 'REFUNDED' }],
      paidAmount: 1500,
      refundedAmount: 1000,
      balanceDue: 0,
      paymentStatus: 'PARTIALLY_REFUNDED',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [
      ['payment.refunded', second, { amount: 500, reason: 'EDIT', editId: done.editId }, null],
      ['payment.refunded', first, { amount: 500, reason: 'EDIT', editId: done.editId }, null],
      ['order.edited', second, null, done],
    ])
  })

  it('captured with a payment still open: a rise adds to the open payment, a fall takes from it first, and past it cancels it and refunds the rest', async () => {
    const o = await placedOrder(ctx.api)
    const first = await confirmed(ctx.api, o)
    await pay(ctx.api, o, first)
    const second = (await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"2"' })).json().data.settlement.paymentId as number
    // A rise while 500 is still open: the open payment grows to 1000; no third payment.
    assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 4 }] }, { ifMatch: '"3"' }), 201,
      { ...changeOfA(o, 3, 3, 4, { kind: 'PAYMENT_ADJUSTED', amount: 500, paymentId: second }), actorId: o.admin.id })
    // A fall of 500: the open payment goes back to 500.
    assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 3 }] }, { ifMatch: '"4"' }), 201,
      { ...changeOfA(o, 4, 4, 3, { kind: 'PAYMENT_ADJUSTED', amount: 500, paymentId: second }), actorId: o.admin.id })
    const seen = (await eventsOf(ctx.api, o)).length
    // A fall of 1000: the open 500 is no longer owed (cancelled) and 500 of the captured 1000 is refunded.
    const done = assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"5"' }), 201,
      { ...changeOfA(o, 5, 3, 1, { kind: 'REFUND', amount: 500, paymentId: first }), actorId: o.admin.id })
    assert.deepEqual(money(await adminOrder(ctx.api, o)), {
      totalAmount: 500,
      payments: [{ paymentId: first, amount: 1000, refundedAmount: 500, status: 'PARTIALLY_REFUNDED' }, { paymentId: second, amount: 500, refundedAmount: 0, status: 'CANCELLED' }],
      paidAmount: 1000,
      refundedAmount: 500,
      balanceDue: 0,
      paymentStatus: 'PARTIALLY_REFUNDED',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [
      ['payment.cancelled', second, null, null],
      ['payment.refunded', first, { amount: 500, reason: 'EDIT', editId: done.editId }, null],
      ['order.edited', second, null, done],
    ])
    assert.equal(await ctx.api.stockOf(o.a), 9)
  })

  it('an address-only edit of a confirmed order settles NONE and announces only order.edited', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    const seen = (await eventsOf(ctx.api, o)).length
    const done = assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 2 }], shippingAddress: '9 Elm St' }, { ifMatch: '"2"' }), 201, {
      orderId: o.orderId,
      fromVersion: 2,
      toVersion: 3,
      changes: [],
      shippingAddressChanged: true,
      totalBefore: 1000,
      totalAfter: 1000,
      settlement: { kind: 'NONE', amount: 0, paymentId: null },
      actorId: o.admin.id,
      actorRole: 'ADMIN',
    })
    assert.deepEqual(await eventsAfter(ctx, o, seen), [['order.edited', paymentId, null, done]])
    assert.equal((await adminOrder(ctx.api, o)).shippingAddress, '9 Elm St')
  })
})

/** Whether the provider below refuses refunds; each test starts with it refusing. */
let refundsFail = true
const simulated = simulatedProvider()
const refusingRefunds: PaymentProvider = {
  ...simulated,
  async refund (request) {
    if (refundsFail) throw new Error('upstream 502 from the card network')
    return simulated.refund(request)
  },
}

describeEachBackend('an edit whose refund the provider cannot make', (ctx) => {
  beforeEach(() => { refundsFail = true })

  it('answers 503 with Retry-After and changes nothing: lines, stock, money, version, history, events, edits, key; the same key applies it later', async () => {
    const o = await placedOrder(ctx.api)
    const paymentId = await confirmed(ctx.api, o)
    await pay(ctx.api, o, paymentId)
    const before = await everything(ctx.api, o)
    const key = { 'idempotency-key': 'edit-503' }
    const res = await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"2"', headers: key })
    assertError(res, {
      code: 'SERVICE_UNAVAILABLE',
      instance: o.editsUrl,
      detail: 'The payment provider could not be reached or did not complete the operation; nothing was changed. Try again.',
    })
    assert.equal(res.headers['retry-after'], '5')
    assert.deepEqual(await everything(ctx.api, o), before)

    refundsFail = false
    const done = assertEdit(await edit(ctx.api, o, o.admin, { changes: [{ productId: o.a, quantity: 1 }] }, { ifMatch: '"2"', headers: key }), 201,
      { ...changeOfA(o, 2, 2, 1, { kind: 'REFUND', amount: 500, paymentId }), actorId: o.admin.id })
    assert.deepEqual(successData(await get(ctx.api, o.editsUrl, o.owner)), [done])
  })
}, { build: { paymentProvider: refusingRefunds } })
