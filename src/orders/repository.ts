import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import { coalesce } from '../db/coalesce.js'
import { outboxWrites, type Announcement } from '../events/outbox.js'
import type { Database, Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { MAX_STOCK, isId64 } from '../limits.js'
import type { KeysetPosition, Sort } from '../http/paging.js'
import type { Role } from '../members/schemas.js'
import type { PaymentStatus } from '../payments/schemas.js'
import type { OrderAction, OrderItem, OrderStatus } from './schemas.js'
import type { OrderHistoryRow, OrderRow } from './table.js'

export type OrderWithItems = OrderRow & { items: OrderItem[], payment_status: PaymentStatus | null }

/** The order's items as API objects, in the order they were submitted, aggregated in the same query. */
const itemsJson = sql<OrderItem[]>`coalesce((
  select json_agg(json_build_object(
    'productId', i.product_id, 'productName', i.product_name, 'quantity', i.quantity,
    'unitPrice', i.unit_price, 'lineTotal', i.line_total) order by i.position)
  from order_items i where i.order_id = orders.id), '[]'::json)`

/** The status of the order's payment, if it has one (delivery depends on it). */
const paymentStatus = sql<PaymentStatus | null>`(select p.status from payments p where p.id = orders.payment_id)`

/** Orders as the detail shows them: the row, its items and its payment's status. */
const selectOrders = (db: Db) =>
  db.selectFrom('orders').selectAll().select([itemsJson.as('items'), paymentStatus.as('payment_status')])

const orderReaders = new WeakMap<Db, (id: string) => Promise<OrderWithItems | undefined>>()

/** The orders with these ids (bigint text), by id. */
async function readOrders (db: Db, ids: string[]): Promise<Map<string, OrderWithItems>> {
  const rows = await selectOrders(db).where('id', '=', sql<number>`any(cast(${ids} as bigint[]))`).execute()
  return new Map(rows.map(row => [String(row.id), row]))
}

/**
 * The order with its items, or `undefined`. Outside a transaction, the reads asked for in the same
 * turn of the event loop share one statement (`coalesce`; measured in bench/RESULTS.md); they also
 * share its failure, and callers asking for the same order get the same (read-only) row. An id that
 * is not a bigint is answered here, before it can join a statement and fail it for the others.
 */
export function findOrder (db: Db, id: string | number): Promise<OrderWithItems | undefined> {
  const key = String(id)
  if (!isId64(key)) return Promise.resolve(undefined)
  if (db.isTransaction) return readOrders(db, [key]).then(found => found.get(key))
  let read = orderReaders.get(db)
  if (!read) {
    read = coalesce(ids => readOrders(db, ids))
    orderReaders.set(db, read)
  }
  return read(key)
}

/**
 * Locks one order whose reservation has run out while it is still unconfirmed, skipping orders
 * another transaction holds: each instance's sweep takes a different one, and an order confirmed
 * or cancelled meanwhile no longer matches when its lock is granted.
 */
export function lockLapsedReservation (trx: Tx): Promise<OrderWithItems | undefined> {
  return selectOrders(trx)
    .where('status', 'in', ['PLACED', 'PENDING']).where('reserved_until', '<=', sql<Date>`now()`)
    .orderBy('reserved_until').limit(1)
    .forUpdate('orders').skipLocked()
    .executeTakeFirst()
}

/** Locks the order row for the rest of the transaction. */
export function lockOrder (trx: Tx, id: string | number): Promise<OrderWithItems | undefined> {
  return selectOrders(trx).where('id', '=', idValue(id)).forUpdate('orders').executeTakeFirst()
}

export interface LockedProduct {
  id: number
  name: string
  price: number
  stock_quantity: number
  status: string
}

/**
 * Locks the products' rows, and so their stock, in id order (so concurrent orders never deadlock),
 * and returns them: what the create checks its items against before reserving.
 */
export function lockProductStock (trx: Tx, ids: readonly number[]): Promise<LockedProduct[]> {
  return trx.selectFrom('products').select(['id', 'name', 'price', 'stock_quantity', 'status'])
    .where('id', 'in', ids).orderBy('id').forUpdate().execute()
}

export function memberExists (trx: Tx, id: number): Promise<boolean> {
  return trx.selectFrom('members').select('id').where('id', '=', id).executeTakeFirst().then(row => row !== undefined)
}

export interface NewOrder {
  customerId: number
  currency: string
  totalAmount: number
  shippingAddress: string | null
  memo: string | null
  items: ReadonlyArray<{ productId: number, productName: string, quantity: number, unitPrice: number, lineTotal: number }>
  actor: { id: number, role: Role }
  /** How long the stock stays reserved without a confirm; 0 = for ever. */
  reservationMs: number
}

/** The `order.placed` event's items: those of the statement's values list, not yet readable from order_items. */
const placedItems = sql`(select jsonb_agg(jsonb_build_object(
    'productId', v.product_id, 'productName', v.product_name, 'quantity', v.quantity,
    'unitPrice', v.unit_price, 'lineTotal', v.line_total) order by v.position) from v)`

/**
 * Reserves the stock (takes each item's quantity off its product), inserts the order, its items,
 * its first history entry and its `order.placed` event: one statement. The caller has locked the
 * products and checked the stock.
 */
export async function insertOrderReservingStock (trx: Tx, order: NewOrder): Promise<OrderRow> {
  const values = sql.join(order.items.map((item, position) =>
    sql`(${position}::smallint, ${item.productId}::bigint, ${item.productName}::text, ${item.quantity}::integer, ${item.unitPrice}::bigint, ${item.lineTotal}::bigint)`))
  const { rows } = await sql<OrderRow>`
    with v (position, product_id, product_name, quantity, unit_price, line_total) as (values ${values}),
    stock as (
      update products p set stock_quantity = p.stock_quantity - v.quantity, updated_at = now()
      from v where p.id = v.product_id
    ),
    o as (
      insert into orders (customer_id, status, total_amount, currency, item_count, shipping_address, memo, reserved_until, event_sequence)
      values (${order.customerId}, 'PLACED', ${order.totalAmount}, ${order.currency}, ${order.items.length},
              ${order.shippingAddress}, ${order.memo},
              case when ${order.reservationMs}::bigint > 0 then now() + ${order.reservationMs}::bigint * interval '1 millisecond' end,
              1)
      returning *
    ),
    items as (
      insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
      select o.id, v.position, v.product_id, v.product_name, v.quantity, v.unit_price, v.line_total from o, v
    ),
    history as (
      insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role)
      select o.id, null, 'PLACED', 'create', ${order.actor.id}, ${order.actor.role} from o
    ),
    ${outboxWrites([{ type: 'order.placed' }], placedItems)}
    select * from o`.execute(trx)
  return rows[0]!
}

/**
 * Gives an order's reserved stock back, locking the products in id order. A stock an admin has set
 * near the largest a product may hold stops there: a cancel must not fail on it.
 */
export async function releaseStock (trx: Tx, orderId: number): Promise<void> {
  await sql`
    select p.id from products p
    where p.id in (select product_id from order_items where order_id = ${orderId})
    order by p.id for update`.execute(trx)
  await sql`
    update products p set stock_quantity = least(p.stock_quantity::bigint + i.quantity, ${MAX_STOCK}), updated_at = now()
    from order_items i where i.order_id = ${orderId} and p.id = i.product_id`.execute(trx)
}

export interface OrderChange {
  status: OrderStatus
  memo: string | null
  shippingAddress: string | null
  paymentId: number | null
}

/**
 * Writes the new state, bumps the version, records the history entry and the change's events:
 * one statement. `events` are announced in the order given (a payment's event before its order's).
 */
export async function updateOrder (
  trx: Tx,
  order: OrderRow,
  change: OrderChange,
  history: { action: OrderAction, actor: { id: number, role: Role } | null },
  events: readonly Announcement[]
): Promise<OrderRow> {
  const { rows } = await sql<OrderRow>`
    with o as (
      update orders set status = ${change.status}, memo = ${change.memo}, shipping_address = ${change.shippingAddress},
        payment_id = ${change.paymentId}, version = version + 1, updated_at = now(),
        event_sequence = event_sequence + ${events.length}::integer
      where id = ${order.id}
      returning *
    ),
    history as (
      insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role)
      select o.id, ${order.status}, ${change.status}, ${history.action}, ${history.actor?.id ?? null}::bigint, ${history.actor?.role ?? null}::text from o
    )${events.length > 0 ? sql`, ${outboxWrites(events)}` : sql``}
    select * from o`.execute(trx)
  return rows[0]!
}

export function findHistory (db: Db, orderId: number): Promise<OrderHistoryRow[]> {
  return db.selectFrom('order_history').selectAll().where('order_id', '=', orderId).orderBy('id').execute()
}

/** What the order lists and the export filter on; absent fields do not filter. */
export interface OrderFilter {
  /** Owner lists: one customer, soft-deleted orders excluded. Admin lists: any customer, every status. */
  customerId?: number
  includeDeleted?: boolean
  statuses?: readonly OrderStatus[]
  createdFrom?: Date
  createdTo?: Date
  minTotal?: number
  maxTotal?: number
  productId?: number
}

/** Column names are qualified: the export joins members and payments, which have a status too. */
export function orderConditions (eb: ExpressionBuilder<Database, 'orders'>, filter: OrderFilter): Expression<SqlBool> {
  const conditions: Array<Expression<SqlBool>> = []
  if (filter.customerId !== undefined) conditions.push(eb('orders.customer_id', '=', filter.customerId))
  // A literal, not a parameter: only then can a prepared statement's generic plan prove that it
  // matches orders_customer_created_idx's predicate (status <> 'DELETED') and use that index.
  if (!filter.includeDeleted) conditions.push(eb('orders.status', '<>', sql.lit('DELETED')))
  if (filter.statuses) conditions.push(eb('orders.status', 'in', filter.statuses))
  if (filter.createdFrom) conditions.push(eb('orders.created_at', '>=', filter.createdFrom))
  if (filter.createdTo) conditions.push(eb('orders.created_at', '<', filter.createdTo))
  if (filter.minTotal !== undefined) conditions.push(eb('orders.total_amount', '>=', filter.minTotal))
  if (filter.maxTotal !== undefined) conditions.push(eb('orders.total_amount', '<=', filter.maxTotal))
  if (filter.productId !== undefined) {
    conditions.push(eb.exists(eb.selectFrom('order_items').select(sql`1`.as('one'))
      .whereRef('order_items.order_id', '=', 'orders.id').where('order_items.product_id', '=', filter.productId)))
  }
  return eb.and(conditions)
}

/**
 * A customer's orders, newest first, soft-deleted ones excluded; served by orders_customer_created_idx.
 * `after` is a keyset position: rows strictly after it in (created_at desc, id desc) order.
 */
export function listOrders (
  db: Db, filter: OrderFilter & { customerId: number, after?: KeysetPosition, offset?: number, limit: number }
): Promise<OrderRow[]> {
  return db.selectFrom('orders').selectAll()
    .where(eb => orderConditions(eb, { ...filter, includeDeleted: false }))
    .$if(filter.after !== undefined, qb => qb.where(eb =>
      eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(filter.after!.createdAt, filter.after!.id))))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(filter.limit)
    .offset(filter.offset ?? 0)
    .execute()
}

export type OrderSortColumn = 'created_at' | 'total_amount' | 'status' | 'updated_at'

/** The admin list: one page in the requested order, and how many orders match in all. */
export async function pageOrders (
  db: Db, filter: OrderFilter & { sort: Sort<OrderSortColumn>, offset: number, limit: number }
): Promise<{ rows: OrderRow[], total: number }> {
  const matching = db.selectFrom('orders').where(eb => orderConditions(eb, filter))
  const [rows, count] = await Promise.all([
    matching.selectAll()
      .orderBy(filter.sort.column, filter.sort.direction).orderBy('id', filter.sort.direction)
      .limit(filter.limit).offset(filter.offset)
      .execute(),
    matching.select(eb => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.total) }
}
