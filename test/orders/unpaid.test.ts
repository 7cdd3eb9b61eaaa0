import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import { expireLapsedReservations } from '../../src/orders/lifecycle.js'
import { assertError, describeEachBackend, feedSettled, successData, waitFor, type Api, type Member } from '../helper.js'
import { confirmedOrder, get, pay, patch, type Confirmed } from '../payments/fixtures.js'

// CONTRACT §18 "Stock cannot be held hostage", §18.1 "Unpaid orders": the reservation runs until the
// order's first payment is captured, and a member holds at most MAX_UNPAID_ORDERS orders that
// reserve stock with nothing captured.

/** Moves the order's deadline into the past, as if its TTL had run out (as reservations.test.ts does). */
const lapse = (api: Api, orderId: number) =>
  api.app.db.updateTable('orders').set({ reserved_until: sql<Date>`now() - interval '1 second'` }).where('id', '=', orderId).execute()

async function eventTypes (api: Api, admin: Member, orderId: number): Promise<string[]> {
  await feedSettled(api.app)
  const slice = successData<{ content: Array<{ type: string, data: { payment: { status: string } | null } }> }>(
    await api.get('/api/v1/admin/events', { orderId, size: 100 }, admin))
  return slice.content.map(event => event.type)
}

const historyOf = async (api: Api, o: Confirmed) =>
  successData<Array<Record<string, unknown>>>(await get(api, `${o.orderUrl}/history`, o.owner))
    .map(({ at: _at, ...entry }) => entry)

describeEachBackend('reservations of confirmed orders whose payment is not captured', (ctx) => {
  for (const declinedFirst of [false, true]) {
    it(`expires a CONFIRMED order whose payment is ${declinedFirst ? 'FAILED' : 'still PENDING'} at the deadline: payment CANCELLED, order CANCELLED, stock back, events`, async () => {
      const o = await confirmedOrder(ctx.api)
      if (declinedFirst) assert.equal((await pay(ctx.api, o, 'tok_declined')).statusCode, 402)
      assert.equal(await ctx.api.stockOf(o.productId), 8)
      await lapse(ctx.api, o.orderId)

      assert.equal(await expireLapsedReservations(ctx.api.app.db), 1)

      const order = successData<{ status: string, paymentId: number, allowedActions: string[] }>(await get(ctx.api, o.orderUrl, o.owner))
      assert.equal(order.status, 'CANCELLED')
      assert.equal(order.paymentId, o.paymentId)
      assert.deepEqual(order.allowedActions, ['delete'])
      assert.equal(await ctx.api.stockOf(o.productId), 10)
      const payment = successData<{ status: string, amount: number }>(await get(ctx.api, o.paymentUrl, o.owner))
      assert.equal(payment.status, 'CANCELLED')
      assert.deepEqual((await historyOf(ctx.api, o)).slice(-1), [{ from: 'CONFIRMED', to: 'CANCELLED', action: 'expire', actorId: null, actorRole: null }])
      assert.deepEqual(await eventTypes(ctx.api, o.admin, o.orderId), [
        'order.placed', 'payment.created', 'order.confirmed', ...(declinedFirst ? ['payment.failed'] : []), 'payment.cancelled', 'order.expired',
      ])
      // Exactly once; and the customer can no longer pay for it.
      assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
      assertError(await pay(ctx.api, o, 'tok_visa'), {
        code: 'INVALID_PAYMENT_STATUS', instance: `${o.paymentUrl}/process`, detail: 'Cannot process a payment that is CANCELLED.',
      })
      assert.equal(await ctx.api.stockOf(o.productId), 10)
    })
  }

  it('keeps an order whose payment was captured before the deadline: the capture ends the deadline', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal((await pay(ctx.api, o, 'tok_visa')).statusCode, 200)
    const row = await ctx.api.app.db.selectFrom('orders').select('reserved_until').where('id', '=', o.orderId).executeTakeFirstOrThrow()
    assert.equal(row.reserved_until, null)
    await lapse(ctx.api, o.orderId) // even a deadline put back in the past: the payment is checked under the lock
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.orderUrl, o.owner)).status, 'CONFIRMED')
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.paymentUrl, o.owner)).status, 'COMPLETED')
    assert.equal(await ctx.api.stockOf(o.productId), 8)
    assert.deepEqual((await historyOf(ctx.api, o)).map(entry => entry.action), ['create', 'confirm'])
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0, 'the order is not found again')
  })

  it('lets a capture that commits before the sweep win, even after the deadline', async () => {
    const o = await confirmedOrder(ctx.api)
    await lapse(ctx.api, o.orderId)
    assert.equal((await pay(ctx.api, o, 'tok_visa')).statusCode, 200)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.orderUrl, o.owner)).status, 'CONFIRMED')
    assert.equal(await ctx.api.stockOf(o.productId), 8)
  })

  it('leaves alone an order confirmed within its reservation until the deadline', async () => {
    const o = await confirmedOrder(ctx.api)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.orderUrl, o.owner)).status, 'CONFIRMED')
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.paymentUrl, o.owner)).status, 'PENDING')
  })
}, { env: { ORDER_RESERVATION_TTL: '45m' }, build: { reservationSweepMs: 3_600_000 } })

describeEachBackend('the background sweep and confirmed orders', (ctx) => {
  it('expires a confirmed, unpaid order by itself once its deadline passes', async () => {
    const o = await confirmedOrder(ctx.api)
    await lapse(ctx.api, o.orderId)
    await waitFor(async () => (await ctx.api.stockOf(o.productId)) === 10)
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.orderUrl, o.owner)).status, 'CANCELLED')
    assert.equal(successData<{ status: string }>(await get(ctx.api, o.paymentUrl, o.owner)).status, 'CANCELLED')
  })
}, { build: { reservationSweepMs: 50 } })

const LIMITED = 'A member may hold at most 3 orders that reserve stock without a captured payment, and 3 are open; pay for or cancel one of them first. Nothing was placed.'

describeEachBackend('MAX_UNPAID_ORDERS=3', (ctx) => {
  const place = (who: Member, customerId: number, productId: number, headers: Record<string, string> = {}) => ctx.api.inject({
    method: 'POST', url: '/api/v1/orders', headers: { ...who.headers, ...headers }, payload: { customerId, items: [{ productId, quantity: 1 }] },
  })
  async function setUp () {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const product = await ctx.api.product(admin, { stockQuantity: 100 })
    const orders = []
    for (let i = 0; i < 3; i++) orders.push(await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }]))
    return { admin, member, product, orders }
  }
  const counts = async () => ({
    orders: Number((await sql<{ n: string }>`select count(*) as n from orders`.execute(ctx.api.app.db)).rows[0]!.n),
    events: Number((await sql<{ n: string }>`select count(*) as n from events`.execute(ctx.api.app.db)).rows[0]!.n),
    keys: Number((await sql<{ n: string }>`select count(*) as n from idempotency_keys`.execute(ctx.api.app.db)).rows[0]!.n),
  })

  it('refuses the 4th unpaid order with 409 UNPAID_ORDER_LIMIT_REACHED; nothing changes, the key is not stored', async () => {
    const { member, product, orders } = await setUp()
    const before = await counts()
    const res = await place(member, member.id, product.productId, { 'idempotency-key': 'fourth-order' })
    assertError(res, { code: 'UNPAID_ORDER_LIMIT_REACHED', instance: '/api/v1/orders', detail: LIMITED })
    assert.equal(res.headers.location, undefined)
    assert.deepEqual(await counts(), before)
    assert.equal(await ctx.api.stockOf(product.productId), 97)

    // Once one is cancelled, the same key places the order: it was never stored.
    assert.equal((await patch(ctx.api, `/api/v1/orders/${orders[0]!.orderId}/cancel`, member)).statusCode, 200)
    const placed = await place(member, member.id, product.productId, { 'idempotency-key': 'fourth-order' })
    assert.equal(placed.statusCode, 201, placed.body)
    assert.equal(placed.headers['idempotent-replayed'], undefined)
  })

  it('counts confirmed orders with a pending or failed payment, and stops counting an order once its payment is captured', async () => {
    const { member, product, orders } = await setUp()
    for (const order of orders) assert.equal((await patch(ctx.api, `/api/v1/orders/${order.orderId}/confirm`, member)).statusCode, 200)
    const paymentOf = async (orderId: number) => successData<{ paymentId: number }>(await get(ctx.api, `/api/v1/orders/${orderId}`, member)).paymentId
    const declined = await patch(ctx.api, `/api/v1/payments/${await paymentOf(orders[1]!.orderId)}/process`, member, { paymentMethodToken: 'tok_declined' })
    assert.equal(declined.statusCode, 402)
    assertError(await place(member, member.id, product.productId), { code: 'UNPAID_ORDER_LIMIT_REACHED', instance: '/api/v1/orders', detail: LIMITED })

    const paid = await patch(ctx.api, `/api/v1/payments/${await paymentOf(orders[0]!.orderId)}/process`, member, { paymentMethodToken: 'tok_visa' })
    assert.equal(paid.statusCode, 200)
    assert.equal((await place(member, member.id, product.productId)).statusCode, 201)
    assertError(await place(member, member.id, product.productId), { code: 'UNPAID_ORDER_LIMIT_REACHED', instance: '/api/v1/orders', detail: LIMITED })
  })

  it('does not limit an admin: neither ordering for the member at its limit, nor for itself', async () => {
    const { admin, member, product } = await setUp()
    for (let i = 0; i < 2; i++) {
      const forMember = await place(admin, member.id, product.productId)
      assert.equal(forMember.statusCode, 201, forMember.body)
    }
    for (let i = 0; i < 4; i++) assert.equal((await place(admin, admin.id, product.productId)).statusCode, 201)
    // Orders an admin placed for the member hold its stock too: they count against the member's own.
    assertError(await place(member, member.id, product.productId), {
      code: 'UNPAID_ORDER_LIMIT_REACHED',
      instance: '/api/v1/orders',
      detail: 'A member may hold at most 3 orders that reserve stock without a captured payment, and 5 are open; pay for or cancel one of them first. Nothing was placed.',
    })
    assert.equal(await ctx.api.stockOf(product.productId), 100 - 3 - 2 - 4)
  })

  it('still replays a stored answer to a member at its limit', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const product = await ctx.api.product(admin, { stockQuantity: 100 })
    const first = await place(member, member.id, product.productId, { 'idempotency-key': 'kept-answer' })
    assert.equal(first.statusCode, 201)
    for (let i = 0; i < 2; i++) await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }])
    const replay = await place(member, member.id, product.productId, { 'idempotency-key': 'kept-answer' })
    assert.equal(replay.statusCode, 200, replay.body)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.deepEqual(replay.json().data, first.json().data)
  })

  it('lets no concurrent creates past the limit: 12 at once from a member with none give exactly 3 orders', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const products = await Promise.all([1, 2].map(() => ctx.api.product(admin, { stockQuantity: 100 })))
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: (i % 2 ? products : [...products].reverse()).map(p => ({ productId: p.productId, quantity: 1 })) },
    })))
    assert.deepEqual(answers.map(res => res.statusCode).sort(), [...Array(3).fill(201), ...Array(9).fill(409)])
    for (const res of answers.filter(answer => answer.statusCode === 409)) {
      assertError(res, { code: 'UNPAID_ORDER_LIMIT_REACHED', instance: '/api/v1/orders', detail: LIMITED })
    }
    for (const product of products) assert.equal(await ctx.api.stockOf(product.productId), 97)
  })
}, { env: { MAX_UNPAID_ORDERS: '3' } })

describeEachBackend('MAX_UNPAID_ORDERS=0', (ctx) => {
  it('sets no limit', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const product = await ctx.api.product(admin, { stockQuantity: 100 })
    for (let i = 0; i < 15; i++) await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }])
    assert.equal(await ctx.api.stockOf(product.productId), 85)
  })
}, { env: { MAX_UNPAID_ORDERS: '0' } })

describeEachBackend('MAX_UNPAID_ORDERS by default', (ctx) => {
  it('is 10', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const product = await ctx.api.product(admin, { stockQuantity: 100 })
    for (let i = 0; i < 10; i++) await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }])
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: member.id, items: [{ productId: product.productId, quantity: 1 }] },
    })
    assertError(res, {
      code: 'UNPAID_ORDER_LIMIT_REACHED',
      instance: '/api/v1/orders',
      detail: 'A member may hold at most 10 orders that reserve stock without a captured payment, and 10 are open; pay for or cancel one of them first. Nothing was placed.',
    })
  })
})
