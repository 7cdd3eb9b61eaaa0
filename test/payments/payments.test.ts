import assert from 'node:assert/strict'
import { beforeEach, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { simulatedProvider, type PaymentProvider } from '../../src/payments/provider.js'
import type { Payment } from '../../src/payments/schemas.js'
import { assertError, describeEachBackend, type Api, type Member } from '../helper.js'
import {
  BODY_INVALID, TIMESTAMP, UNAUTHENTICATED, assertPayment, completedPayment, confirmedOrder, get, patch, pay, paymentIn, paymentOf,
  pendingPayment, type Confirmed, type Fields,
} from './fixtures.js'

const NOT_THE_PAYER = 'Only the customer who placed the order may pay for it.'
const DECLINED = 'The payment provider declined the payment: The card was declined. The payment is FAILED and may be processed again with another payment method.'
const REUSED = 'This idempotency key was already used with a different request body.'

const attemptsOf = async (api: Api, paymentId: number) =>
  (await api.app.db.selectFrom('payments').select('attempts').where('id', '=', paymentId).executeTakeFirstOrThrow()).attempts

const failedPayment = (o: Confirmed): Fields => ({ ...pendingPayment(o), status: 'FAILED', failureReason: 'The card was declined.' })

describeEachBackend('payments', (ctx) => {
  it('confirming an order opens one PENDING payment for its total, and the order detail names it', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { price: 500, stockQuantity: 10 })
    const order = await ctx.api.order(owner, [{ productId: product.productId, quantity: 2 }])
    const orderUrl = `/api/v1/orders/${order.orderId}`
    assert.equal(order.totalAmount, 1000)
    assert.equal((await get(ctx.api, orderUrl, owner)).json().data.paymentId, null)

    assert.equal((await patch(ctx.api, `${orderUrl}/confirm`, owner)).statusCode, 200)
    assert.equal((await patch(ctx.api, `${orderUrl}/confirm`, owner)).statusCode, 200)

    const rows = await ctx.api.app.db.selectFrom('payments').select(['id', 'order_id', 'customer_id', 'attempts']).execute()
    assert.equal(rows.length, 1)
    const paymentId = rows[0]!.id
    assert.deepEqual(rows[0], { id: paymentId, order_id: order.orderId, customer_id: owner.id, attempts: 0 })
    assert.equal((await get(ctx.api, orderUrl, owner)).json().data.paymentId, paymentId)
    assertPayment(await get(ctx.api, `/api/v1/payments/${paymentId}`, owner), {
      paymentId,
      orderId: order.orderId,
      amount: order.totalAmount,
      refundedAmount: 0,
      currency: 'USD',
      status: 'PENDING',
      method: null,
      failureReason: null,
    })
  })

  it('GET /payments/{id}: the owner and an admin read it; another member 403, an unknown id 404, anonymous 401', async () => {
    const o = await confirmedOrder(ctx.api)
    const mine = assertPayment(await get(ctx.api, o.paymentUrl, o.owner), pendingPayment(o))
    assert.deepEqual(assertPayment(await get(ctx.api, o.paymentUrl, o.admin), pendingPayment(o)), mine)

    const stranger = await ctx.api.member('stranger')
    assertError(await get(ctx.api, o.paymentUrl, stranger), {
      code: 'ACCESS_DENIED', instance: o.paymentUrl, detail: 'Only the owner of this payment or an admin may do this.',
    })
    for (const who of [o.owner, o.admin]) {
      assertError(await get(ctx.api, '/api/v1/payments/999999', who), {
        code: 'PAYMENT_NOT_FOUND', instance: '/api/v1/payments/999999', detail: 'Payment 999999 does not exist.',
      })
    }
    const anonymous = await get(ctx.api, o.paymentUrl)
    assertError(anonymous, { code: 'UNAUTHORIZED', instance: o.paymentUrl, detail: UNAUTHENTICATED })
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="order-service"')
  })

  it('process charges a PENDING payment: 200 COMPLETED with method CARD, as GET then shows it', async () => {
    const o = await confirmedOrder(ctx.api)
    const res = await pay(ctx.api, o, 'tok_visa')
    assert.equal(res.headers['idempotent-replayed'], undefined)
    const paid = assertPayment(res, completedPayment(o))
    assert.deepEqual(await paymentOf(ctx.api, o), paid)
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 1)
  })

  it('process is the customer\'s alone: an admin or another member 403, anonymous 401, an unknown payment 404; nothing changes', async () => {
    const o = await confirmedOrder(ctx.api)
    const url = `${o.paymentUrl}/process`
    const stranger = await ctx.api.member('stranger')
    for (const who of [o.admin, stranger]) {
      assertError(await patch(ctx.api, url, who, { paymentMethodToken: 'tok_visa' }), { code: 'ACCESS_DENIED', instance: url, detail: NOT_THE_PAYER })
    }
    assertError(await patch(ctx.api, url, undefined, { paymentMethodToken: 'tok_visa' }), { code: 'UNAUTHORIZED', instance: url, detail: UNAUTHENTICATED })
    assertError(await patch(ctx.api, '/api/v1/payments/999999/process', o.owner, { paymentMethodToken: 'tok_visa' }), {
      code: 'PAYMENT_NOT_FOUND', instance: '/api/v1/payments/999999/process', detail: 'Payment 999999 does not exist.',
    })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), pendingPayment(o))
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 0)
  })

  it('a declined card: 402 PAYMENT_DECLINED, the payment FAILED with the reason; processing it again with another card completes it', async () => {
    const o = await confirmedOrder(ctx.api)
    const url = `${o.paymentUrl}/process`
    assertError(await pay(ctx.api, o, 'tok_declined'), { code: 'PAYMENT_DECLINED', instance: url, detail: DECLINED })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), failedPayment(o))
    assertError(await pay(ctx.api, o, 'tok_declined'), { code: 'PAYMENT_DECLINED', instance: url, detail: DECLINED })

    assertPayment(await pay(ctx.api, o, 'tok_mastercard'), completedPayment(o))
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 3)
  })

  for (const status of ['COMPLETED', 'PARTIALLY_REFUNDED'] as const) {
    it(`processing a ${status} payment again answers it unchanged, whatever the token`, async () => {
      const o = await paymentIn(ctx.api, status)
      const before = await paymentOf(ctx.api, o)
      for (const token of ['tok_visa', 'tok_declined']) {
        const res = await pay(ctx.api, o, token)
        assert.equal(res.statusCode, 200, res.body)
        assert.deepEqual(res.json(), { success: true, data: before, error: null })
      }
      assert.deepEqual(await paymentOf(ctx.api, o), before)
      assert.equal(await attemptsOf(ctx.api, o.paymentId), 1)
    })
  }

  for (const status of ['REFUNDED', 'CANCELLED'] as const) {
    it(`processing a ${status} payment is 400 INVALID_PAYMENT_STATUS and changes nothing`, async () => {
      const o = await paymentIn(ctx.api, status)
      const before = await paymentOf(ctx.api, o)
      assertError(await pay(ctx.api, o, 'tok_visa'), {
        code: 'INVALID_PAYMENT_STATUS', instance: `${o.paymentUrl}/process`, detail: `Cannot process a payment that is ${status}.`,
      })
      assert.deepEqual(await paymentOf(ctx.api, o), before)
    })
  }

  const invalidBodies: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a missing token', {}, [{ field: 'paymentMethodToken', message: 'is required' }]],
    ['an empty token', { paymentMethodToken: '' }, [{ field: 'paymentMethodToken', message: 'must not be empty' }]],
    ['a token that is not a string', { paymentMethodToken: 42 }, [{ field: 'paymentMethodToken', message: 'must be a string' }]],
    ['an unknown field', { paymentMethodToken: 'tok_visa', amount: 1 }, [{ field: 'amount', message: 'is not a recognised field' }]],
  ]
  for (const [name, payload, invalidParams] of invalidBodies) {
    it(`process refuses ${name} with 400 VALIDATION_FAILED and leaves the payment PENDING`, async () => {
      const o = await confirmedOrder(ctx.api)
      const url = `${o.paymentUrl}/process`
      assertError(await patch(ctx.api, url, o.owner, payload), { code: 'VALIDATION_FAILED', instance: url, detail: BODY_INVALID, invalidParams })
      assertPayment(await get(ctx.api, o.paymentUrl, o.owner), pendingPayment(o))
    })
  }

  it('process with an idempotency key (header or body): a repeat replays the first answer with Idempotent-Replayed', async () => {
    const viaHeader = await confirmedOrder(ctx.api)
    const first = await pay(ctx.api, viaHeader, 'tok_visa', { 'Idempotency-Key': 'pay-1' })
    assertPayment(first, completedPayment(viaHeader))
    assert.equal(first.headers['idempotent-replayed'], undefined)
    const repeat = await pay(ctx.api, viaHeader, 'tok_visa', { 'Idempotency-Key': 'pay-1' })
    assert.equal(repeat.statusCode, 200, repeat.body)
    assert.equal(repeat.headers['idempotent-replayed'], 'true')
    assert.match(String(repeat.headers['content-type']), /^application\/json/)
    assert.deepEqual(repeat.json(), first.json())

    const viaBody = await confirmedOrder(ctx.api)
    const url = `${viaBody.paymentUrl}/process`
    const body = { paymentMethodToken: 'tok_visa', idempotencyKey: 'pay-2' }
    const firstByBody = await patch(ctx.api, url, viaBody.owner, body)
    assertPayment(firstByBody, completedPayment(viaBody))
    const repeatByBody = await patch(ctx.api, url, viaBody.owner, body)
    assert.equal(repeatByBody.headers['idempotent-replayed'], 'true')
    assert.deepEqual(repeatByBody.json(), firstByBody.json())
    assert.equal(await attemptsOf(ctx.api, viaHeader.paymentId), 1)
    assert.equal(await attemptsOf(ctx.api, viaBody.paymentId), 1)
  })

  it('process with a key already used for another body is 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const o = await confirmedOrder(ctx.api)
    assertPayment(await pay(ctx.api, o, 'tok_visa', { 'Idempotency-Key': 'pay-1' }), completedPayment(o))
    assertError(await pay(ctx.api, o, 'tok_amex', { 'Idempotency-Key': 'pay-1' }), {
      code: 'IDEMPOTENCY_KEY_REUSED', instance: `${o.paymentUrl}/process`, detail: REUSED,
    })
  })

  it('a declined attempt is not kept under its key: the same key runs again, then keeps the success', async () => {
    const o = await confirmedOrder(ctx.api)
    const key = { 'Idempotency-Key': 'pay-1' }
    const url = `${o.paymentUrl}/process`
    assertError(await pay(ctx.api, o, 'tok_declined', key), { code: 'PAYMENT_DECLINED', instance: url, detail: DECLINED })
    assertError(await pay(ctx.api, o, 'tok_declined', key), { code: 'PAYMENT_DECLINED', instance: url, detail: DECLINED })
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 2)

    const paid = await pay(ctx.api, o, 'tok_visa', key)
    assertPayment(paid, completedPayment(o))
    assert.equal(paid.headers['idempotent-replayed'], undefined)
    const replay = await pay(ctx.api, o, 'tok_visa', key)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.deepEqual(replay.json(), paid.json())
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 3)
  })

  it('10 concurrent process calls with different tokens all answer 200 and charge the payment once', async () => {
    const o = await confirmedOrder(ctx.api)
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => pay(ctx.api, o, `tok_card_${i}`)))
    const paid = assertPayment(results[0]!, completedPayment(o))
    for (const res of results) assert.deepEqual(res.json(), { success: true, data: paid, error: null })
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 1)
  })

  it('follows the whole money path: declined, paid, partly refunded, fully refunded', async () => {
    const o = await confirmedOrder(ctx.api)
    assertError(await pay(ctx.api, o, 'tok_declined'), { code: 'PAYMENT_DECLINED', instance: `${o.paymentUrl}/process`, detail: DECLINED })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), failedPayment(o))
    assertPayment(await pay(ctx.api, o, 'tok_visa'), completedPayment(o))
    assertPayment(await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 250 }), {
      ...completedPayment(o), status: 'PARTIALLY_REFUNDED', refundedAmount: 250,
    })
    assertPayment(await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin), { ...completedPayment(o), status: 'REFUNDED', refundedAmount: 1000 })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), { ...completedPayment(o), status: 'REFUNDED', refundedAmount: 1000 })
  })

  for (const status of ['PENDING', 'FAILED'] as const) {
    it(`refuses to deliver an order whose payment is ${status} with 400 INVALID_ORDER_STATUS`, async () => {
      const o = await paymentIn(ctx.api, status)
      const url = `/api/v1/admin/orders/${o.orderId}`
      assertError(await patch(ctx.api, url, o.admin, { status: 'DELIVERED' }), {
        code: 'INVALID_ORDER_STATUS',
        instance: url,
        detail: 'Cannot deliver an order that is CONFIRMED: its balanceDue is 1000 (paymentStatus UNPAID); delivery needs it paid in full.',
      })
      assert.equal((await get(ctx.api, url, o.admin)).json().data.status, 'CONFIRMED')
    })
  }

  for (const status of ['COMPLETED', 'PARTIALLY_REFUNDED'] as const) {
    it(`delivers an order whose payment is ${status}: 200 with the order detail, DELIVERED`, async () => {
      const o = await paymentIn(ctx.api, status)
      const refundedAmount = status === 'COMPLETED' ? 0 : 300
      const res = await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers.etag, '"3"')
      const { data, ...envelope } = res.json()
      assert.deepEqual(envelope, { success: true, error: null })
      const { createdAt, updatedAt, fulfillments, ...detail } = data
      assert.match(createdAt, TIMESTAMP)
      assert.match(updatedAt, TIMESTAMP)
      assert.deepEqual(fulfillments.map((f: { status: string, items: unknown }) => [f.status, f.items]), [['DELIVERED', [{ productId: o.productId, quantity: 2 }]]])
      assert.deepEqual(detail, {
        orderId: o.orderId,
        customerId: o.owner.id,
        status: 'DELIVERED',
        items: [{ productId: o.productId, productName: 'Coffee beans', quantity: 2, unitPrice: 500, lineTotal: 1000, fulfilledQuantity: 2, returnedQuantity: 0 }],
        totalAmount: 1000,
        currency: 'USD',
        shippingAddress: null,
        memo: null,
        paymentId: o.paymentId,
        payments: [{ paymentId: o.paymentId, amount: 1000, refundedAmount, status }],
        paidAmount: 1000,
        refundedAmount,
        balanceDue: 0,
        paymentStatus: status === 'COMPLETED' ? 'PAID' : 'PARTIALLY_REFUNDED',
        fulfillmentStatus: 'FULFILLED',
        version: 3,
        allowedActions: ['delete', 'return'],
      })
      assert.equal((await paymentOf(ctx.api, o)).status, status)
      assert.equal(await ctx.api.stockOf(o.productId), 8)
    })
  }

  it('offers an admin deliver only once the payment is captured; never to the owner', async () => {
    const o = await confirmedOrder(ctx.api)
    const actions = async (who: Member) => (await get(ctx.api, o.orderUrl, who)).json().data.allowedActions
    assert.deepEqual(await actions(o.admin), ['cancel', 'delete', 'edit'])
    await pay(ctx.api, o, 'tok_declined')
    assert.deepEqual(await actions(o.admin), ['cancel', 'delete', 'edit'])
    await pay(ctx.api, o, 'tok_visa')
    assert.deepEqual(await actions(o.admin), ['cancel', 'deliver', 'delete', 'edit', 'fulfil'])
    assert.deepEqual(await actions(o.owner), ['cancel', 'delete'])
  })

  it('GET /payments/history lists the caller\'s own payments, newest first, as a slice', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const other = await ctx.api.member('other')
    const product = await ctx.api.product(admin, { price: 500, stockQuantity: 100 })
    const payFor = async (who: Member) => {
      const order = await ctx.api.order(who, [{ productId: product.productId, quantity: 1 }])
      await patch(ctx.api, `/api/v1/orders/${order.orderId}/confirm`, who)
      const paymentId = (await get(ctx.api, `/api/v1/orders/${order.orderId}`, who)).json().data.paymentId
      return (await get(ctx.api, `/api/v1/payments/${paymentId}`, who)).json().data as Payment
    }
    const first = await payFor(owner)
    const others = await payFor(other)
    const second = await payFor(owner)
    const third = await payFor(owner)
    const history = (query: string, who: Member = owner) => get(ctx.api, `/api/v1/payments/history${query}`, who)
    const assertSlice = (res: LightMyRequestResponse, content: Payment[], size: number, hasNext: boolean) => {
      assert.equal(res.statusCode, 200, res.body)
      const { data: { nextCursor, ...slice }, ...envelope } = res.json()
      assert.deepEqual(envelope, { success: true, error: null })
      assert.deepEqual(slice, { content, size, hasNext })
      if (hasNext) assert.equal(typeof nextCursor, 'string')
      else assert.equal(nextCursor, null)
      return nextCursor as string | null
    }

    assertSlice(await history(''), [third, second, first], 20, false)
    const cursor = assertSlice(await history('?size=2'), [third, second], 2, true)
    assertSlice(await history(`?size=2&cursor=${cursor}`), [first], 2, false)
    assertSlice(await history('?size=2&page=1'), [first], 2, false)
    assertSlice(await history('', other), [others], 20, false)
    assertSlice(await history('', admin), [], 20, false)

    const anonymous = await get(ctx.api, '/api/v1/payments/history')
    assertError(anonymous, { code: 'UNAUTHORIZED', instance: '/api/v1/payments/history', detail: UNAUTHENTICATED })
  })
})

/** Whether the provider below is unreachable; each test starts with it down. */
let chargesFail = true
const simulated = simulatedProvider()
const unreachableForCharges: PaymentProvider = {
  ...simulated,
  async charge (request) {
    if (chargesFail) throw new Error('connect ECONNREFUSED 10.0.0.1:443')
    return simulated.charge(request)
  },
}

describeEachBackend('payments with a provider that cannot be reached', (ctx) => {
  beforeEach(() => { chargesFail = true })

  it('process answers 503 with Retry-After and leaves the payment PENDING; the same key works once the provider is back', async () => {
    const o = await confirmedOrder(ctx.api)
    const key = { 'Idempotency-Key': 'pay-1' }
    const res = await pay(ctx.api, o, 'tok_visa', key)
    assertError(res, {
      code: 'SERVICE_UNAVAILABLE',
      instance: `${o.paymentUrl}/process`,
      detail: 'The payment provider could not be reached or did not complete the operation; nothing was changed. Try again.',
    })
    assert.equal(res.headers['retry-after'], '5')
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), pendingPayment(o))
    assert.equal(await attemptsOf(ctx.api, o.paymentId), 0)

    chargesFail = false
    const retry = await pay(ctx.api, o, 'tok_visa', key)
    assertPayment(retry, completedPayment(o))
    assert.equal(retry.headers['idempotent-replayed'], undefined)
  })
}, { build: { paymentProvider: unreachableForCharges } })
