import { sql, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from 'kysely'
import { coalesce } from '../db/coalesce.js'
import { StatementOnce } from '../db/compiled.js'
import { outboxWrites, storedItems, type Announcement } from '../events/outbox.js'
import type { Database, Db, Tx } from '../db/schema.js'
import { keyClaimSql, type KeyClaim } from '../idempotency/repository.js'
import { idValue } from '../db/sql.js'
import { MAX_STOCK, isId64 } from '../limits.js'
import type { KeysetPosition, Sort } from '../http/paging.js'
import type { Role } from '../members/schemas.js'
import type { OrderPayment } from '../payments/schemas.js'
import { moneyOf, paymentsJson, storeMoney } from './money.js'
import type { OrderAction, OrderDetail, OrderItem, OrderPaymentStatus, OrderStatus } from './schemas.js'
import type { OrderHistoryRow, OrderRow } from './table.js'
import { fulfilledOf, fulfillmentsJson } from '../fulfillments/repository.js'
import type { Fulfillment } from '../fulfillments/schemas.js'
import { returnedOf } from '../returns/repository.js'
import type { OrderFulfillmentStatus } from '../fulfillments/table.js'

export type OrderWithItems = OrderRow & { items: OrderItem[], payments: OrderPayment[], fulfillments: Fulfillment[] }

/** The order's items as API objects, in the order they were submitted, aggregated in the same query. */
const itemsJson = sql<OrderItem[]>`coalesce((
  select json_agg(json_build_object(
    'productId', i.product_id, 'productName', i.product_name, 'quantity', i.quantity,
    'unitPrice', i.unit_price, 'lineTotal', i.line_total, 'fulfilledQuantity', ${fulfilledOf('i')}, 'returnedQuantity', ${returnedOf('i')})
    order by i.position)
  from order_items i where i.order_id = orders.id), '[]'::json)`

/** Orders as the detail shows them: the row (its money included), its items, its payments and its shipments. */
const selectOrders = (db: Db) =>
  db.selectFrom('orders').selectAll().select([itemsJson.as('items'), paymentsJson('orders').as('payments'), fulfillmentsJson('orders').as('fulfillments')])

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
 * Locks one order whose reservation has run out while it still holds stock with nothing captured
 * (a capture clears `reserved_until`), skipping orders another transaction holds: each instance's
 * sweep takes a different one, and an order captured or cancelled meanwhile no longer matches when
 * its lock is granted.
 */
export function lockLapsedReservation (trx: Tx): Promise<OrderWithItems | undefined> {
  return selectOrders(trx)
    .where('status', 'in', ['PLACED', 'PENDING', 'CONFIRMED']).where('reserved_until', '<=', sql<Date>`now()`)
    .orderBy('reserved_until').limit(1)
    .forUpdate('orders').skipLocked()
    .executeTakeFirst()
}

/** Locks the order row for the rest of the transaction. */
export function lockOrder (trx: Tx, id: string | number): Promise<OrderWithItems | undefined> {
  return selectOrders(trx).where('id', '=', idValue(id)).forUpdate('orders').executeTakeFirst()
}

export interface OrderToPlace {
  customerId: number
  /** An admin ordering for another member: the customer must exist (CONTRACT §3). */
  checkCustomer: boolean
  items: ReadonlyArray<{ productId: number, quantity: number }>
  currency: string
  shippingAddress: string | null
  memo: string | null
  actor: { id: number, role: Role }
  /** How long the stock stays reserved until a payment is captured; 0 = for ever. */
  reservationMs: number
  /**
   * The most orders holding stock with nothing captured the customer may have (CONTRACT §18); 0 = not
   * limited (no limit set, or an admin placing the order).
   */
  unpaidLimit: number
  /** The answer's `allowedActions`: the caller's, on an order just PLACED. */
  allowedActions: readonly string[]
  /** The answer's status, and its `Location`, in which `{id}` stands for the new order's id. */
  answerAs: { status: number, location: string }
}

/** What the create's statement found: the key's stored answer, its own answer, or why it refused. */
export interface PlaceOrderResult {
  /** The key was taken and live as the statement saw it: nothing was checked or written. */
  stored: { fingerprint: string, response_status: number | null, response_body: unknown, location: string | null } | null
  /** Every check passed (the customer, the products, the stock, the total). */
  checks_passed: boolean
  /** The order was placed and this answer stored with the key: the checks passed and the key was claimed. */
  answer: { status: number, body: OrderDetail, location: string } | null
  /** When the checks did not pass, the facts the refusal is made of. */
  customer_known: boolean | null
  total_fits: boolean | null
  /**
   * The unpaid-order limit's facts, when it applies and refused (else null): whether the count is
   * current (false: a concurrent create of the member committed after the statement's snapshot, so
   * nothing was written and the statement must run again), and how many orders it counted.
   */
  limit_fresh: boolean | null
  unpaid_held: number | null
  /** Per item, in the order submitted: its product's status and stock (null: no such product). */
  products: Array<{ status: string | null, stock: number | null }> | null
}

/** The items of the create's statement as the API shows them, from its CTE `checked`. */
const checkedItems = sql`(select jsonb_agg(jsonb_build_object(
    'productId', c.product_id, 'productName', c.product_name, 'quantity', c.quantity,
    'unitPrice', c.unit_price, 'lineTotal', c.line_total::bigint,
    'fulfilledQuantity', 0, 'returnedQuantity', 0) order by c.position) from checked c)`

/** A timestamp as `Date.toISOString()` writes it (the columns hold milliseconds). */
const isoTime = (column: RawBuilder<unknown>) => sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * Places an order in one statement (its own transaction, under autocommit), idempotency key
 * included (`KeyClaim`, src/idempotency/repository.ts). In the order PostgreSQL runs the CTEs:
 * 1. `key_stored`: a key already taken ends it here: nothing is checked, locked or written;
 * 2. `member_gate`, `unpaid`: when the unpaid-order limit applies, the member's row is locked (before
 *    any product: creates of one member run one at a time) and the member's orders that hold stock
 *    with nothing captured are counted. The count reads the statement's snapshot, which may predate
 *    a concurrent create that committed while the lock was waited for: each such create bumps the
 *    row's `unpaid_check`, so a locked value that differs from the snapshot's marks the count stale
 *    (the caller runs the statement again; nothing is written);
 *    `locked`: the products, locked in id order (concurrent creates never deadlock), after the member's
 *    row (its clause reads `member_gate`, which PostgreSQL then runs first). A row another
 *    transaction holds is waited for, and read as that transaction committed it: the checks below
 *    see the stock every earlier create left, not the statement's snapshot;
 * 3. `checked`, `verdict`: the checks in the contract's order (§10): the customer exists (an admin
 *    ordering for another member), every product is ACTIVE, its stock covers the quantity, the
 *    total is a safe integer, then the unpaid-order limit. Prices are snapshotted here;
 * 4. `new_order`, `answer`: only when every check passed, the order's id (from its sequence) and
 *    time, and the answer built from them: the order's detail as `toOrderDetail` shows it
 *    (src/orders/mapper.ts), version 1, the caller's `allowedActions`;
 * 5. `key_claim`: claims the key with that answer stored (waiting for a concurrent claim of the
 *    same key to end), or, without a key, passes;
 * 6. only if the key was claimed: the order, the stock taken off its products (no overselling: the
 *    rows are locked and were checked as they are now), the items, the first history entry, the
 *    `order.placed` event and its webhook deliveries (src/events/outbox.ts), and the member's
 *    `unpaid_check` bumped when the limit applies.
 * Returns what the caller needs to answer, replay or refuse.
 */
export async function placeOrderInOneStatement (db: Db, claim: KeyClaim | null, order: OrderToPlace): Promise<PlaceOrderResult> {
  const values: PlaceOrderValues = {
    productIds: order.items.map(item => item.productId),
    quantities: order.items.map(item => item.quantity),
    itemCount: order.items.length,
    checkCustomer: order.checkCustomer,
    customerId: order.customerId,
    currency: order.currency,
    shippingAddress: order.shippingAddress,
    memo: order.memo,
    actorId: order.actor.id,
    actorRole: order.actor.role,
    reservationMs: order.reservationMs,
    unpaidLimit: order.unpaidLimit,
    allowedActions: JSON.stringify(order.allowedActions),
    answerStatus: order.answerAs.status,
    location: order.answerAs.location,
    keyMemberId: claim?.scope.memberId ?? null,
    keyMethod: claim?.scope.method ?? null,
    keyPath: claim?.scope.path ?? null,
    key: claim?.scope.key ?? null,
    keyFingerprint: claim?.fingerprint ?? null,
    keyTtlMs: claim?.ttlMs ?? null,
  }
  const { rows } = await (claim ? placeOrderWithKey : placeOrderWithoutKey).execute(db, values)
  return rows[0]!
}

/** The values of the create's statement, by the names its SQL uses them under. */
interface PlaceOrderValues extends Record<string, unknown> {
  productIds: number[]
  quantities: number[]
  itemCount: number
  checkCustomer: boolean
  customerId: number
  currency: string
  shippingAddress: string | null
  memo: string | null
  actorId: number
  actorRole: string
  reservationMs: number
  unpaidLimit: number
  /** The answer's `allowedActions`, as JSON. */
  allowedActions: string
  answerStatus: number
  location: string
  keyMemberId: number | null
  keyMethod: string | null
  keyPath: string | null
  key: string | null
  keyFingerprint: string | null
  keyTtlMs: number | null
}

/** The create's statement, with the key's claim in it (`withKey`) or without a key. */
function placeOrderSql (v: PlaceOrderValues, withKey: boolean): RawBuilder<PlaceOrderResult> {
  const claim = keyClaimSql(withKey
    ? { scope: { memberId: v.keyMemberId!, method: v.keyMethod!, path: v.keyPath!, key: v.key! }, fingerprint: v.keyFingerprint!, ttlMs: v.keyTtlMs! }
    : null)
  return sql<PlaceOrderResult>`
    with key_stored as (${claim.stored}),
    v as (
      select (t.ord - 1)::smallint as position, t.product_id, t.quantity
      from unnest(${v.productIds}::bigint[], ${v.quantities}::integer[]) with ordinality as t (product_id, quantity, ord)
    ),
    member_gate as materialized (
      select m.unpaid_check from members m
      where m.id = ${v.customerId}::bigint and ${v.unpaidLimit}::integer > 0 and not exists (select from key_stored)
      for update
    ),
    unpaid as materialized (
      select g.unpaid_check = (select m.unpaid_check from members m where m.id = ${v.customerId}::bigint) as fresh,
        (select count(*) from orders o
          where o.customer_id = ${v.customerId}::bigint and o.status in ('PLACED', 'PENDING', 'CONFIRMED')
            and o.paid_amount = 0)::integer as held
      from member_gate g
    ),
    locked as materialized (
      select p.id, p.name, p.price, p.stock_quantity, p.status from products p
      where p.id = any (${v.productIds}::bigint[]) and not exists (select from key_stored)
        and (select count(*) from member_gate) >= 0
      order by p.id
      for no key update
    ),
    checked as materialized (
      select v.position, v.product_id, v.quantity, l.name as product_name, l.price as unit_price,
        l.price::numeric * v.quantity as line_total, l.status, l.stock_quantity
      from v left join locked l on l.id = v.product_id
    ),
    verdict as materialized (
      select
        not ${v.checkCustomer}::boolean or exists (select from members m where m.id = ${v.customerId}::bigint) as customer_known,
        bool_and(coalesce(c.status = 'ACTIVE', false)) as all_active,
        bool_and(coalesce(c.stock_quantity >= c.quantity, false)) as in_stock,
        sum(c.line_total) <= ${sql.lit(Number.MAX_SAFE_INTEGER)} as total_fits,
        sum(c.line_total) as total_amount,
        (select u.fresh from unpaid u) as limit_fresh,
        (select u.held from unpaid u) as unpaid_held,
        coalesce((select u.fresh and u.held < ${v.unpaidLimit}::integer from unpaid u), true) as within_limit
      from checked c
      where not exists (select from key_stored)
      having count(*) > 0
    ),
    new_order as materialized (
      select nextval(pg_get_serial_sequence('orders', 'id')) as id, now()::timestamptz(3) as at, total_amount::bigint as total_amount
      from verdict where customer_known and all_active and in_stock and total_fits and within_limit
    ),
    answer as materialized (
      select ${v.answerStatus}::integer as status,
        jsonb_build_object(
          'orderId', n.id, 'customerId', ${v.customerId}::bigint, 'status', 'PLACED', 'items', ${checkedItems},
          'totalAmount', n.total_amount, 'currency', ${v.currency}::text,
          'shippingAddress', ${v.shippingAddress}::text, 'memo', ${v.memo}::text, 'paymentId', null,
          'payments', '[]'::jsonb, 'paidAmount', 0, 'refundedAmount', 0, 'balanceDue', n.total_amount, 'paymentStatus', 'UNPAID',
          'fulfillmentStatus', 'UNFULFILLED', 'fulfillments', '[]'::jsonb,
          'version', 1, 'allowedActions', ${v.allowedActions}::jsonb,
          'createdAt', ${isoTime(sql`n.at`)}, 'updatedAt', ${isoTime(sql`n.at`)}) as body,
        replace(${v.location}::text, '{id}', n.id::text) as location
      from new_order n
    ),
    key_claim as (${claim.claim}),
    o as (
      insert into orders (id, customer_id, status, total_amount, currency, item_count, shipping_address, memo,
        reserved_until, event_sequence, created_at, updated_at)
      overriding system value
      select n.id, ${v.customerId}::bigint, 'PLACED', n.total_amount, ${v.currency}::text, ${v.itemCount}::integer,
        ${v.shippingAddress}::text, ${v.memo}::text,
        case when ${v.reservationMs}::bigint > 0 then n.at + ${v.reservationMs}::bigint * interval '1 millisecond' end,
        1, n.at, n.at
      from new_order n
      where exists (select from key_claim)
      returning *
    ),
    stock as (
      update products p set stock_quantity = p.stock_quantity - c.quantity, updated_at = now()
      from checked c where p.id = c.product_id and exists (select from o)
    ),
    items as (
      insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
      select o.id, c.position, c.product_id, c.product_name, c.quantity, c.unit_price, c.line_total::bigint from o, checked c
    ),
    history as (
      insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role)
      select o.id, null, 'PLACED', 'create', ${v.actorId}::bigint, ${v.actorRole}::text from o
    ),
    gate_bump as (
      update members m set unpaid_check = m.unpaid_check + 1
      where m.id = ${v.customerId}::bigint and ${v.unpaidLimit}::integer > 0 and exists (select from o)
    ),
    ${outboxWrites([{ type: 'order.placed' }], checkedItems)}
    select
      (select to_jsonb(k) from key_stored k) as stored,
      exists (select from new_order) as checks_passed,
      (select jsonb_build_object('status', a.status, 'body', a.body, 'location', a.location) from answer a where exists (select from o)) as answer,
      (select customer_known from verdict where not exists (select from new_order)) as customer_known,
      (select total_fits from verdict where not exists (select from new_order)) as total_fits,
      (select limit_fresh from verdict where not exists (select from new_order)) as limit_fresh,
      (select unpaid_held from verdict where not exists (select from new_order)) as unpaid_held,
      (select jsonb_agg(jsonb_build_object('status', c.status, 'stock', c.stock_quantity) order by c.position)
        from checked c where exists (select from verdict) and not exists (select from new_order)) as products`
}

/** The create's two statements, each built and compiled on its first run. */
const placeOrderWithKey = new StatementOnce<PlaceOrderValues, PlaceOrderResult>(v => placeOrderSql(v, true))
const placeOrderWithoutKey = new StatementOnce<PlaceOrderValues, PlaceOrderResult>(v => placeOrderSql(v, false))

/**
 * Gives an order's reserved stock back, locking the products in id order. A stock an admin has set
 * near the largest a product may hold stops there: a cancel must not fail on it.
 */
export async function releaseStock (trx: Tx, orderId: number): Promise<void> {
  await sql`
    select p.id from products p
    where p.id in (select product_id from order_items where order_id = ${orderId})
    order by p.id for no key update`.execute(trx)
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
 * Writes the new state, bumps the version, stores the order's money as its payments now have it
 * (a confirm, cancel, delete or expiry moves payments before this statement), records the history
 * entry and the change's events: one statement. `events` are announced in the order given (a
 * payment's event before its order's).
 */
/** The record a history entry names (CONTRACT §15.2–§15.4). */
export interface HistoryRefs {
  editId?: number
  fulfillmentId?: number
  returnId?: number
}

export async function updateOrder (
  trx: Tx,
  order: OrderRow,
  change: OrderChange,
  history: { action: OrderAction, actor: { id: number, role: Role } | null, refs?: HistoryRefs },
  events: readonly Announcement[]
): Promise<OrderWithItems> {
  const { rows } = await sql<OrderWithItems>`
    with o as (
      update orders set status = ${change.status}, memo = ${change.memo}, shipping_address = ${change.shippingAddress},
        payment_id = ${change.paymentId}, version = version + 1, updated_at = now(),
        event_sequence = event_sequence + ${events.length}::integer, ${storeMoney}
      from ${moneyOf(order.id)} m
      where id = ${order.id}
      returning orders.*
    ),
    history as (
      insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role, edit_id, fulfillment_id, return_id)
      select o.id, ${order.status}, ${change.status}, ${history.action}, ${history.actor?.id ?? null}::bigint, ${history.actor?.role ?? null}::text,
        ${history.refs?.editId ?? null}::bigint, ${history.refs?.fulfillmentId ?? null}::bigint, ${history.refs?.returnId ?? null}::bigint from o
    )${events.length > 0 ? sql`, ${outboxWrites(events)}` : sql``}
    select o.*, coalesce(${storedItems}, '[]'::jsonb) as items, ${paymentsJson('o')} as payments, ${fulfillmentsJson('o')} as fulfillments from o`.execute(trx)
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
  /** The stored payment status (CONTRACT §15.5), served by orders_payment_status_created_idx. */
  paymentStatuses?: readonly OrderPaymentStatus[]
  /** The stored fulfilment status (CONTRACT §15.5), served by orders_fulfillment_status_created_idx. */
  fulfillmentStatuses?: readonly OrderFulfillmentStatus[]
  /** Whether a return is REQUESTED (CONTRACT §15.5); true is served by orders_open_return_created_idx. */
  hasOpenReturn?: boolean
}

/** Column names are qualified: the export joins members and payments, which have a status too. */
export function orderConditions (eb: ExpressionBuilder<Database, 'orders'>, filter: OrderFilter): Expression<SqlBool> {
  const conditions: Array<Expression<SqlBool>> = []
  if (filter.customerId !== undefined) conditions.push(eb('orders.customer_id', '=', filter.customerId))
  // A literal, not a parameter: only then can a prepared statement's generic plan prove that it
  // matches orders_customer_created_idx's predicate (status <> 'DELETED') and use that index.
  if (!filter.includeDeleted) conditions.push(eb('orders.status', '<>', sql.lit('DELETED')))
  if (filter.statuses) conditions.push(eb('orders.status', 'in', filter.statuses))
  if (filter.paymentStatuses) conditions.push(eb('orders.payment_status', 'in', filter.paymentStatuses))
  if (filter.fulfillmentStatuses) conditions.push(eb('orders.fulfillment_status', 'in', filter.fulfillmentStatuses))
  // A literal, as the status above: a generic plan then still matches the partial index's predicate.
  if (filter.hasOpenReturn !== undefined) conditions.push(eb('orders.has_open_return', '=', sql.lit(filter.hasOpenReturn)))
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

/** The columns a summary shows (`toOrderSummary`): all that a list selects. */
const SUMMARY_COLUMNS = [
  'id', 'customer_id', 'status', 'item_count', 'total_amount', 'currency', 'paid_amount', 'refunded_amount', 'credited_amount',
  'payment_status', 'fulfillment_status', 'created_at',
] as const

/** A list's row: mapper.ts's `OrderSummaryRow` (named here too: mapper.ts imports this file). */
type OrderSummaryRow = Pick<OrderRow, typeof SUMMARY_COLUMNS[number]>

/** One reader per handle and page size: only first pages of the same size share a statement. */
const firstPageReaders = new WeakMap<Db, Map<number, (customerId: string) => Promise<OrderSummaryRow[] | undefined>>>()

/**
 * The first pages of these customers (bigint text), `limit` rows each, by customer: one statement,
 * each customer's page the same walk of orders_customer_created_idx as a list of one's own (the
 * status predicate a literal, so that a generic plan still matches the index's).
 */
async function readFirstPages (db: Db, customerIds: string[], limit: number): Promise<Map<string, OrderSummaryRow[]>> {
  const { rows } = await sql<OrderSummaryRow>`
    select o.id, o.customer_id, o.status, o.item_count, o.total_amount, o.currency, o.paid_amount, o.refunded_amount,
      o.credited_amount, o.payment_status, o.fulfillment_status, o.created_at
    from unnest(${customerIds}::bigint[]) as c (customer_id)
    cross join lateral (
      select orders.id, orders.customer_id, orders.status, orders.item_count, orders.total_amount, orders.currency,
        orders.paid_amount, orders.refunded_amount, orders.credited_amount, orders.payment_status, orders.fulfillment_status,
        orders.created_at
      from orders
      where orders.customer_id = c.customer_id and orders.status <> 'DELETED'
      order by orders.created_at desc, orders.id desc
      limit ${limit}) o
    order by o.customer_id, o.created_at desc, o.id desc`.execute(db)
  const pages = new Map<string, OrderSummaryRow[]>(customerIds.map(id => [id, []]))
  for (const row of rows) pages.get(String(row.customer_id))!.push(row)
  return pages
}

/**
 * A customer's orders, newest first, soft-deleted ones excluded; served by orders_customer_created_idx.
 * `after` is a keyset position: rows strictly after it in (created_at desc, id desc) order.
 * The plain first page (no filter, cursor or offset), the common case, is shared: the first pages
 * of one size asked for in the same turn of the event loop are read with one statement
 * (`coalesce`, as `findOrder`; measured in bench/RESULTS.md). Every other list, and any list in a
 * transaction, runs its own. Rows are read-only: callers asking for the same page get the same array.
 */
export function listOrders (
  db: Db, filter: OrderFilter & { customerId: number, after?: KeysetPosition, offset?: number, limit: number }
): Promise<OrderSummaryRow[]> {
  const plainFirstPage = filter.after === undefined && (filter.offset ?? 0) === 0 && filter.statuses === undefined &&
    filter.createdFrom === undefined && filter.createdTo === undefined && filter.minTotal === undefined &&
    filter.maxTotal === undefined && filter.productId === undefined
  if (plainFirstPage && !db.isTransaction) {
    let readers = firstPageReaders.get(db)
    if (!readers) {
      readers = new Map()
      firstPageReaders.set(db, readers)
    }
    let read = readers.get(filter.limit)
    if (!read) {
      const limit = filter.limit
      read = coalesce(customerIds => readFirstPages(db, customerIds, limit))
      readers.set(limit, read)
    }
    return read(String(filter.customerId)).then(rows => rows ?? [])
  }
  return db.selectFrom('orders').select(SUMMARY_COLUMNS)
    .where(eb => orderConditions(eb, { ...filter, includeDeleted: false }))
    .$if(filter.after !== undefined, qb => qb.where(eb =>
      eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(filter.after!.createdAt, filter.after!.id))))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(filter.limit)
    .offset(filter.offset ?? 0)
    .execute()
}

export type OrderSortColumn = 'created_at' | 'total_amount' | 'status' | 'updated_at'

/**
 * The admin list: one page in the requested order, and how many orders match in all. One statement
 * on one connection: the count, and the page joined to it laterally (each with its own index scan);
 * a page past the end is one row of nulls with the count. The page is ordered again outside.
 */
export async function pageOrders (
  db: Db, filter: OrderFilter & { sort: Sort<OrderSortColumn>, offset: number, limit: number }
): Promise<{ rows: OrderSummaryRow[], total: number }> {
  const { column, direction } = filter.sort
  const total = db.selectFrom('orders').where(eb => orderConditions(eb, filter))
    .select(eb => eb.fn.countAll<string>().as('n'))
  const page = db.selectFrom('orders').where(eb => orderConditions(eb, filter))
    .select(SUMMARY_COLUMNS).$if(column === 'updated_at', qb => qb.select('updated_at'))
    .orderBy(column, direction).orderBy('id', direction)
    .limit(filter.limit).offset(filter.offset)
  const found = await db.selectFrom(total.as('total'))
    .leftJoinLateral(page.as('page'), join => join.onTrue())
    .select(['total.n', ...SUMMARY_COLUMNS.map(name => `page.${name}` as const)])
    .orderBy(`page.${column}`, direction).orderBy('page.id', direction)
    .execute()
  return {
    rows: (found[0]?.id === null ? [] : found) as OrderSummaryRow[],
    total: Number(found[0]?.n ?? 0),
  }
}
