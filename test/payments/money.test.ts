import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import { expireLapsedReservations } from '../../src/orders/lifecycle.js'
import type { OrderDetail, OrderSummary } from '../../src/orders/schemas.js'
import { assertError, describeEachBackend, feedSettled, successData, summaryOf, type Api } from '../helper.js'
import { confirmedOrder, get, patch, type Confirmed } from './fixtures.js'

// CONTRACT §15.1, §15.5, §15.7: the order's money (paidAmount, refundedAmount, balanceDue,
// paymentStatus, payments), stored on the order, shown in detail and summary, filtered in admin lists.

/** The money fields of an order's detail, and its payments. */
const moneyOf = (order: OrderDetail) => ({
  payments: order.payments,
  paidAmount: order.paidAmount,
  refundedAmount: order.refundedAmount,
  balanceDue: order.balanceDue,
  paymentStatus: order.paymentStatus,
})

const adminUrl = (o: Confirmed) => `/api/v1/admin/orders/${o.orderId}`
const adminOrder = async (api: Api, o: Confirmed) => successData<OrderDetail>(await get(api, adminUrl(o), o.admin))
const ownerOrder = async (api: Api, o: Confirmed) => successData<OrderDetail>(await get(api, o.orderUrl, o.owner))
const payment = (o: Confirmed, refundedAmount: number, status: string) => ({ paymentId: o.paymentId, amount: 1000, refundedAmount, status })

describeEachBackend('money on the order', (ctx) => {
  it('an order before confirm owes its total and has no payment: UNPAID, balanceDue = totalAmount', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { price: 700, stockQuantity: 5 })
    const placed = await ctx.api.order(owner, [{ productId: product.productId, quantity: 3 }])
    const order = successData<OrderDetail>(await get(ctx.api, `/api/v1/orders/${placed.orderId}`, owner))
    assert.deepEqual(moneyOf(order), { payments: [], paidAmount: 0, refundedAmount: 0, balanceDue: 2100, paymentStatus: 'UNPAID' })
  })

  it('follows confirm, a declined then an approved payment and two GOODWILL refunds; delivery is offered until everything is refunded', async () => {
    const o = await confirmedOrder(ctx.api)
    const steps: Array<[string, ReturnType<typeof moneyOf>, boolean]> = []
    const record = async (step: string) => {
      const order = await adminOrder(ctx.api, o)
      assert.deepEqual(moneyOf(await ownerOrder(ctx.api, o)), moneyOf(order), 'owner and admin read the same money')
      steps.push([step, moneyOf(order), order.allowedActions.includes('deliver')])
    }
    await record('confirmed')
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_declined' })).statusCode, 402)
    await record('declined')
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    await record('captured')
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 300 })).statusCode, 200)
    await record('goodwill 300')
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin)).statusCode, 200)
    await record('goodwill the rest')
    assert.deepEqual(steps, [
      ['confirmed', { payments: [payment(o, 0, 'PENDING')], paidAmount: 0, refundedAmount: 0, balanceDue: 1000, paymentStatus: 'UNPAID' }, false],
      ['declined', { payments: [payment(o, 0, 'FAILED')], paidAmount: 0, refundedAmount: 0, balanceDue: 1000, paymentStatus: 'UNPAID' }, false],
      ['captured', { payments: [payment(o, 0, 'COMPLETED')], paidAmount: 1000, refundedAmount: 0, balanceDue: 0, paymentStatus: 'PAID' }, true],
      // A GOODWILL refund is credited: what is owed falls with what was kept, so nothing is due.
      ['goodwill 300', {
        payments: [payment(o, 300, 'PARTIALLY_REFUNDED')], paidAmount: 1000, refundedAmount: 300, balanceDue: 0, paymentStatus: 'PARTIALLY_REFUNDED',
      }, true],
      ['goodwill the rest', { payments: [payment(o, 1000, 'REFUNDED')], paidAmount: 1000, refundedAmount: 1000, balanceDue: 0, paymentStatus: 'REFUNDED' }, false],
    ])

    // Fully refunded: the delivery is refused (CONTRACT §15.7), with the whole error, and nothing changes.
    const before = await adminOrder(ctx.api, o)
    assertError(await patch(ctx.api, adminUrl(o), o.admin, { status: 'DELIVERED' }), {
      code: 'INVALID_ORDER_STATUS',
      instance: adminUrl(o),
      detail: 'Cannot deliver an order that is CONFIRMED: its paymentStatus is REFUNDED; delivery needs PAID or PARTIALLY_REFUNDED.',
    })
    assert.deepEqual(await adminOrder(ctx.api, o), before)
  })

  it('delivers a partly refunded order (GOODWILL): balanceDue 0, PARTIALLY_REFUNDED, and the money stays as it was', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 250 })).statusCode, 200)
    const delivered = successData<OrderDetail>(await patch(ctx.api, adminUrl(o), o.admin, { status: 'DELIVERED' }))
    assert.equal(delivered.status, 'DELIVERED')
    assert.deepEqual(moneyOf(delivered), {
      payments: [payment(o, 250, 'PARTIALLY_REFUNDED')], paidAmount: 1000, refundedAmount: 250, balanceDue: 0, paymentStatus: 'PARTIALLY_REFUNDED',
    })
  })

  for (const [state, token] of [['PENDING', undefined], ['FAILED', 'tok_declined']] as const) {
    it(`refuses to deliver while balanceDue > 0 (payment ${state}): 400 with the whole error, nothing changes`, async () => {
      const o = await confirmedOrder(ctx.api)
      if (token) assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: token })).statusCode, 402)
      const before = await adminOrder(ctx.api, o)
      assert.equal(before.allowedActions.includes('deliver'), false)
      assertError(await patch(ctx.api, adminUrl(o), o.admin, { status: 'DELIVERED' }), {
        code: 'INVALID_ORDER_STATUS',
        instance: adminUrl(o),
        detail: 'Cannot deliver an order that is CONFIRMED: its balanceDue is 1000 (paymentStatus UNPAID); delivery needs it paid in full.',
      })
      assert.deepEqual(await adminOrder(ctx.api, o), before)
    })
  }

  it('a cancel of a paid order refunds the rest with reason CANCEL: REFUNDED, nothing due, payment.refunded carries the reason', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 100 })).statusCode, 200)
    assert.equal((await patch(ctx.api, `${o.orderUrl}/cancel`, o.owner)).statusCode, 200)
    const order = await adminOrder(ctx.api, o)
    assert.equal(order.status, 'CANCELLED')
    assert.deepEqual(moneyOf(order), { payments: [payment(o, 1000, 'REFUNDED')], paidAmount: 1000, refundedAmount: 1000, balanceDue: 0, paymentStatus: 'REFUNDED' })
    const refunds = await ctx.api.app.db.selectFrom('payment_refunds').select(['amount', 'reason', 'edit_id', 'return_id'])
      .where('payment_id', '=', o.paymentId).orderBy('id').execute()
    assert.deepEqual(refunds, [
      { amount: 100, reason: 'GOODWILL', edit_id: null, return_id: null },
      { amount: 900, reason: 'CANCEL', edit_id: null, return_id: null },
    ])
    await feedSettled(ctx.api.app) // the feed shows nothing a transaction still open elsewhere may precede
    const feed = successData<{ content: Array<{ type: string, data: { refund?: unknown, payment: { paymentId: number } | null } }> }>(
      await get(ctx.api, `/api/v1/admin/events?orderId=${o.orderId}&type=payment.refunded`, o.admin))
    assert.deepEqual(feed.content.map(event => [event.data.refund, event.data.payment?.paymentId]), [
      [{ amount: 100, reason: 'GOODWILL' }, o.paymentId],
      [{ amount: 900, reason: 'CANCEL' }, o.paymentId],
    ])
  })

  it('a cancel of a confirmed unpaid order cancels its payment: UNPAID, nothing due', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal((await patch(ctx.api, `${o.orderUrl}/cancel`, o.owner)).statusCode, 200)
    assert.deepEqual(moneyOf(await adminOrder(ctx.api, o)), {
      payments: [payment(o, 0, 'CANCELLED')], paidAmount: 0, refundedAmount: 0, balanceDue: 0, paymentStatus: 'UNPAID',
    })
  })

  it('the expiry of a confirmed order never paid cancels its payment: CANCELLED order, payment CANCELLED, UNPAID, nothing due', async () => {
    const o = await confirmedOrder(ctx.api)
    await ctx.api.app.db.updateTable('orders').set({ reserved_until: sql<Date>`now() - interval '1 second'` }).where('id', '=', o.orderId).execute()
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 1)
    const order = await adminOrder(ctx.api, o)
    assert.equal(order.status, 'CANCELLED')
    assert.deepEqual(moneyOf(order), { payments: [payment(o, 0, 'CANCELLED')], paidAmount: 0, refundedAmount: 0, balanceDue: 0, paymentStatus: 'UNPAID' })
  })

  it('member and admin lists show each order with the same money fields as its detail', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
    assert.equal((await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 400 })).statusCode, 200)
    const expected: OrderSummary = summaryOf(await ownerOrder(ctx.api, o))
    assert.deepEqual({ ...expected, orderId: 0, customerId: 0, createdAt: '' }, {
      orderId: 0,
      customerId: 0,
      status: 'CONFIRMED',
      itemCount: 1,
      totalAmount: 1000,
      currency: 'USD',
      paidAmount: 1000,
      refundedAmount: 400,
      balanceDue: 0,
      paymentStatus: 'PARTIALLY_REFUNDED',
      fulfillmentStatus: 'UNFULFILLED',
      createdAt: '',
    })
    for (const [url, who] of [
      ['/api/v1/orders', o.owner], ['/api/v1/orders/search', o.owner], ['/api/v1/orders?status=CONFIRMED', o.owner],
      ['/api/v1/admin/orders', o.admin], ['/api/v1/admin/orders/search', o.admin],
    ] as const) {
      assert.deepEqual(successData<{ content: OrderSummary[] }>(await get(ctx.api, url, who)).content, [expected], url)
    }
  })

  it('admin lists filter by paymentStatus (comma list), on the list and the search; a bad value is 400 naming the field', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { price: 500, stockQuantity: 50 })
    const placeOne = async () => {
      const { orderId } = await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
      return orderId
    }
    const confirmOne = async () => {
      const orderId = await placeOne()
      assert.equal((await patch(ctx.api, `/api/v1/orders/${orderId}/confirm`, owner)).statusCode, 200)
      const paymentId = successData<OrderDetail>(await get(ctx.api, `/api/v1/orders/${orderId}`, owner)).paymentId!
      return { orderId, paymentId }
    }
    const payOne = async () => {
      const o = await confirmOne()
      assert.equal((await patch(ctx.api, `/api/v1/payments/${o.paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
      return o
    }
    const unconfirmed = await placeOne()
    const unpaid = (await confirmOne()).orderId
    const paid = (await payOne()).orderId
    const partly = await payOne()
    assert.equal((await patch(ctx.api, `/api/v1/payments/${partly.paymentId}/refund`, admin, { amount: 100 })).statusCode, 200)
    const refunded = await payOne()
    assert.equal((await patch(ctx.api, `/api/v1/payments/${refunded.paymentId}/refund`, admin)).statusCode, 200)

    const ids = async (url: string) => successData<{ content: OrderSummary[] }>(await get(ctx.api, url, admin)).content.map(order => order.orderId)
    for (const path of ['/api/v1/admin/orders', '/api/v1/admin/orders/search']) {
      assert.deepEqual(await ids(`${path}?paymentStatus=UNPAID`), [unpaid, unconfirmed])
      assert.deepEqual(await ids(`${path}?paymentStatus=PAID`), [paid])
      assert.deepEqual(await ids(`${path}?paymentStatus=${encodeURIComponent('PARTIALLY_REFUNDED, REFUNDED')}`), [refunded.orderId, partly.orderId])
      assert.deepEqual(await ids(`${path}?paymentStatus=PARTIALLY_PAID`), [])
      assert.deepEqual(await ids(`${path}?paymentStatus=UNPAID&status=CONFIRMED`), [unpaid])
      assert.deepEqual(await ids(`${path}?paymentStatus=REFUNDED,PAID&sort=createdAt,asc`), [paid, refunded.orderId])

      const before = await ids(path)
      assertError(await get(ctx.api, `${path}?paymentStatus=PAID,SETTLED`, admin), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The request has invalid parameters.',
        invalidParams: [{ field: 'paymentStatus', message: 'must be one or more of UNPAID, PARTIALLY_PAID, PAID, PARTIALLY_REFUNDED, REFUNDED, comma-separated' }],
      })
      assertError(await get(ctx.api, `${path}?paymentStatus=`, admin), {
        code: 'VALIDATION_FAILED',
        instance: path,
        detail: 'The query has invalid parameters.',
        invalidParams: [{ field: 'paymentStatus', message: 'must not be empty' }],
      })
      assert.deepEqual(await ids(path), before)
    }
    // The export takes the lists' filters (CONTRACT §15.7).
    const csv = await get(ctx.api, '/api/v1/admin/orders/export?paymentStatus=PAID', admin)
    assert.equal(csv.statusCode, 200, csv.body)
    assert.deepEqual(csv.body.trimEnd().split('\r\n').slice(1).map(line => Number(line.split(',')[0])), [paid])
    // Members' lists take no such filter.
    assertError(await get(ctx.api, '/api/v1/orders?paymentStatus=PAID', owner), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The query has invalid parameters.',
      invalidParams: [{ field: 'paymentStatus', message: 'is not a recognised query parameter' }],
    })
  })
})
