import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { MAX_STOCK } from '../limits.js'
import type { OrderItem } from '../orders/schemas.js'
import type { OrderEdit } from './schemas.js'
import type { OrderEditRow } from './table.js'

/** A product an edit touches, as its lock found it. */
export interface LockedProduct {
  id: number
  name: string
  price: number
  stock_quantity: number
  status: string
}

/**
 * Locks the products an edit changes, in id order (CONTRACT §15.6: after the order and its
 * payments), so that edits, creates and cancels never deadlock on them; by id. FOR NO KEY UPDATE,
 * as every product lock here: it keeps stock changes one at a time but lets the foreign-key checks
 * of order lines (FOR KEY SHARE) through, which an edit's re-inserted lines and a new order's lines
 * make on products other transactions hold (test/orders/after-placement-races.test.ts).
 */
export async function lockProducts (trx: Tx, ids: readonly number[]): Promise<Map<number, LockedProduct>> {
  const { rows } = await sql<LockedProduct>`
    select p.id, p.name, p.price, p.stock_quantity, p.status from products p
    where p.id = any (${ids}::bigint[])
    order by p.id
    for no key update`.execute(trx)
  return new Map(rows.map(row => [row.id, row]))
}

/** Takes the next edit id from the table's sequence: the edit's refunds name it before its row is written. */
export async function nextEditId (trx: Tx): Promise<number> {
  const { rows } = await sql<{ id: number }>`select nextval(pg_get_serial_sequence('order_edits', 'id'))::bigint as id`.execute(trx)
  return rows[0]!.id
}

/**
 * Moves stock by the edit's differences per product (positive: more reserved, taken off the stock;
 * negative: released, stopping at the most a product may hold, as a cancel does). The products are
 * locked and were checked to cover what is taken.
 */
export async function moveStock (trx: Tx, taken: ReadonlyMap<number, number>): Promise<void> {
  const moves = [...taken].filter(([, delta]) => delta !== 0)
  if (moves.length === 0) return
  await sql`
    update products p set stock_quantity = least(p.stock_quantity::bigint - m.delta, ${MAX_STOCK}), updated_at = now()
    from unnest(${moves.map(([id]) => id)}::bigint[], ${moves.map(([, delta]) => delta)}::integer[]) as m (product_id, delta)
    where p.id = m.product_id`.execute(trx)
}

/**
 * Writes the order's lines as the edit leaves them, in their order (positions from 0: kept lines
 * where they were, new ones after them), with the order's total, line count and fulfilment status
 * (a line lowered to what shipped may complete it; a new line reopens it). Before `updateOrder`,
 * which stores the money against the new total.
 */
export async function storeLines (trx: Tx, orderId: number, items: readonly OrderItem[], total: number): Promise<void> {
  await sql`delete from order_items where order_id = ${orderId}`.execute(trx)
  await sql`
    insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
    select ${orderId}, (t.ord - 1)::smallint, t.product_id, t.product_name, t.quantity, t.unit_price, t.line_total
    from unnest(${items.map(i => i.productId)}::bigint[], ${items.map(i => i.productName)}::text[], ${items.map(i => i.quantity)}::integer[],
      ${items.map(i => i.unitPrice)}::bigint[], ${items.map(i => i.lineTotal)}::bigint[])
      with ordinality as t (product_id, product_name, quantity, unit_price, line_total, ord)`.execute(trx)
  const shipped = items.reduce((sum, item) => sum + Math.min(item.fulfilledQuantity, item.quantity), 0)
  const ordered = items.reduce((sum, item) => sum + item.quantity, 0)
  await trx.updateTable('orders').set({
    total_amount: total,
    item_count: items.length,
    fulfillment_status: shipped === 0 ? 'UNFULFILLED' : shipped >= ordered ? 'FULFILLED' : 'PARTIALLY_FULFILLED',
  }).where('id', '=', orderId).execute()
}

/** Records an applied edit under the id `nextEditId` took; returns when it was made. */
export async function insertEdit (trx: Tx, edit: Omit<OrderEdit, 'createdAt'> & { editId: number }): Promise<Date> {
  const { rows } = await sql<{ created_at: Date }>`
    insert into order_edits (id, order_id, from_version, to_version, changes, shipping_address_changed, total_before, total_after,
      settlement_kind, settlement_amount, settlement_payment_id, actor_id, actor_role)
    overriding system value
    values (${edit.editId}, ${edit.orderId}, ${edit.fromVersion}, ${edit.toVersion}, ${JSON.stringify(edit.changes)}::jsonb,
      ${edit.shippingAddressChanged}, ${edit.totalBefore}, ${edit.totalAfter}, ${edit.settlement.kind}, ${edit.settlement.amount},
      ${edit.settlement.paymentId}::bigint, ${edit.actorId}, ${edit.actorRole})
    returning created_at`.execute(trx)
  return rows[0]!.created_at
}

/** An order's edits, oldest first (order_edits_order_idx). */
export function listEdits (db: Db, orderId: number): Promise<OrderEditRow[]> {
  return db.selectFrom('order_edits').selectAll().where('order_id', '=', orderId).orderBy('id').execute()
}

/** One edit of the order, or undefined (also when it is another order's). */
export function findEdit (db: Db, orderId: number, editId: string): Promise<OrderEditRow | undefined> {
  return db.selectFrom('order_edits').selectAll().where('order_id', '=', orderId).where('id', '=', idValue(editId)).executeTakeFirst()
}

export function toOrderEdit (row: OrderEditRow): OrderEdit {
  return {
    editId: row.id,
    orderId: row.order_id,
    fromVersion: row.from_version,
    toVersion: row.to_version,
    changes: row.changes,
    shippingAddressChanged: row.shipping_address_changed,
    totalBefore: row.total_before,
    totalAfter: row.total_after,
    settlement: { kind: row.settlement_kind, amount: row.settlement_amount, paymentId: row.settlement_payment_id },
    actorId: row.actor_id,
    actorRole: row.actor_role,
    createdAt: row.created_at.toISOString(),
  }
}
