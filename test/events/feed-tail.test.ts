import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { buildApp } from '../../src/app.js'
import { findOrder, updateOrder } from '../../src/orders/repository.js'
import { Api, createTestDatabase, feedSettled, resetDatabase, successData, testConfig, type Member } from '../helper.js'

// CONTRACT §12: the feed is tail-safe. Transactions commit out of eventId order; a consumer that
// keeps following nextCursor must still see every event exactly once. Only PostgreSQL runs
// transactions side by side, so this runs there.

interface Event { eventId: number, orderId: number, sequence: number, type: string }

describe('the event feed followed while transactions commit out of order', {
  skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (concurrent transactions need PostgreSQL)',
}, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let api: Api
  let admin: Member

  before(async () => {
    database = await createTestDatabase('postgres')
    api = new Api(await buildApp(testConfig({ MAX_UNPAID_ORDERS: '0' }), { logger: false, database }))
    await resetDatabase(api.app)
    admin = await api.admin()
  })
  after(async () => {
    await api?.app.close()
    await database?.close()
  })

  /** One slice from `cursor`; returns its events and the next cursor. */
  async function poll (cursor: string | undefined) {
    const slice = successData<{ content: Event[], nextCursor: string }>(await api.get('/api/v1/admin/events', { size: 7, ...(cursor ? { cursor } : {}) }, admin))
    return slice
  }

  it('holds back events committed after an older transaction that is still open, then delivers all of them once', async () => {
    const owner = await api.member('owner')
    const product = await api.product(admin, { stockQuantity: 1000 })
    const first = await api.order(owner, [{ productId: product.productId, quantity: 1 }])
    // The starting cursor must be past the first order's event, which a transaction open elsewhere
    // on the server (another test file's) may still hold back.
    await feedSettled(api.app)
    let cursor = (await poll(undefined)).nextCursor

    // An older transaction writes an event (a lower eventId) and stays open…
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    let written!: () => void
    const wrote = new Promise<void>(resolve => { written = resolve })
    const slow = api.app.db.transaction().execute(async (trx) => {
      const order = (await findOrder(trx, first.orderId))!
      await updateOrder(trx, order, { status: order.status, memo: 'slow', shippingAddress: null, paymentId: null },
        { action: 'update', actor: { id: admin.id, role: 'ADMIN' } }, [{ type: 'order.updated' }])
      written()
      await gate
    })
    await wrote
    const later = []
    try {
      // …while newer ones commit.
      later.push(await api.order(owner, [{ productId: product.productId, quantity: 1 }]))
      later.push(await api.order(owner, [{ productId: product.productId, quantity: 1 }]))
      const held = await poll(cursor)
      assert.deepEqual(held.content, [], 'nothing after a transaction still open may be shown yet')
      cursor = held.nextCursor
    } finally {
      release()
      await slow
    }
    await feedSettled(api.app)
    const after = await poll(cursor)
    assert.deepEqual(after.content.map(event => [event.orderId, event.type]), [
      [first.orderId, 'order.updated'], [later[0]!.orderId, 'order.placed'], [later[1]!.orderId, 'order.placed'],
    ])
  })

  it('gives a follower every event exactly once while many orders are written concurrently', async () => {
    const owner = await api.member('busy')
    const product = await api.product(admin, { stockQuantity: 100_000 })
    await feedSettled(api.app)
    let cursor = (await poll(undefined)).nextCursor
    const seen: number[] = []
    const progress = { writing: true }
    const writers = (async () => {
      const work = []
      for (let i = 0; i < 120; i++) {
        work.push((async () => {
          const order = await api.order(owner, [{ productId: product.productId, quantity: 1 }])
          await api.inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers })
        })())
        if (i % 8 === 7) await Promise.all(work.splice(0))
      }
      await Promise.all(work)
      progress.writing = false
    })()
    while (progress.writing) {
      const slice = await poll(cursor)
      seen.push(...slice.content.map(event => event.eventId))
      cursor = slice.nextCursor
    }
    await writers
    await feedSettled(api.app)
    for (let slice = await poll(cursor); slice.content.length > 0; slice = await poll(cursor)) {
      seen.push(...slice.content.map(event => event.eventId))
      cursor = slice.nextCursor
    }
    const written = (await api.app.db.selectFrom('events').select('events.id').innerJoin('orders', 'orders.id', 'events.order_id')
      .where('orders.customer_id', '=', owner.id).orderBy('events.id').execute()).map(row => row.id)
    assert.equal(written.length, 360)
    assert.equal(new Set(seen).size, seen.length, 'an event was seen twice')
    assert.deepEqual([...seen].sort((a, b) => a - b), written)
  })
})
