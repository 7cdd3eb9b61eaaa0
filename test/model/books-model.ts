import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import type { Event } from '../../src/events/schemas.js'
import type { OrderDetail } from '../../src/orders/schemas.js'
import { ADMIN, feedSettled, successData, type Api, type Member } from '../helper.js'

/**
 * The model of the books for the model-based test (test/model/books.test.ts, CONTRACT §15): what the
 * service should hold after any sequence of commands, kept by the test alone, and the checks that
 * read the service through its API and compare. The commands live in ./commands.ts.
 */

export type OrderStatus = 'PLACED' | 'CONFIRMED' | 'DELIVERED' | 'CANCELLED' | 'DELETED'
export type PaymentStatus = 'PENDING' | 'FAILED' | 'COMPLETED' | 'PARTIALLY_REFUNDED' | 'REFUNDED' | 'CANCELLED'
export type RefundReason = 'GOODWILL' | 'EDIT' | 'RETURN' | 'CANCEL'

export interface ModelPayment {
  id: number
  amount: number
  status: PaymentStatus
  /** Every refund of this payment, oldest first. */
  refunds: Array<{ amount: number, reason: RefundReason }>
}

export interface ModelLine {
  /** Index into Model.products. */
  product: number
  quantity: number
  unitPrice: number
  /** In fulfilments that are not CANCELLED. */
  shipped: number
  /** Came back in received returns (§15.4), and how much of that went back into stock. */
  returned: number
  restocked: number
}

export type FulfilmentStatus = 'SHIPPED' | 'DELIVERED' | 'CANCELLED'
/** One shipment (CONTRACT §15.3): what it holds, by product index. */
export interface ModelFulfilment {
  id: number
  status: FulfilmentStatus
  items: Array<{ product: number, quantity: number }>
}

export type ReturnStatus = 'REQUESTED' | 'RECEIVED' | 'REJECTED' | 'CANCELLED'
/** One return (CONTRACT §15.4): the lines asked for, and once RECEIVED what came back and the refund. */
export interface ModelReturn {
  id: number
  status: ReturnStatus
  items: Array<{ product: number, quantity: number, received: number | null, restock: boolean | null }>
  refundAmount: number | null
}

export interface ModelOrder {
  id: number
  /** Index into Real.members. */
  owner: number
  status: OrderStatus
  lines: ModelLine[]
  /** Oldest first, as the detail lists them. */
  payments: ModelPayment[]
  /** The types of the events the order should have announced, in sequence order. */
  events: string[]
  /** Bumped by every change of the order itself (not by a change of a payment alone). */
  version: number
  /** Oldest first, as the detail lists them. */
  fulfilments: ModelFulfilment[]
  /** Oldest first. */
  returns: ModelReturn[]
}

export interface ProductSpec { price: number, stock: number }

export interface Model {
  /** The products of this run, with their price and their stock when the run began. */
  products: ProductSpec[]
  /** Every order this run placed, in placement order. */
  orders: ModelOrder[]
  /** MAX_UNPAID_ORDERS of the app under test. */
  unpaidLimit: number
}

/** The running service and who talks to it. */
export interface Real {
  api: Api
  admin: Member
  members: Member[]
  /** The product ids of this run, by Model.products index. */
  productIds: number[]
  /** The feed as read so far in this run, and where to go on reading it. */
  feed: { events: Event[], cursor?: string }
}

// ---- Figures derived from the model (CONTRACT §15.1, §15.7) ----

const CAPTURED: readonly PaymentStatus[] = ['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED']
export const isCaptured = (p: ModelPayment) => CAPTURED.includes(p.status)
/** A payment that can still be refunded (CONTRACT §6). */
export const isRefundable = (p: ModelPayment) => p.status === 'COMPLETED' || p.status === 'PARTIALLY_REFUNDED'
export const isOpen = (p: ModelPayment) => p.status === 'PENDING' || p.status === 'FAILED'
export const refundedOf = (p: ModelPayment) => sum(p.refunds.map(r => r.amount))
export const leftOf = (p: ModelPayment) => p.amount - refundedOf(p)

export const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
export const totalOf = (o: ModelOrder) => sum(o.lines.map(l => l.quantity * l.unitPrice))
export const paidOf = (o: ModelOrder) => sum(o.payments.filter(isCaptured).map(p => p.amount))
export const refundedOfOrder = (o: ModelOrder) => sum(o.payments.map(refundedOf))
/** GOODWILL and RETURN refunds lower what is owed; EDIT and CANCEL refunds do not. */
export const creditedOf = (o: ModelOrder) =>
  sum(o.payments.flatMap(p => p.refunds).filter(r => r.reason === 'GOODWILL' || r.reason === 'RETURN').map(r => r.amount))
/** totalAmount − credited − (paid − refunded), whatever the status. */
export const owedOf = (o: ModelOrder) => totalOf(o) - creditedOf(o) - (paidOf(o) - refundedOfOrder(o))
export const hasEnded = (o: ModelOrder) => o.status === 'CANCELLED' || o.status === 'DELETED'
export const balanceDueOf = (o: ModelOrder) => hasEnded(o) ? 0 : owedOf(o)

/** CONTRACT §15.7's order of decision. */
export function paymentStatusOf (o: ModelOrder): string {
  const paid = paidOf(o)
  const refunded = refundedOfOrder(o)
  if (paid === 0) return 'UNPAID'
  if (refunded >= paid) return 'REFUNDED'
  if (owedOf(o) > 0) return 'PARTIALLY_PAID'
  if (refunded > 0) return 'PARTIALLY_REFUNDED'
  return 'PAID'
}

/**
 * Why the order may not be delivered or shipped now (CONTRACT §15.1, §15.7: balanceDue 0 and
 * paymentStatus PAID or PARTIALLY_REFUNDED), as the service words it; undefined when it may.
 */
export function deliveryBlockerOf (o: ModelOrder, what: 'delivery' | 'shipping' = 'delivery'): string | undefined {
  const status = paymentStatusOf(o)
  if (owedOf(o) > 0) return `its balanceDue is ${balanceDueOf(o)} (paymentStatus ${status}); ${what} needs it paid in full`
  if (status !== 'PAID' && status !== 'PARTIALLY_REFUNDED') return `its paymentStatus is ${status}; ${what} needs PAID or PARTIALLY_REFUNDED`
  return undefined
}

/** What captured money is left to refund, over all payments (CONTRACT §15.4's "still refundable"). */
export const refundableOf = (o: ModelOrder) => sum(o.payments.filter(isRefundable).map(leftOf))

/**
 * A refund of `amount` across the order's payments, newest captured first (CONTRACT §15.1, §15.7):
 * one `payment.refunded` per payment touched; returns the first payment touched (null for 0).
 */
export function refundAcross (o: ModelOrder, amount: number, reason: RefundReason): number | null {
  let left = amount
  let first: number | null = null
  for (const p of o.payments.toReversed()) {
    if (left === 0) break
    if (!isRefundable(p)) continue
    const part = Math.min(left, leftOf(p))
    p.refunds.push({ amount: part, reason })
    p.status = leftOf(p) === 0 ? 'REFUNDED' : 'PARTIALLY_REFUNDED'
    o.events.push('payment.refunded')
    first ??= p.id
    left -= part
  }
  assert.equal(left, 0, `order ${o.id}: the model refunds ${amount} but only ${amount - left} is refundable`)
  return first
}

/** Of product `index` on the order: delivered (in DELIVERED shipments) and in open (REQUESTED) returns. */
export const deliveredOf = (o: ModelOrder, index: number) =>
  sum(o.fulfilments.filter(f => f.status === 'DELIVERED').flatMap(f => f.items).filter(i => i.product === index).map(i => i.quantity))
export const inOpenReturnsOf = (o: ModelOrder, index: number) =>
  sum(o.returns.filter(r => r.status === 'REQUESTED').flatMap(r => r.items).filter(i => i.product === index).map(i => i.quantity))
/** What of the line may still be asked back (CONTRACT §15.4): delivered − returned − in open returns. */
export const returnableOf = (o: ModelOrder, line: ModelLine) => deliveredOf(o, line.product) - line.returned - inOpenReturnsOf(o, line.product)

/** Goods left (CONTRACT §15.3): a CONFIRMED order that is not UNFULFILLED can no longer be cancelled or deleted. */
export const hasShipped = (o: ModelOrder) => o.status === 'CONFIRMED' && fulfillmentStatusOf(o) !== 'UNFULFILLED'

export function fulfillmentStatusOf (o: ModelOrder): string {
  if (o.lines.every(l => l.shipped === 0)) return 'UNFULFILLED'
  return o.lines.every(l => l.shipped >= l.quantity) ? 'FULFILLED' : 'PARTIALLY_FULFILLED'
}

/** Orders in these statuses hold their unshipped lines' stock. */
export const holdsStock = (o: ModelOrder) => o.status === 'PLACED' || o.status === 'CONFIRMED'

/** Stock held by open orders for product `index`: their lines not yet shipped. */
export const reservedOf = (m: Model, index: number) =>
  sum(m.orders.filter(holdsStock).flatMap(o => o.lines).filter(l => l.product === index).map(l => l.quantity - l.shipped))
export const shippedOf = (m: Model, index: number) =>
  sum(m.orders.flatMap(o => o.lines).filter(l => l.product === index).map(l => l.shipped))
export const restockedOf = (m: Model, index: number) =>
  sum(m.orders.flatMap(o => o.lines).filter(l => l.product === index).map(l => l.restocked))
/** Conservation of stock: initial = now + reserved + shipped − restocked. */
export const stockOf = (m: Model, index: number) =>
  m.products[index]!.stock - reservedOf(m, index) - shippedOf(m, index) + restockedOf(m, index)

/** Orders of member `owner` that reserve stock with nothing captured (CONTRACT §18's MAX_UNPAID_ORDERS). */
export const unpaidHeldBy = (m: Model, owner: number) =>
  m.orders.filter(o => o.owner === owner && holdsStock(o) && paidOf(o) === 0).length

/**
 * A command names an order by a number; it means the `ref`-th (modulo) of the orders it applies to
 * now, so a command stays meaningful while fast-check shrinks the sequence around it.
 */
export function pick (m: Readonly<Model>, ref: number, applies: (o: ModelOrder) => boolean = () => true): ModelOrder | undefined {
  const candidates = m.orders.filter(applies)
  return candidates.length === 0 ? undefined : candidates[ref % candidates.length]
}

/**
 * Cancel and delete of an open order end its payments, newest first (CONTRACT §3, §15.1): captured
 * money is refunded (reason CANCEL, not credited), an open payment is CANCELLED; each announces its
 * event before the order's.
 */
export function settlePayments (o: ModelOrder): void {
  for (const p of o.payments.toReversed()) {
    if (isRefundable(p)) {
      p.refunds.push({ amount: leftOf(p), reason: 'CANCEL' })
      p.status = 'REFUNDED'
      o.events.push('payment.refunded')
    } else if (isOpen(p)) {
      p.status = 'CANCELLED'
      o.events.push('payment.cancelled')
    }
  }
}

// ---- The checks, through the API, after every step ----

const get = (r: Real, url: string) => r.api.inject({ method: 'GET', url, headers: r.admin.headers })

const linePosition = (o: ModelOrder, product: number) => {
  const at = o.lines.findIndex(l => l.product === product)
  return at === -1 ? o.lines.length : at
}

/** The order as the model says an admin reads it (the fields the model knows). */
export function expectedDetail (m: Model, r: Real, o: ModelOrder) {
  return {
    orderId: o.id,
    customerId: r.members[o.owner]!.id,
    status: o.status,
    items: o.lines.map(l => ({
      productId: r.productIds[l.product]!,
      quantity: l.quantity,
      unitPrice: l.unitPrice,
      lineTotal: l.quantity * l.unitPrice,
      fulfilledQuantity: l.shipped,
      returnedQuantity: l.returned,
    })),
    fulfillments: o.fulfilments.map(f => ({
      fulfillmentId: f.id,
      status: f.status,
      // What the shipment holds, in the order's line order (a line the order no longer has, last).
      items: f.items
        .toSorted((a, b) => linePosition(o, a.product) - linePosition(o, b.product) || r.productIds[a.product]! - r.productIds[b.product]!)
        .map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity })),
    })),
    totalAmount: totalOf(o),
    paymentId: o.payments[0]?.id ?? null,
    payments: o.payments.map(p => ({ paymentId: p.id, amount: p.amount, refundedAmount: refundedOf(p), status: p.status })),
    paidAmount: paidOf(o),
    refundedAmount: refundedOfOrder(o),
    balanceDue: balanceDueOf(o),
    paymentStatus: paymentStatusOf(o),
    fulfillmentStatus: fulfillmentStatusOf(o),
    version: o.version,
  }
}

const knownFields = (detail: OrderDetail) => ({
  orderId: detail.orderId,
  customerId: detail.customerId,
  status: detail.status,
  items: detail.items.map(({ productName: _name, ...item }) => item),
  fulfillments: detail.fulfillments.map(f => ({ fulfillmentId: f.fulfillmentId, status: f.status, items: f.items })),
  totalAmount: detail.totalAmount,
  paymentId: detail.paymentId,
  payments: detail.payments,
  paidAmount: detail.paidAmount,
  refundedAmount: detail.refundedAmount,
  balanceDue: detail.balanceDue,
  paymentStatus: detail.paymentStatus,
  fulfillmentStatus: detail.fulfillmentStatus,
  version: detail.version,
})

/**
 * CONTRACT §15.1 and §15.7 from what the API shows alone: the books balance on every confirmed
 * order that has not ended; nothing is due on one that has; no payment gives back more than it took.
 */
function assertBooksBalance (detail: OrderDetail, where: string): void {
  for (const p of detail.payments) {
    assert.ok(p.refundedAmount >= 0 && p.refundedAmount <= p.amount, `${where}: payment ${p.paymentId} refunded ${p.refundedAmount} of ${p.amount}`)
    if (p.refundedAmount > 0) assert.ok(['PARTIALLY_REFUNDED', 'REFUNDED'].includes(p.status), `${where}: payment ${p.paymentId} refunded while ${p.status}`)
  }
  const captured = detail.payments.filter(p => CAPTURED.includes(p.status as PaymentStatus))
  assert.equal(detail.paidAmount, sum(captured.map(p => p.amount)), `${where}: paidAmount is what the payments captured`)
  assert.equal(detail.refundedAmount, sum(detail.payments.map(p => p.refundedAmount)), `${where}: refundedAmount is what the payments gave back`)
  assert.ok(detail.refundedAmount <= detail.paidAmount, `${where}: refunded ${detail.refundedAmount}, more than the ${detail.paidAmount} captured`)
  if (detail.status === 'CANCELLED' || detail.status === 'DELETED') {
    assert.equal(detail.balanceDue, 0, `${where}: nothing is due on a ${detail.status} order`)
    assert.deepEqual(detail.payments.filter(p => p.status === 'PENDING' || p.status === 'FAILED'), [], `${where}: an ended order has no open payment`)
  } else if (detail.payments.length === 0) {
    assert.equal(detail.balanceDue, detail.totalAmount, `${where}: before confirm the whole total is due`)
  } else {
    const open = sum(detail.payments.filter(p => p.status === 'PENDING' || p.status === 'FAILED').map(p => p.amount))
    assert.equal(detail.balanceDue, open, `${where}: balanceDue equals the open (PENDING, FAILED) payments`)
    assert.ok(detail.balanceDue >= 0, `${where}: balanceDue is never negative`)
  }
}

/**
 * Every event of this run, oldest first, read through the feed once it has settled: what is new
 * since the last read, following nextCursor as a tailing consumer does (so each event must come
 * exactly once).
 */
async function readFeed (r: Real): Promise<Event[]> {
  await feedSettled(r.api.app)
  for (;;) {
    const slice = successData<{ content: Event[], hasNext: boolean, nextCursor: string }>(
      await r.api.get('/api/v1/admin/events', { size: 100, ...(r.feed.cursor ? { cursor: r.feed.cursor } : {}) }, r.admin))
    r.feed.events.push(...slice.content)
    r.feed.cursor = slice.nextCursor
    if (!slice.hasNext) return r.feed.events
  }
}

/** A return as the model has it, in the fields it knows. */
const expectedReturn = (r: Real, ret: ModelReturn) => ({
  returnId: ret.id,
  status: ret.status,
  items: ret.items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity, receivedQuantity: i.received, restock: i.restock })),
  refundAmount: ret.refundAmount,
})

interface ReturnRead {
  returnId: number
  status: string
  items: Array<{ productId: number, quantity: number, receivedQuantity: number | null, restock: boolean | null }>
  refundAmount: number | null
}

/**
 * After every step: each order as the model has it (status, lines with what shipped and came back,
 * money, payments, shipments, version) and its returns; the books-balance identities from the API's
 * own figures (CONTRACT §15.1: balanceDue = totalAmount − credited − (paid − refunded), with credited
 * summed from the feed's GOODWILL and RETURN refunds, and = the open payments); every refund in the
 * feed as the model has it (payment, amount, reason); stock conserved per product; and each order's
 * events numbered 1..n without gaps, exactly those the model predicts, the last showing the order as
 * it is now.
 */
export async function checkBooks (m: Model, r: Real, step: string): Promise<void> {
  const details = new Map<number, OrderDetail>()
  for (const o of m.orders) {
    const where = `after ${step}, order ${o.id}`
    const detail = successData<OrderDetail>(await get(r, `/api/v1/admin/orders/${o.id}`))
    assert.deepEqual(knownFields(detail), expectedDetail(m, r, o), `${where}: the order as the model has it`)
    assertBooksBalance(detail, where)
    details.set(o.id, detail)
    // The returns, read where the model has any (a return it does not know would show as an event).
    if (o.returns.length > 0) {
      const returns = successData<ReturnRead[]>(await get(r, `/api/v1/orders/${o.id}/returns`))
      assert.deepEqual(returns.map(({ returnId, status, items, refundAmount }) => ({
        returnId, status, items: items.map(({ productId, quantity, receivedQuantity, restock }) => ({ productId, quantity, receivedQuantity, restock })), refundAmount,
      })), o.returns.map(ret => expectedReturn(r, ret)), `${where}: the returns as the model has them`)
    }
  }

  const products = successData<{ content: Array<{ productId: number, stockQuantity: number }> }>(
    await r.api.get('/api/v1/admin/products', { size: 100 }, r.admin)).content
  assert.deepEqual(products.map(p => p.productId).sort((a, b) => a - b), r.productIds.toSorted((a, b) => a - b), `after ${step}: this run's products`)
  for (const [index, productId] of r.productIds.entries()) {
    const product = products.find(p => p.productId === productId)!
    assert.equal(product.stockQuantity, stockOf(m, index),
      `after ${step}, product ${productId}: initial ${m.products[index]!.stock} = stock ${product.stockQuantity} + reserved ${reservedOf(m, index)} + shipped ${shippedOf(m, index)} − restocked ${restockedOf(m, index)}`)
    assert.ok(product.stockQuantity >= 0, `after ${step}, product ${productId}: stock never negative`)
  }

  const byOrder = new Map<number, Event[]>()
  for (const event of await readFeed(r)) byOrder.set(event.orderId, [...(byOrder.get(event.orderId) ?? []), event])
  assert.deepEqual([...byOrder.keys()].filter(id => !m.orders.some(o => o.id === id)), [], `after ${step}: events only for this run's orders`)
  for (const o of m.orders) {
    const where = `after ${step}, order ${o.id}`
    const events = byOrder.get(o.id) ?? []
    assert.deepEqual(events.map(e => e.sequence), events.map((_, i) => i + 1), `${where}: sequence 1..n without gaps`)
    assert.deepEqual(events.map(e => e.type), o.events, `${where}: one event per change, in order`)
    // Every refund, by payment, as the model has it; and the identity of §15.1 with what the feed says was credited.
    const refunds = events.filter(e => e.type === 'payment.refunded')
    for (const p of o.payments) {
      assert.deepEqual(refunds.filter(e => e.data.payment?.paymentId === p.id).map(e => e.data.refund && { amount: e.data.refund.amount, reason: e.data.refund.reason }),
        p.refunds, `${where}: the refunds of payment ${p.id}`)
    }
    const detail = details.get(o.id)!
    if (detail.status !== 'CANCELLED' && detail.status !== 'DELETED') {
      const credited = sum(refunds.map(e => e.data.refund!).filter(f => f.reason === 'GOODWILL' || f.reason === 'RETURN').map(f => f.amount))
      assert.equal(detail.balanceDue, detail.totalAmount - credited - (detail.paidAmount - detail.refundedAmount),
        `${where}: balanceDue = totalAmount ${detail.totalAmount} − credited ${credited} − (paid ${detail.paidAmount} − refunded ${detail.refundedAmount})`)
    }
    // The last event carries the order as its last change committed it, which is how it is now.
    const { allowedActions: _actions, fulfillments: _shipments, ...now } = detail
    assert.deepEqual(events.at(-1)?.data.order, now, `${where}: the last event shows the order as it is`)
  }
}

/**
 * The tables one run fills, children first: orders and products and every table that refers to
 * them, however deep (order_items, payments, payment_refunds, events, webhook_deliveries,
 * fulfilments, …, and the tables later issues add), read from the foreign keys once per database.
 */
export async function runTables (api: Api): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    with recursive refs (tbl, depth) as (
      select c.oid::regclass, 0 from pg_class c where c.oid in ('orders'::regclass, 'products'::regclass)
      union all
      select con.conrelid::regclass, refs.depth + 1 from pg_constraint con join refs on con.confrelid = refs.tbl
      where con.contype = 'f' and con.conrelid <> con.confrelid and refs.depth < 20
    )
    select tbl::text as name from refs group by tbl order by max(depth) desc, tbl::text`.execute(api.app.db)
  return [...rows.map(row => row.name), 'idempotency_keys']
}

/**
 * Empties what one run leaves (`tables`, from runTables) and keeps the members and their sessions,
 * which are costly to make. DELETE of the few rows a run wrote is much quicker than TRUNCATE on
 * PostgreSQL, which makes new files for every table it empties.
 */
export async function resetBooks (api: Api, tables: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await api.app.db.transaction().execute(async (trx) => {
        for (const table of tables) await sql`delete from ${sql.table(table)}`.execute(trx)
      })
      return
    } catch (error) {
      // The webhook dispatcher or the sweep may hold a lock taken in the other order: try again.
      if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error
    }
  }
}

/** Everything a run needs that outlives resets: the admin and two members, logged in once. */
export async function people (api: Api): Promise<Pick<Real, 'admin' | 'members'>> {
  const admin = await api.login(ADMIN.email, ADMIN.password)
  return { admin, members: [await api.member('alice'), await api.member('bob')] }
}

/** Asserts the status, and on success returns the envelope's data; the message carries the body. */
export function expectStatus (res: LightMyRequestResponse, status: number, what: string): unknown {
  assert.equal(res.statusCode, status, `${what}: ${res.body}`)
  return status < 300 ? res.json().data : undefined
}
