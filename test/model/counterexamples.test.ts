import assert from 'node:assert/strict'
import { it } from 'node:test'
import { sql } from 'kysely'
import type { Event } from '../../src/events/schemas.js'
import { describeEachBackend, feedSettled, successData, type Api } from '../helper.js'
import { confirmedOrder, get, patch } from '../payments/fixtures.js'

// Bugs the model-based test (books.test.ts) found, each kept as an ordinary test with the seed that
// found it (or the commands that reach it), each fixed.

/** The id the next transaction will get, read without keeping one. */
async function nextXid (api: Api): Promise<bigint> {
  const { rows } = await sql<{ next: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as next`.execute(api.app.db)
  return BigInt(rows[0]!.next)
}

/**
 * Spends transaction ids until the next one has one more decimal digit than now (1000, 10000, …),
 * each DO iteration committing one; false when that is too far to reach quickly.
 */
async function crossDigitBoundary (api: Api): Promise<boolean> {
  const next = await nextXid(api)
  const boundary = 10n ** BigInt(next.toString().length)
  if (boundary - next > 400_000n) return false
  const spend = Number(boundary - next) + 1
  await sql.raw(`do $$ begin for i in 1..${spend} loop perform pg_current_xact_id(); commit; end loop; end $$`).execute(api.app.db)
  assert.ok(await nextXid(api) >= boundary)
  return true
}

describeEachBackend('counterexamples found by the model-based test', (ctx) => {
  // MODEL_SEED=54460838 MODEL_PATH=16 (also seeds 599359207 and 2418063), shrunk to: PlaceOrder(by
  // admin), Confirm, Pay(approved), GoodwillRefund; after the refund the feed listed the order's
  // events as sequence 5, 1, 2, 3, 4. readFeed (src/events/repository.ts) selected `tx::text as tx`
  // and then ordered by `tx`, which PostgreSQL took for that text output column: 1001 sorted before
  // 995. The cursor compares the xid8 column, so a consumer following nextCursor skipped events too.
  it('lists an order\'s events in sequence order and hands each to a tailing reader once, also when transaction ids gain a digit (seed 54460838)', async (t) => {
    const o = await confirmedOrder(ctx.api) // order.placed, payment.created, order.confirmed
    successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })) // payment.succeeded
    if (!await crossDigitBoundary(ctx.api)) {
      t.skip('the server\'s next transaction id is too far below the next power of ten')
      return
    }
    successData(await patch(ctx.api, `${o.paymentUrl}/refund`, o.admin, { amount: 100 })) // payment.refunded, with a longer xid
    await feedSettled(ctx.api.app)

    const read = async (size: number) => {
      const seen: Array<[number, string]> = []
      let cursor: string | undefined
      for (let page = 0; page < 20; page++) {
        const slice = successData<{ content: Event[], hasNext: boolean, nextCursor: string }>(await ctx.api.get('/api/v1/admin/events',
          { orderId: o.orderId, size, ...(cursor ? { cursor } : {}) }, o.admin))
        seen.push(...slice.content.map((e): [number, string] => [e.sequence, e.type]))
        if (!slice.hasNext) break
        cursor = slice.nextCursor
      }
      return seen
    }
    const expected = [[1, 'order.placed'], [2, 'payment.created'], [3, 'order.confirmed'], [4, 'payment.succeeded'], [5, 'payment.refunded']]
    assert.deepEqual(await read(100), expected, 'one page, oldest first')
    assert.deepEqual(await read(1), expected, 'page by page, following nextCursor: each event once')
  })

  // Found with the model's commands run in this order (no random seed: 1,300 random runs of 100 and
  // 150 commands did not reach it): PlaceOrder(2 × A, 1 × B), Confirm, Pay, Fulfil(1 × A), CancelFulfilment,
  // EditOrder(A −2, by admin; REFUND 200). The cancelled shipment still held 1 × A, but the
  // order's detail then lists it with `items: []` (and GET …/fulfillments and …/fulfillments/{id} too):
  // src/fulfillments/repository.ts listed a shipment's items by joining order_items on the product, to
  // sort them by line position, so the items of a line the order no longer has dropped out. They are
  // now listed in line order, and those of lines no longer on the order after them, by product.
  it('keeps a cancelled shipment\'s items after an edit removes their line', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const a = (await ctx.api.product(admin, { price: 100, stockQuantity: 10 })).productId
    const b = (await ctx.api.product(admin, { price: 30, stockQuantity: 10 })).productId
    const { orderId } = await ctx.api.order(owner, [{ productId: a, quantity: 2 }, { productId: b, quantity: 1 }])
    const orderUrl = `/api/v1/orders/${orderId}`
    successData(await patch(ctx.api, `${orderUrl}/confirm`, owner))
    const paymentId = successData<{ paymentId: number }>(await get(ctx.api, orderUrl, owner)).paymentId
    successData(await patch(ctx.api, `/api/v1/payments/${paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' }))
    const shipped = await ctx.api.inject({
      method: 'POST', url: `/api/v1/admin/orders/${orderId}/fulfillments`, headers: admin.headers, payload: { items: [{ productId: a, quantity: 1 }] },
    })
    assert.equal(shipped.statusCode, 201, shipped.body)
    const fulfillmentId = shipped.json().data.fulfillmentId as number
    successData(await patch(ctx.api, `/api/v1/admin/orders/${orderId}/fulfillments/${fulfillmentId}/cancel`, admin))
    const version = successData<{ version: number }>(await get(ctx.api, orderUrl, admin)).version
    const edited = await ctx.api.inject({
      method: 'POST', url: `${orderUrl}/edits`, headers: { ...admin.headers, 'if-match': `"${version}"` }, payload: { changes: [{ productId: a, quantity: 0 }] },
    })
    assert.equal(edited.statusCode, 201, edited.body)

    const held = [{ productId: a, quantity: 1 }]
    const detail = successData<{ items: Array<{ productId: number }>, fulfillments: Array<{ fulfillmentId: number, status: string, items: unknown }> }>(
      await get(ctx.api, orderUrl, admin))
    assert.deepEqual(detail.items.map(item => item.productId), [b], 'the edit removed the line of A')
    assert.deepEqual(detail.fulfillments.map(f => [f.fulfillmentId, f.status, f.items]), [[fulfillmentId, 'CANCELLED', held]], 'the detail')
    assert.deepEqual(successData<Array<{ items: unknown }>>(await get(ctx.api, `${orderUrl}/fulfillments`, admin)).map(f => f.items), [held], 'the list')
    assert.deepEqual(successData<{ items: unknown }>(await get(ctx.api, `${orderUrl}/fulfillments/${fulfillmentId}`, admin)).items, held, 'the shipment')
  })
})
