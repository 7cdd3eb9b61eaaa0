import { sql, type RawBuilder } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import type { Fulfillment } from './schemas.js'
import type { FulfillmentRow } from './table.js'

/** How many of the order line `i` left in fulfilments that are not CANCELLED (CONTRACT §15.3). */
export const fulfilledOf = (line: string): RawBuilder<number> => sql<number>`coalesce((
  select sum(fi.quantity) from fulfillment_items fi join fulfillments f on f.id = fi.fulfillment_id
  where f.order_id = ${sql.ref(`${line}.order_id`)} and fi.product_id = ${sql.ref(`${line}.product_id`)} and f.status <> 'CANCELLED'), 0)`

/** What is left to ship of each of an order's lines: ordered minus what fulfilments that are not CANCELLED hold. */
export async function leftToShip (trx: Tx, orderId: number): Promise<Array<{ product_id: number, quantity: number }>> {
  const { rows } = await sql<{ product_id: number, quantity: number }>`
    select i.product_id, i.quantity - coalesce((
      select sum(fi.quantity) from fulfillment_items fi join fulfillments f on f.id = fi.fulfillment_id
      where f.order_id = i.order_id and f.status <> 'CANCELLED' and fi.product_id = i.product_id), 0)::integer as quantity
    from order_items i where i.order_id = ${orderId}
    order by i.position`.execute(trx)
  return rows
}

/**
 * §3's one-step deliver of a locked order (CONTRACT §15.3): what is not yet shipped leaves as one
 * fulfilment without tracking, every shipment is delivered now, and the order is FULFILLED; in the
 * caller's transaction, before the order's own update.
 */
export async function shipAndDeliverAll (trx: Tx, orderId: number): Promise<void> {
  const rest = (await leftToShip(trx, orderId)).filter(line => line.quantity > 0)
  if (rest.length > 0) {
    const { id } = await trx.insertInto('fulfillments')
      .values({ order_id: orderId, status: 'DELIVERED', carrier: null, tracking_number: null, tracking_url: null, delivered_at: sql<Date>`now()` })
      .returning('id').executeTakeFirstOrThrow()
    await trx.insertInto('fulfillment_items')
      .values(rest.map(line => ({ fulfillment_id: id, product_id: line.product_id, quantity: line.quantity }))).execute()
  }
  await trx.updateTable('fulfillments').set({ status: 'DELIVERED', delivered_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('order_id', '=', orderId).where('status', '=', 'SHIPPED').execute()
  await trx.updateTable('orders').set({ fulfillment_status: 'FULFILLED' }).where('id', '=', orderId).execute()
}

/** An order's fulfilments as the API shows them, oldest first, items in the order's line order. */
export async function listFulfillments (db: Db, orderId: number): Promise<Fulfillment[]> {
  const { rows } = await sql<FulfillmentRow & { items: Fulfillment['items'] }>`
    select f.*, coalesce((
      select json_agg(json_build_object('productId', fi.product_id, 'quantity', fi.quantity) order by i.position)
      from fulfillment_items fi join order_items i on i.order_id = f.order_id and i.product_id = fi.product_id
      where fi.fulfillment_id = f.id), '[]'::json) as items
    from fulfillments f where f.order_id = ${orderId}
    order by f.id`.execute(db)
  return rows.map(row => ({
    fulfillmentId: row.id,
    orderId: row.order_id,
    status: row.status,
    items: row.items,
    carrier: row.carrier,
    trackingNumber: row.tracking_number,
    trackingUrl: row.tracking_url,
    shippedAt: row.shipped_at.toISOString(),
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  }))
}
