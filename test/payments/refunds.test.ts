import assert from 'node:assert/strict'
import { beforeEach, it } from 'node:test'
import { sql } from 'kysely'
import { simulatedProvider, type PaymentProvider } from '../../src/payments/provider.js'
import type { PaymentStatus } from '../../src/payments/schemas.js'
import { assertError, describeEachBackend, waitFor, type Api } from '../helper.js'
import {
  BODY_INVALID, UNAUTHENTICATED, assertPayment, completedPayment, get, patch, paymentIn, paymentOf, refund, type Confirmed, type Fields,
} from './fixtures.js'

const REQUEST_INVALID = 'The request has invalid parameters.'
const UNAVAILABLE = 'The payment provider could not be reached or did not complete the operation; nothing was changed. Try again.'
const notRefundable = (status: PaymentStatus) =>
  `Cannot refund a payment that is ${status}; only COMPLETED and PARTIALLY_REFUNDED payments can be refunded.`

const refunded = (o: Confirmed, refundedAmount: number): Fields =>
  ({ ...completedPayment(o), refundedAmount, status: refundedAmount === 1000 ? 'REFUNDED' : 'PARTIALLY_REFUNDED' })

/** The rows of payment_refunds for the payment, oldest first. */
const refundsOf = (api: Api, paymentId: number) =>
  api.app.db.selectFrom('payment_refunds').select(['amount', 'reason']).where('payment_id', '=', paymentId).orderBy('id').execute()

const sum = (rows: Array<{ amount: number }>) => rows.reduce((total, row) => total + row.amount, 0)

/** The three ways an order ends while CONFIRMED, and the status each leaves it in. */
interface OrderEnding { name: string, url: (o: Confirmed) => string, by: 'owner' | 'admin', payload?: object, orderStatus: 'CANCELLED' | 'DELETED' }
const orderEndings: OrderEnding[] = [
  { name: 'the owner cancels the order', url: o => `${o.orderUrl}/cancel`, by: 'owner', orderStatus: 'CANCELLED' },
  { name: 'an admin sets the order CANCELLED', url: o => `/api/v1/admin/orders/${o.orderId}`, by: 'admin', payload: { status: 'CANCELLED' }, orderStatus: 'CANCELLED' },
  { name: 'the owner deletes the order', url: o => `${o.orderUrl}/delete`, by: 'owner', orderStatus: 'DELETED' },
]
const end = (api: Api, ending: OrderEnding, o: Confirmed) => patch(api, ending.url(o), o[ending.by], ending.payload)

/** The order as an admin sees it (deleted ones included). */
const adminOrderOf = async (api: Api, o: Confirmed) => (await get(api, `/api/v1/admin/orders/${o.orderId}`, o.admin)).json().data

describeEachBackend('payment refunds', (ctx) => {
  it('refund is for admins: a member, even the customer, 403; anonymous 401; an unknown payment 404', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const url = `${o.paymentUrl}/refund`
    const stranger = await ctx.api.member('stranger')
    for (const who of [o.owner, stranger]) {
      assertError(await patch(ctx.api, url, who, { amount: 100 }), { code: 'ACCESS_DENIED', instance: url, detail: 'This operation requires the ADMIN role.' })
    }
    assertError(await patch(ctx.api, url, undefined, { amount: 100 }), { code: 'UNAUTHORIZED', instance: url, detail: UNAUTHENTICATED })
    assertError(await patch(ctx.api, '/api/v1/payments/999999/refund', o.admin), {
      code: 'PAYMENT_NOT_FOUND', instance: '/api/v1/payments/999999/refund', detail: 'Payment 999999 does not exist.',
    })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
    assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])
  })

  for (const [name, payload] of [['no body', undefined], ['an empty object', {}]] as const) {
    it(`a refund with ${name} returns everything: 200 REFUNDED, one refund row`, async () => {
      const o = await paymentIn(ctx.api, 'COMPLETED')
      const res = await refund(ctx.api, o, payload)
      const done = assertPayment(res, refunded(o, 1000))
      assert.deepEqual(await paymentOf(ctx.api, o), done)
      assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [{ amount: 1000, reason: 'GOODWILL' }])
    })
  }

  it('refuses a JSON null body with 400 MALFORMED_REQUEST: only a request with no body at all means "everything"', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const url = `${o.paymentUrl}/refund`
    const res = await ctx.api.inject({ method: 'PATCH', url, headers: { ...o.admin.headers, 'content-type': 'application/json' }, payload: 'null' })
    assertError(res, { code: 'MALFORMED_REQUEST', instance: url, detail: 'The request body must be a JSON object.' })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
    assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])
  })

  it('a partial refund leaves it PARTIALLY_REFUNDED; refunding the rest makes it REFUNDED; the rows add up', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    assertPayment(await refund(ctx.api, o, { amount: 300 }), refunded(o, 300))
    assertPayment(await refund(ctx.api, o, { amount: 200 }), refunded(o, 500))
    assertPayment(await refund(ctx.api, o), refunded(o, 1000))
    const rows = await refundsOf(ctx.api, o.paymentId)
    assert.deepEqual(rows.map(row => row.amount), [300, 200, 500])
    assert.equal(sum(rows), (await paymentOf(ctx.api, o)).refundedAmount)
  })

  it('refuses an amount above what is left with 400 naming amount, and changes nothing', async () => {
    const o = await paymentIn(ctx.api, 'PARTIALLY_REFUNDED')
    const url = `${o.paymentUrl}/refund`
    assertError(await refund(ctx.api, o, { amount: 701 }), {
      code: 'VALIDATION_FAILED', instance: url, detail: REQUEST_INVALID, invalidParams: [{ field: 'amount', message: 'must not exceed the 700 left to refund' }],
    })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), refunded(o, 300))
    assertPayment(await refund(ctx.api, o, { amount: 700 }), refunded(o, 1000))
  })

  const invalidBodies: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['a zero amount', { amount: 0 }, [{ field: 'amount', message: 'must be at least 1' }]],
    ['a negative amount', { amount: -100 }, [{ field: 'amount', message: 'must be at least 1' }]],
    ['a fractional amount', { amount: 10.5 }, [{ field: 'amount', message: 'must be an integer' }]],
    ['an amount given as text', { amount: '100' }, [{ field: 'amount', message: 'must be an integer' }]],
    ['an unknown field', { amount: 100, reason: 'damaged' }, [{ field: 'reason', message: 'is not a recognised field' }]],
  ]
  for (const [name, payload, invalidParams] of invalidBodies) {
    it(`refuses ${name} with 400 VALIDATION_FAILED and refunds nothing`, async () => {
      const o = await paymentIn(ctx.api, 'COMPLETED')
      assertError(await refund(ctx.api, o, payload), { code: 'VALIDATION_FAILED', instance: `${o.paymentUrl}/refund`, detail: BODY_INVALID, invalidParams })
      assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
      assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])
    })
  }

  for (const status of ['PENDING', 'FAILED', 'REFUNDED', 'CANCELLED'] as const) {
    it(`refuses to refund a ${status} payment with 400 INVALID_PAYMENT_STATUS`, async () => {
      const o = await paymentIn(ctx.api, status)
      const before = await paymentOf(ctx.api, o)
      const rows = await refundsOf(ctx.api, o.paymentId)
      for (const payload of [undefined, { amount: 1 }]) {
        assertError(await refund(ctx.api, o, payload), { code: 'INVALID_PAYMENT_STATUS', instance: `${o.paymentUrl}/refund`, detail: notRefundable(status) })
      }
      assert.deepEqual(await paymentOf(ctx.api, o), before)
      assert.deepEqual(await refundsOf(ctx.api, o.paymentId), rows)
    })
  }

  it('refund with an idempotency key: a repeat replays the first answer and refunds once; another body under the key is 422', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const key = { 'Idempotency-Key': 'refund-1' }
    const first = await refund(ctx.api, o, { amount: 300 }, key)
    assertPayment(first, refunded(o, 300))
    assert.equal(first.headers['idempotent-replayed'], undefined)
    const repeat = await refund(ctx.api, o, { amount: 300 }, key)
    assert.equal(repeat.statusCode, 200, repeat.body)
    assert.equal(repeat.headers['idempotent-replayed'], 'true')
    assert.deepEqual(repeat.json(), first.json())
    const byBody = await refund(ctx.api, o, { amount: 300, idempotencyKey: 'refund-1' })
    assert.equal(byBody.headers['idempotent-replayed'], 'true')
    assert.deepEqual(byBody.json(), first.json())

    assertError(await refund(ctx.api, o, { amount: 200 }, key), {
      code: 'IDEMPOTENCY_KEY_REUSED', instance: `${o.paymentUrl}/refund`, detail: 'This idempotency key was already used with a different request body.',
    })
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), refunded(o, 300))
    assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [{ amount: 300, reason: 'GOODWILL' }])
  })

  it('a refused refund is not kept under its key: the same key may then be used for a valid one', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const key = { 'Idempotency-Key': 'refund-1' }
    const tooMuch = await refund(ctx.api, o, { amount: 1001 }, key)
    assertError(tooMuch, {
      code: 'VALIDATION_FAILED',
      instance: `${o.paymentUrl}/refund`,
      detail: REQUEST_INVALID,
      invalidParams: [{ field: 'amount', message: 'must not exceed the 1000 left to refund' }],
    })
    const res = await refund(ctx.api, o, { amount: 1000 }, key)
    assertPayment(res, refunded(o, 1000))
    assert.equal(res.headers['idempotent-replayed'], undefined)
  })

  it('10 concurrent refunds of 300 on a payment of 1000: exactly 3 succeed and 900 is refunded', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const results = await Promise.all(Array.from({ length: 10 }, () => refund(ctx.api, o, { amount: 300 })))
    const succeeded = results.filter(res => res.statusCode === 200)
    assert.equal(succeeded.length, 3)
    assert.deepEqual(succeeded.map(res => res.json().data.refundedAmount).sort((a, b) => a - b), [300, 600, 900])
    for (const res of results.filter(res => res.statusCode !== 200)) {
      assertError(res, {
        code: 'VALIDATION_FAILED',
        instance: `${o.paymentUrl}/refund`,
        detail: REQUEST_INVALID,
        invalidParams: [{ field: 'amount', message: 'must not exceed the 100 left to refund' }],
      })
    }
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), refunded(o, 900))
    const rows = await refundsOf(ctx.api, o.paymentId)
    assert.equal(rows.length, 3)
    assert.equal(sum(rows), 900)
  })

  it('10 concurrent full refunds: exactly one succeeds, the others find it REFUNDED', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const results = await Promise.all(Array.from({ length: 10 }, () => refund(ctx.api, o)))
    const [succeeded, ...refused] = [...results].sort((a, b) => a.statusCode - b.statusCode)
    assertPayment(succeeded!, refunded(o, 1000))
    assert.equal(refused.length, 9)
    for (const res of refused) {
      assertError(res, { code: 'INVALID_PAYMENT_STATUS', instance: `${o.paymentUrl}/refund`, detail: notRefundable('REFUNDED') })
    }
    assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [{ amount: 1000, reason: 'GOODWILL' }])
  })

  for (const ending of orderEndings) {
    for (const status of ['COMPLETED', 'PARTIALLY_REFUNDED'] as const) {
      it(`${ending.name} with a ${status} payment: the rest is refunded (REFUNDED) and the stock released`, async () => {
        const o = await paymentIn(ctx.api, status)
        const before = await refundsOf(ctx.api, o.paymentId)
        const res = await end(ctx.api, ending, o)
        assert.equal(res.statusCode, 200, res.body)
        assert.equal((await adminOrderOf(ctx.api, o)).status, ending.orderStatus)
        assert.equal(await ctx.api.stockOf(o.productId), 10)
        assertPayment(await get(ctx.api, o.paymentUrl, o.owner), refunded(o, 1000))
        const rows = await refundsOf(ctx.api, o.paymentId)
        assert.deepEqual(rows, [...before, { amount: 1000 - sum(before), reason: 'CANCEL' }])
        assert.equal(sum(rows), 1000)
      })
    }
    for (const status of ['PENDING', 'FAILED'] as const) {
      it(`${ending.name} with a ${status} payment: the payment is CANCELLED, nothing refunded, the stock released`, async () => {
        const o = await paymentIn(ctx.api, status)
        const before = await paymentOf(ctx.api, o)
        const res = await end(ctx.api, ending, o)
        assert.equal(res.statusCode, 200, res.body)
        assert.equal((await adminOrderOf(ctx.api, o)).status, ending.orderStatus)
        assert.equal(await ctx.api.stockOf(o.productId), 10)
        const { createdAt: _createdAt, updatedAt: _updatedAt, ...fields } = before
        assertPayment(await get(ctx.api, o.paymentUrl, o.owner), { ...fields, status: 'CANCELLED' })
        assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])
      })
    }
  }
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

describeEachBackend('payment refunds with a provider that cannot refund', (ctx) => {
  beforeEach(() => { refundsFail = true })

  for (const ending of orderEndings) {
    it(`${ending.name} with a COMPLETED payment: 503 with Retry-After, and the order, its stock and the payment stay as they were`, async () => {
      const o = await paymentIn(ctx.api, 'COMPLETED')
      const order = await adminOrderOf(ctx.api, o)
      const history = (await get(ctx.api, `${o.orderUrl}/history`, o.owner)).json().data
      const res = await end(ctx.api, ending, o)
      assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: ending.url(o), detail: UNAVAILABLE })
      assert.equal(res.headers['retry-after'], '5')

      assert.deepEqual(await adminOrderOf(ctx.api, o), order)
      assert.equal(order.status, 'CONFIRMED')
      assert.deepEqual((await get(ctx.api, `${o.orderUrl}/history`, o.owner)).json().data, history)
      assert.equal(await ctx.api.stockOf(o.productId), 8)
      assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
      assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])
    })
  }

  it('refund answers 503 and changes nothing; the same key refunds once the provider is back', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const key = { 'Idempotency-Key': 'refund-1' }
    const res = await refund(ctx.api, o, { amount: 300 }, key)
    assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: `${o.paymentUrl}/refund`, detail: UNAVAILABLE })
    assert.equal(res.headers['retry-after'], '5')
    assertPayment(await get(ctx.api, o.paymentUrl, o.owner), completedPayment(o))
    assert.deepEqual(await refundsOf(ctx.api, o.paymentId), [])

    refundsFail = false
    const retry = await refund(ctx.api, o, { amount: 300 }, key)
    assertPayment(retry, refunded(o, 300))
    assert.equal(retry.headers['idempotent-replayed'], undefined)
  })

  it('cancelling an order whose payment is still PENDING needs no refund and succeeds', async () => {
    const o = await paymentIn(ctx.api, 'PENDING')
    assert.equal((await patch(ctx.api, `${o.orderUrl}/cancel`, o.owner)).statusCode, 200)
    assert.equal((await adminOrderOf(ctx.api, o)).status, 'CANCELLED')
    assert.equal((await paymentOf(ctx.api, o)).status, 'CANCELLED')
    assert.equal(await ctx.api.stockOf(o.productId), 10)
  })
}, { build: { paymentProvider: refusingRefunds } })

/** A refund that stops at the provider until the test lets it go on. */
function refundGate () {
  let reach!: () => void
  let open!: () => void
  const reached = new Promise<void>(resolve => { reach = resolve })
  const opened = new Promise<void>(resolve => { open = resolve })
  return { reached, reach, opened, open }
}
let gate: ReturnType<typeof refundGate> | undefined
const gatedRefunds: PaymentProvider = {
  ...simulated,
  async refund (request) {
    const held = gate
    gate = undefined
    if (held) {
      held.reach()
      await held.opened
    }
    return simulated.refund(request)
  },
}

describeEachBackend('delivery racing a full refund', (ctx) => {
  it('a delivery asked for while a full refund is at the provider waits for it, then is refused: the payment is REFUNDED', async () => {
    const o = await paymentIn(ctx.api, 'COMPLETED')
    const held = gate = refundGate()
    const refunding = refund(ctx.api, o)
    await held.reached // the refund holds the payment's lock, its transaction still open
    const url = `/api/v1/admin/orders/${o.orderId}`
    let answered = false
    const delivering = patch(ctx.api, url, o.admin, { status: 'DELIVERED' }).finally(() => { answered = true })
    // On PostgreSQL the delivery must reach the order's lock (the refund holds it) and wait there (before the fix it read
    // the payment unlocked, saw COMPLETED and committed DELIVERED). PGlite runs one transaction at a time.
    if (ctx.backend === 'postgres') {
      await waitFor(async () => {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`.execute(ctx.api.app.db)
        return answered || rows[0]!.n > 0
      })
    } else {
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    held.open()

    assertPayment(await refunding, refunded(o, 1000))
    assertError(await delivering, {
      code: 'INVALID_ORDER_STATUS',
      instance: url,
      detail: 'Cannot deliver an order that is CONFIRMED: its paymentStatus is REFUNDED; delivery needs PAID or PARTIALLY_REFUNDED.',
    })
    assert.equal((await adminOrderOf(ctx.api, o)).status, 'CONFIRMED')
  })
}, { build: { paymentProvider: gatedRefunds } })
