import { sql, type RawBuilder } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { MAX_STOCK } from '../limits.js'
import type { Return, ReturnReason, ReturnStatus } from './schemas.js'
import type { ReturnRow } from './table.js'

/** How many of the order line `line` came back in RECEIVED returns (CONTRACT §15.3's `returnedQuantity`). */
export const returnedOf = (line: string): RawBuilder<number> => sql<number>`coalesce((
  select sum(ri.received_quantity) from return_items ri join returns r on r.id = ri.return_id
  where r.order_id = ${sql.ref(`${line}.order_id`)} and ri.product_id = ${sql.ref(`${line}.product_id`)} and r.status = 'RECEIVED'), 0)`

/** The returns matching `where` (over `returns r`) as the API shows them, items in the order they were asked for. */
function selectReturns (where: RawBuilder<unknown>, tail: RawBuilder<unknown> = sql`order by r.id`): RawBuilder<ReturnRow & { items: Return['items'] }> {
  return sql<ReturnRow & { items: Return['items'] }>`
    select r.*, coalesce((
      select json_agg(json_build_object('productId', ri.product_id, 'quantity', ri.quantity, 'reason', ri.reason,
        'receivedQuantity', ri.received_quantity, 'restock', ri.restock) order by ri.position)
      from return_items ri where ri.return_id = r.id), '[]'::json) as items
    from returns r where ${where}
    ${tail}`
}

export function toReturn (row: ReturnRow & { items: Return['items'] }): Return {
  return {
    returnId: row.id,
    orderId: row.order_id,
    status: row.status,
    items: row.items,
    note: row.note,
    rejectionReason: row.rejection_reason,
    refundAmount: row.refund_amount,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

/** An order's returns, oldest first. */
export async function listReturns (db: Db, orderId: number): Promise<Return[]> {
  const { rows } = await selectReturns(sql`r.order_id = ${orderId}`).execute(db)
  return rows.map(toReturn)
}

/** One return as the API shows it, or undefined. */
export async function readReturn (db: Db, id: string | number): Promise<Return | undefined> {
  const { rows } = await selectReturns(sql`r.id = ${idValue(id)}`).execute(db)
  return rows[0] && toReturn(rows[0])
}

/** The order a return belongs to (read without a lock: a return never moves to another order). */
export async function orderOfReturn (db: Db, id: string): Promise<number | undefined> {
  const row = await db.selectFrom('returns').select('order_id').where('id', '=', idValue(id)).executeTakeFirst()
  return row?.order_id
}

/** Locks the return for the rest of the transaction (its order's lock is held). */
export function lockReturn (trx: Tx, id: string | number): Promise<ReturnRow | undefined> {
  return trx.selectFrom('returns').selectAll().where('id', '=', idValue(id)).forUpdate().executeTakeFirst()
}

/** What each of an order's lines may still send back (CONTRACT §15.4), in the order's line order. */
export interface LineReturnable {
  product_id: number
  unit_price: number
  /** In fulfilments that are DELIVERED. */
  delivered: number
  /** Received in RECEIVED returns. */
  returned: number
  /** Asked for in REQUESTED returns. */
  open: number
}

export async function returnableLines (trx: Tx, orderId: number): Promise<LineReturnable[]> {
  const { rows } = await sql<LineReturnable>`
    select i.product_id, i.unit_price,
      coalesce((
        select sum(fi.quantity) from fulfillment_items fi join fulfillments f on f.id = fi.fulfillment_id
        where f.order_id = i.order_id and fi.product_id = i.product_id and f.status = 'DELIVERED'), 0)::integer as delivered,
      ${returnedOf('i')}::integer as returned,
      coalesce((
        select sum(ri.quantity) from return_items ri join returns r on r.id = ri.return_id
        where r.order_id = i.order_id and ri.product_id = i.product_id and r.status = 'REQUESTED'), 0)::integer as open
    from order_items i where i.order_id = ${orderId}
    order by i.position`.execute(trx)
  return rows
}

/** The latest `deliveredAt` among the order's fulfilments (CONTRACT §15.7), or null when none is DELIVERED. */
export async function latestDelivery (trx: Tx, orderId: number): Promise<Date | null> {
  const row = await trx.selectFrom('fulfillments').select(eb => eb.fn.max('delivered_at').as('at'))
    .where('order_id', '=', orderId).where('status', '=', 'DELIVERED').executeTakeFirst()
  return (row?.at as Date | null | undefined) ?? null
}

/** Records a REQUESTED return with its lines; returns its id. */
export async function insertReturn (
  trx: Tx, orderId: number, request: { items: ReadonlyArray<{ productId: number, quantity: number, reason: ReturnReason | null }>, note: string | null }
): Promise<number> {
  const { id } = await trx.insertInto('returns').values({ order_id: orderId, note: request.note }).returning('id').executeTakeFirstOrThrow()
  await trx.insertInto('return_items').values(request.items.map((item, position) => ({
    return_id: id, product_id: item.productId, position, quantity: item.quantity, reason: item.reason,
  }))).execute()
  return id
}

/** Moves a return to `status`, with the fields that step sets. */
export async function updateReturn (
  trx: Tx, id: number, change: { status: ReturnStatus, rejection_reason?: string | null, refund_amount?: number }
): Promise<void> {
  await trx.updateTable('returns').set({ ...change, updated_at: sql<Date>`now()` }).where('id', '=', id).execute()
}

/** Records what came back of each line of a return: lines not listed came back with nothing, and are not restocked. */
export async function recordReceipt (trx: Tx, id: number, lines: ReadonlyArray<{ productId: number, quantity: number, restock: boolean }>): Promise<void> {
  await sql`
    update return_items ri set received_quantity = coalesce(t.quantity, 0), restock = coalesce(t.restock, false)
    from return_items x
    left join unnest(${lines.map(line => line.productId)}::bigint[], ${lines.map(line => line.quantity)}::integer[],
      ${lines.map(line => line.restock)}::boolean[]) as t (product_id, quantity, restock) on t.product_id = x.product_id
    where x.return_id = ${id} and ri.return_id = x.return_id and ri.product_id = x.product_id`.execute(trx)
}

/**
 * Puts received quantities back in stock, locking the products in id order (after the order and its
 * payments). A stock near the largest a product may hold stops there, as a cancel's release does.
 */
export async function restock (trx: Tx, lines: ReadonlyArray<{ productId: number, quantity: number }>): Promise<void> {
  if (lines.length === 0) return
  const ids = lines.map(line => line.productId)
  await sql`select p.id from products p where p.id = any (${ids}::bigint[]) order by p.id for no key update`.execute(trx)
  await sql`
    update products p set stock_quantity = least(p.stock_quantity::bigint + t.quantity, ${MAX_STOCK}), updated_at = now()
    from unnest(${ids}::bigint[], ${lines.map(line => line.quantity)}::integer[]) as t (product_id, quantity)
    where p.id = t.product_id`.execute(trx)
}

/** Stores whether the order has a REQUESTED return (CONTRACT §15.5), as its returns now are. */
export async function storeOpenReturn (trx: Tx, orderId: number): Promise<void> {
  await sql`
    update orders set has_open_return = exists (select 1 from returns r where r.order_id = ${orderId} and r.status = 'REQUESTED')
    where id = ${orderId}`.execute(trx)
}

/** The admin list: newest first, one page, and how many match in all. */
export async function pageReturns (
  db: Db, filter: { statuses?: readonly ReturnStatus[], orderId?: number, offset: number, limit: number }
): Promise<{ rows: Return[], total: number }> {
  const conditions = [sql`true`]
  if (filter.statuses) conditions.push(sql`r.status = any (${[...filter.statuses]}::text[])`)
  if (filter.orderId !== undefined) conditions.push(sql`r.order_id = ${filter.orderId}`)
  const where = sql.join(conditions, sql` and `)
  const [{ rows }, { rows: [count] }] = await Promise.all([
    selectReturns(where, sql`order by r.id desc limit ${filter.limit} offset ${filter.offset}`).execute(db),
    sql<{ n: number }>`select count(*)::integer as n from returns r where ${where}`.execute(db),
  ])
  return { rows: rows.map(toReturn), total: count!.n }
}
