import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../../src/app.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { expireLapsedReservations } from '../../src/orders/lifecycle.js'
import { Api, assertError, createTestDatabase, describeEachBackend, resetDatabase, successData, testConfig, waitFor, type Member } from '../helper.js'

// CONTRACT §11 "Reservations" and §14: an order not confirmed within ORDER_RESERVATION_TTL gives its
// stock back, cancelled by the service exactly once, whichever instance gets there first.

/** Moves the order's deadline into the past, as if its TTL had run out. */
const lapse = (api: Api, orderId: number) =>
  api.app.db.updateTable('orders').set({ reserved_until: sql<Date>`now() - interval '1 second'` }).where('id', '=', orderId).execute()

const historyOf = async (api: Api, orderId: number, who: Member) =>
  successData<Array<Record<string, unknown>>>(await api.inject({ url: `/api/v1/orders/${orderId}/history`, headers: who.headers }))

async function placed (api: Api, quantity = 3) {
  const admin = await api.admin()
  const owner = await api.member('owner')
  const product = await api.product(admin, { stockQuantity: 10 })
  const order = await api.order(owner, [{ productId: product.productId, quantity }])
  return { admin, owner, product, order }
}

describeEachBackend('order reservations', (ctx) => {
  it('fixes the deadline when the order is created: createdAt + ORDER_RESERVATION_TTL', async () => {
    const { order } = await placed(ctx.api)
    const row = await ctx.api.app.db.selectFrom('orders').select(['created_at', 'reserved_until']).where('id', '=', order.orderId).executeTakeFirstOrThrow()
    assert.equal(row.reserved_until!.getTime() - row.created_at.getTime(), 45 * 60_000)
  })

  for (const status of ['PLACED', 'PENDING'] as const) {
    it(`expires a ${status} order whose reservation ran out: CANCELLED, stock back, history "expire" with no actor`, async () => {
      const { owner, product, order } = await placed(ctx.api)
      if (status === 'PENDING') await ctx.api.app.db.updateTable('orders').set({ status }).where('id', '=', order.orderId).execute()
      assert.equal(await ctx.api.stockOf(product.productId), 7)
      await lapse(ctx.api, order.orderId)

      assert.equal(await expireLapsedReservations(ctx.api.app.db), 1)

      const detail = successData<{ status: string, version: number, allowedActions: string[] }>(
        await ctx.api.inject({ url: `/api/v1/orders/${order.orderId}`, headers: owner.headers }))
      assert.equal(detail.status, 'CANCELLED')
      assert.equal(detail.version, order.version + 1)
      assert.deepEqual(detail.allowedActions, ['delete'])
      assert.equal(await ctx.api.stockOf(product.productId), 10)
      const history = await historyOf(ctx.api, order.orderId, owner)
      assert.equal(history.length, 2)
      const { at, ...entry } = history[1]!
      assert.match(String(at), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.deepEqual(entry, { from: status, to: 'CANCELLED', action: 'expire', actorId: null, actorRole: null })
      // Exactly once: a second sweep finds nothing.
      assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
      assert.equal(await ctx.api.stockOf(product.productId), 10)
    })
  }

  it('leaves alone orders still within their reservation, confirmed and paid ones and cancelled ones', async () => {
    const { owner, admin, product, order: ahead } = await placed(ctx.api, 1)
    const confirmed = await ctx.api.order(owner, [{ productId: product.productId, quantity: 2 }])
    const cancelled = await ctx.api.order(owner, [{ productId: product.productId, quantity: 3 }])
    assert.equal((await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${confirmed.orderId}/confirm`, headers: owner.headers })).statusCode, 200)
    const { paymentId } = successData<{ paymentId: number }>(await ctx.api.inject({ url: `/api/v1/orders/${confirmed.orderId}`, headers: owner.headers }))
    assert.equal((await ctx.api.inject({
      method: 'PATCH', url: `/api/v1/payments/${paymentId}/process`, headers: owner.headers, payload: { paymentMethodToken: 'tok_visa' },
    })).statusCode, 200)
    assert.equal((await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${cancelled.orderId}/cancel`, headers: admin.headers })).statusCode, 200)
    await lapse(ctx.api, confirmed.orderId)
    await lapse(ctx.api, cancelled.orderId)

    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
    const statuses = await ctx.api.app.db.selectFrom('orders').select(['id', 'status']).orderBy('id').execute()
    assert.deepEqual(statuses, [
      { id: ahead.orderId, status: 'PLACED' },
      { id: confirmed.orderId, status: 'CONFIRMED' },
      { id: cancelled.orderId, status: 'CANCELLED' },
    ])
    assert.equal(await ctx.api.stockOf(product.productId), 10 - 1 - 2)
  })

  it('answers a confirm after the deadline with 400 INVALID_ORDER_STATUS naming the expiry, and expires the order', async () => {
    const { owner, product, order } = await placed(ctx.api)
    await lapse(ctx.api, order.orderId)
    const { reserved_until: deadline } = await ctx.api.app.db.selectFrom('orders').select('reserved_until').where('id', '=', order.orderId).executeTakeFirstOrThrow()

    const res = await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers })
    assertError(res, {
      code: 'INVALID_ORDER_STATUS',
      instance: `/api/v1/orders/${order.orderId}/confirm`,
      detail: `Cannot confirm an order that is CANCELLED: its stock reservation expired at ${deadline!.toISOString()}.`,
    })
    assert.equal(await ctx.api.stockOf(product.productId), 10)
    assert.deepEqual((await historyOf(ctx.api, order.orderId, owner)).map(entry => entry.action), ['create', 'expire'])
    assert.equal(await ctx.api.app.db.selectFrom('payments').select('id').executeTakeFirst(), undefined)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
  })

  it('does not stop the clock on a confirm: a confirmed order with nothing captured expires at the deadline too (§18)', async () => {
    const { owner, product, order } = await placed(ctx.api)
    assert.equal((await ctx.api.inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers })).statusCode, 200)
    await lapse(ctx.api, order.orderId)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 1)
    assert.deepEqual((await historyOf(ctx.api, order.orderId, owner)).map(entry => entry.action), ['create', 'confirm', 'expire'])
    assert.equal(await ctx.api.stockOf(product.productId), 10)
  })

  it('counts expiries in orders_expired_total', async () => {
    const read = async () => {
      const text = (await ctx.api.inject({ url: '/actuator/prometheus', headers: (await ctx.api.admin()).headers })).body
      return Number(/^orders_expired_total (\d+)$/m.exec(text)?.[1])
    }
    const before = await read()
    const { order } = await placed(ctx.api)
    await lapse(ctx.api, order.orderId)
    await expireLapsedReservations(ctx.api.app.db)
    assert.equal(await read(), before + 1)
  })
}, { env: { ORDER_RESERVATION_TTL: '45m' }, build: { reservationSweepMs: 3_600_000 } })

describeEachBackend('order reservations with ORDER_RESERVATION_TTL=0', (ctx) => {
  it('gives orders no deadline: they hold their stock until confirmed or cancelled', async () => {
    const { order, product } = await placed(ctx.api)
    const row = await ctx.api.app.db.selectFrom('orders').select('reserved_until').where('id', '=', order.orderId).executeTakeFirstOrThrow()
    assert.equal(row.reserved_until, null)
    assert.equal(await expireLapsedReservations(ctx.api.app.db), 0)
    assert.equal(await ctx.api.stockOf(product.productId), 7)
  })
}, { env: { ORDER_RESERVATION_TTL: '0' } })

describeEachBackend('the reservation sweep', (ctx) => {
  it('expires lapsed orders by itself, in the background', async () => {
    const { owner, product, order } = await placed(ctx.api)
    await lapse(ctx.api, order.orderId)
    await waitFor(async () => (await ctx.api.stockOf(product.productId)) === 10)
    const detail = successData<{ status: string }>(await ctx.api.inject({ url: `/api/v1/orders/${order.orderId}`, headers: owner.headers }))
    assert.equal(detail.status, 'CANCELLED')
  })
}, { build: { reservationSweepMs: 50 } })

describe('two instances expiring the same orders on one PostgreSQL database', {
  skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (two instances share one PostgreSQL database)',
}, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let second: DatabaseHandle
  const apis: Api[] = []

  before(async () => {
    database = await createTestDatabase('postgres')
    second = await openDatabase({ databaseUrl: database.url!, databasePoolSize: 10, databasePreparedStatements: true, dataDir: 'memory' })
    for (const handle of [database, second]) {
      // One member places 30 unpaid orders: the unpaid-order limit (unpaid.test.ts) is off here.
      apis.push(new Api(await buildApp(testConfig({ MAX_UNPAID_ORDERS: '0' }), { logger: false, database: handle, reservationSweepMs: 3_600_000 })))
    }
    await resetDatabase(apis[0]!.app)
  })
  after(async () => {
    for (const api of apis) await api.app.close()
    await second?.close()
    await database?.close()
  })

  it('expires each order exactly once, stock exact, while the owners race to confirm', async () => {
    const [one, two] = apis as [Api, Api]
    const admin = await one.admin()
    const owner = await one.member('owner')
    const products = await Promise.all([5, 7, 11].map(() => one.product(admin, { stockQuantity: 1000 })))
    const orders = []
    for (let i = 0; i < 30; i++) {
      orders.push(await one.order(owner, products.map((product, p) => ({ productId: product.productId, quantity: 1 + ((i + p) % 4) }))))
    }
    await sql`update orders set reserved_until = now() - interval '1 second'`.execute(one.app.db)

    const [sweeps, confirms] = await Promise.all([
      Promise.all([one, two, one, two].map(api => expireLapsedReservations(api.app.db))),
      Promise.all(orders.map((order, i) => (i % 2 === 0 ? one : two).inject({
        method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers,
      }))),
    ])

    // Every confirm came after the deadline: each is refused, whoever expired the order.
    assert.deepEqual(confirms.map(res => res.statusCode), orders.map(() => 400))
    const byConfirm = orders.length - sweeps.reduce((sum, n) => sum + n, 0)
    assert.ok(byConfirm >= 0, `sweeps expired ${sweeps.join('+')} of ${orders.length}`)
    const expiries = await one.app.db.selectFrom('order_history').select(['order_id', 'actor_id'])
      .where('action', '=', 'expire').orderBy('order_id').execute()
    assert.deepEqual(expiries, orders.map(order => ({ order_id: order.orderId, actor_id: null })))
    assert.equal(await one.app.db.selectFrom('order_history').select('id').where('action', '=', 'confirm').executeTakeFirst(), undefined)
    for (const product of products) assert.equal(await one.stockOf(product.productId), 1000)
    const statuses = await one.app.db.selectFrom('orders').select('status').distinct().execute()
    assert.deepEqual(statuses, [{ status: 'CANCELLED' }])
  })
})
