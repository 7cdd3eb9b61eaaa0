import { sql, type RawBuilder } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { isId64 } from '../limits.js'
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
export async function shipAndDeliverAll (trx: Tx, orderId: number): Promise<{ created: Fulfillment | null, delivered: Fulfillment[] }> {
  const rest = (await leftToShip(trx, orderId)).filter(line => line.quantity > 0)
  let createdId: number | null = null
  if (rest.length > 0) {
    createdId = await insertFulfillment(trx, orderId, rest.map(line => ({ productId: line.product_id, quantity: line.quantity })),
      { carrier: null, trackingNumber: null, trackingUrl: null })
  }
  const delivered = await trx.updateTable('fulfillments').set({ status: 'DELIVERED', delivered_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('order_id', '=', orderId).where('status', '=', 'SHIPPED').returning('id').execute()
  await trx.updateTable('orders').set({ fulfillment_status: 'FULFILLED' }).where('id', '=', orderId).execute()
  const all = await listFulfillments(trx, orderId)
  const ids = new Set(delivered.map(row => row.id))
  return {
    created: all.find(f => f.fulfillmentId === createdId) ?? null,
    delivered: all.filter(f => ids.has(f.fulfillmentId)),
  }
}

/** Records a SHIPPED fulfilment of these items (in the order's line order); returns its id. */
export async function insertFulfillment (
  trx: Tx, orderId: number, items: ReadonlyArray<{ productId: number, quantity: number }>,
  tracking: { carrier: string | null, trackingNumber: string | null, trackingUrl: string | null }
): Promise<number> {
  const { id } = await trx.insertInto('fulfillments')
    .values({ order_id: orderId, carrier: tracking.carrier, tracking_number: tracking.trackingNumber, tracking_url: tracking.trackingUrl })
    .returning('id').executeTakeFirstOrThrow()
  await trx.insertInto('fulfillment_items')
    .values(items.map(item => ({ fulfillment_id: id, product_id: item.productId, quantity: item.quantity }))).execute()
  return id
}

/** Locks the order's fulfilment with this id (path text), or `undefined` when the order has none such. */
export function lockFulfillment (trx: Tx, orderId: number, id: string | number): Promise<FulfillmentRow | undefined> {
  if (!isId64(String(id))) return Promise.resolve(undefined)
  return trx.selectFrom('fulfillments').selectAll().where('id', '=', idValue(id)).where('order_id', '=', orderId).forUpdate().executeTakeFirst()
}

/** Moves a fulfilment to DELIVERED (now) or CANCELLED; returns how many of its order's fulfilments are still SHIPPED. */
export async function setFulfillmentStatus (trx: Tx, id: number, status: 'DELIVERED' | 'CANCELLED'): Promise<number> {
  const { rows } = await sql<{ shipped: number }>`
    with f as (
      update fulfillments set status = ${status}, updated_at = now(),
        delivered_at = case when ${status}::text = 'DELIVERED' then now() else delivered_at end
      where id = ${id} returning order_id
    )
    select count(*)::integer as shipped from fulfillments g, f
    where g.order_id = f.order_id and g.status = 'SHIPPED' and g.id <> ${id}`.execute(trx)
  return rows[0]?.shipped ?? 0
}

/**
 * Stores the order's fulfilment status as its lines and shipments now have it (CONTRACT §15.3):
 * FULFILLED when nothing is left to ship, UNFULFILLED when nothing has shipped, else
 * PARTIALLY_FULFILLED. Called after every change of its shipments or its lines, in that transaction.
 */
export async function storeFulfillmentStatus (trx: Tx, orderId: number): Promise<void> {
  await sql`
    update orders set fulfillment_status = (
      select case
        when bool_and(s.shipped >= s.quantity) then 'FULFILLED'
        when bool_and(s.shipped = 0) then 'UNFULFILLED'
        else 'PARTIALLY_FULFILLED' end
      from (select i.quantity, ${fulfilledOf('i')} as shipped from order_items i where i.order_id = ${orderId}) s)
    where id = ${orderId}`.execute(trx)
}

/** One of the order's fulfilments as the API shows it, or `undefined`. */
export async function findFulfillment (db: Db, orderId: number, id: string | number): Promise<Fulfillment | undefined> {
  if (!isId64(String(id))) return undefined
  return (await listFulfillments(db, orderId, Number(id)))[0]
}

/**
 * The order's fulfilments as the detail lists them (CONTRACT §15.3), for the order row `alias`:
 * one subquery through fulfillments_order_idx, none for an order that never shipped.
 */
export const fulfillmentsJson = (alias: string) => sql<Fulfillment[]>`coalesce((
  select json_agg(json_build_object(
    'fulfillmentId', f.id, 'orderId', f.order_id, 'status', f.status,
    'items', (select json_agg(json_build_object('productId', fi.product_id, 'quantity', fi.quantity) order by i.position nulls last, fi.product_id)
      from fulfillment_items fi left join order_items i on i.order_id = f.order_id and i.product_id = fi.product_id
      where fi.fulfillment_id = f.id),
    'carrier', f.carrier, 'trackingNumber', f.tracking_number, 'trackingUrl', f.tracking_url,
    'shippedAt', to_char(f.shipped_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'deliveredAt', to_char(f.delivered_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'createdAt', to_char(f.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) order by f.id)
  from fulfillments f where f.order_id = ${sql.ref(`${alias}.id`)}), '[]'::json)`

/** An order's fulfilments as the API shows them, oldest first, items in the order's line order. */
export async function listFulfillments (db: Db, orderId: number, only?: number): Promise<Fulfillment[]> {
  const { rows } = await sql<FulfillmentRow & { items: Fulfillment['items'] }>`
    select f.*, coalesce((
      select json_agg(json_build_object('productId', fi.product_id, 'quantity', fi.quantity) order by i.position nulls last, fi.product_id)
      from fulfillment_items fi left join order_items i on i.order_id = f.order_id and i.product_id = fi.product_id
      where fi.fulfillment_id = f.id), '[]'::json) as items
    from fulfillments f where f.order_id = ${orderId}${only === undefined ? sql`` : sql` and f.id = ${only}`}
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
