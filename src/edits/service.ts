import type { Config } from '../config.js'
import type { Db, Tx } from '../db/schema.js'
import { ApiError, invalidParam, type InvalidParam } from '../errors.js'
import type { Announcement } from '../events/outbox.js'
import { isAdmin, type Principal } from '../http/access.js'
import type { KeyedOutcome, Outcome } from '../http/idempotency.js'
import { answerOnce } from '../idempotency/service.js'
import { etagOf } from '../orders/mapper.js'
import { lockOrder, updateOrder, type OrderWithItems } from '../orders/repository.js'
import type { OrderItem } from '../orders/schemas.js'
import { assertVisible, getOrder } from '../orders/service.js'
import type { PaymentProvider } from '../payments/provider.js'
import { insertPayment, lockOrderPayments, updatePayment } from '../payments/repository.js'
import { isCaptured } from '../payments/schemas.js'
import { refundAcross } from '../payments/service.js'
import type { PaymentRow } from '../payments/table.js'
import {
  findEdit, insertEdit, listEdits, lockProducts, moveStock, nextEditId, storeLines, toOrderEdit,
} from './repository.js'
import type { EditOrderBody, OrderEdit, SettlementKind } from './schemas.js'

/** What the caller sent besides the body. */
export interface EditRequest {
  /** The `If-Match` header, when sent. */
  ifMatch: string | undefined
  dryRun: boolean
  /** The idempotency key (header or body), when sent, and the path it is scoped to (CONTRACT §3: caller × method × path). */
  key: string | undefined
  keyPath: string
  /** The answer's status, and its `Location` (`{id}`, `{editId}` stand for the order's and the edit's ids) when it applies the edit. */
  answerAs: { status: number, location: string | null }
}

/** The checks of an edit that need no database (CONTRACT §10): a product listed twice is 400. */
export function assertEditRequest (body: EditOrderBody): void {
  const firstIndex = new Map<number, number>()
  const duplicates: InvalidParam[] = []
  body.changes.forEach((change, index) => {
    const first = firstIndex.get(change.productId)
    if (first === undefined) firstIndex.set(change.productId, index)
    else duplicates.push({ field: `changes[${index}].productId`, message: `repeats changes[${first}].productId; list each product once` })
  })
  if (duplicates.length > 0) {
    throw new ApiError('VALIDATION_FAILED', 'Each product may appear only once in an edit.', { invalidParams: duplicates })
  }
}

/**
 * Edits an order (CONTRACT §15.2, §15.7) in one transaction, in this order of checks: the order is
 * visible (404) and the caller's (403); `If-Match` is sent (428); a key already answered replays its
 * answer (200, whatever the order became since; a different body under it is 422); `If-Match`
 * matches (412); the status allows the caller to edit (400); the changes (400 naming them); stock
 * (409). Locks: the order, its payments, then the products changed, by id. A dry run checks it all
 * and answers the edit as it would be, changing nothing and taking no key.
 */
export async function editOrder (
  db: Db, provider: PaymentProvider, config: Pick<Config, 'idempotencyTtlMs'>, principal: Principal, id: string,
  body: EditOrderBody, request: EditRequest
): Promise<KeyedOutcome<OrderEdit>> {
  return db.transaction().execute(async (trx) => {
    const order = await lockOrder(trx, id)
    assertVisible(order, principal, id)
    if (request.ifMatch === undefined || request.ifMatch.trim() === '*') {
      throw new ApiError('PRECONDITION_REQUIRED',
        `An edit needs If-Match with the order's ETag (now ${etagOf(order)}), so that it applies to the version it was made against.`)
    }
    const work = () => applyEdit(trx, provider, principal, order, body, request)
    if (request.dryRun) return { ...await work() as { status: number, body: OrderEdit }, replayed: false }
    const scope = { memberId: principal.memberId, method: 'POST', path: request.keyPath }
    return answerOnce(trx, { scope, key: request.key, body, ttlMs: config.idempotencyTtlMs }, work)
  })
}

/** The statuses an edit may start from, by who edits (CONTRACT §15.2, §15.7). */
function assertEditable (order: OrderWithItems, principal: Principal): void {
  if (order.status === 'PLACED' || order.status === 'PENDING') return
  if (order.status === 'CONFIRMED') {
    if (isAdmin(principal)) return
    throw new ApiError('INVALID_ORDER_STATUS', 'Cannot edit an order that is CONFIRMED: after confirmation only staff edit an order.')
  }
  throw new ApiError('INVALID_ORDER_STATUS', `Cannot edit an order that is ${order.status}.`)
}

function assertIfMatch (order: OrderWithItems, ifMatch: string): void {
  const tags = ifMatch.split(',').map(tag => tag.trim().replace(/^W\//, ''))
  if (!tags.includes(etagOf(order))) {
    throw new ApiError('PRECONDITION_FAILED', `If-Match does not match the order's current ETag ${etagOf(order)}; fetch it again.`)
  }
}

/** How the edit settles its difference, before anything is moved. */
interface SettlementPlan {
  kind: SettlementKind
  amount: number
  /** The open payment whose amount becomes `amount`, or which is cancelled (`null`). */
  adjust?: { payment: PaymentRow, amount: number | null }
  /** Captured money to refund, newest payment first. */
  refund?: number
  /** A new PENDING payment for this much. */
  open?: number
}

/**
 * The settlement of an edit that takes the order's total from `before` to `after` (CONTRACT §15.2,
 * §15.7; docs/decisions.md "Editing an order"): nothing confirmed, or the same total → NONE; nothing
 * captured → the open payment becomes the new total; money captured → an open payment (one an
 * earlier edit opened, not yet paid) takes the difference first, and what it cannot take is a new
 * payment (total rose) or a refund (total fell).
 */
function planSettlement (order: OrderWithItems, payments: PaymentRow[], before: number, after: number): SettlementPlan {
  const difference = after - before
  if (order.status !== 'CONFIRMED' || difference === 0) return { kind: 'NONE', amount: 0 }
  const open = payments.findLast(payment => payment.status === 'PENDING' || payment.status === 'FAILED')
  const captured = payments.some(payment => isCaptured(payment.status) || payment.status === 'REFUNDED')
  if (!captured || (open && open.amount + difference > 0)) {
    if (!open) throw new Error(`order ${order.id} is CONFIRMED with nothing captured and no open payment`)
    return { kind: 'PAYMENT_ADJUSTED', amount: Math.abs(difference), adjust: { payment: open, amount: open.amount + difference } }
  }
  if (difference > 0) return { kind: 'PAYMENT', amount: difference, open: difference }
  if (!open) return { kind: 'REFUND', amount: -difference, refund: -difference }
  // The total fell by at least what is still open: that payment is no longer needed, and the rest is refunded.
  const rest = -difference - open.amount
  if (rest === 0) return { kind: 'PAYMENT_ADJUSTED', amount: open.amount, adjust: { payment: open, amount: null } }
  return { kind: 'REFUND', amount: rest, adjust: { payment: open, amount: null }, refund: rest }
}

/** One line the edit changes: the request's index, and the line before (absent: a new line) and after. */
interface LineChange {
  index: number
  productId: number
  productName: string
  before: number
  after: number
  unitPrice: number
}

/**
 * The edit's work on the locked order, after the key: its checks, then (unless a dry run) the stock,
 * the lines, the settlement, the edit's row, and the order's update with its history entry and
 * events (the payments' first, then `order.edited`).
 */
async function applyEdit (
  trx: Tx, provider: PaymentProvider, principal: Principal, order: OrderWithItems, body: EditOrderBody, request: EditRequest
): Promise<Outcome<OrderEdit>> {
  assertIfMatch(order, request.ifMatch!)
  assertEditable(order, principal)
  if (order.reserved_until !== null && order.reserved_until.getTime() <= Date.now()) {
    throw new ApiError('INVALID_ORDER_STATUS',
      `Cannot edit an order that is ${order.status}: its stock reservation expired at ${order.reserved_until.toISOString()}.`)
  }
  const payments = await lockOrderPayments(trx, order.id)
  const products = await lockProducts(trx, body.changes.map(change => change.productId).toSorted((a, b) => a - b))

  // The changes, each against the order's line (if it has one) and the product (if it adds one).
  const lines = new Map(order.items.map(item => [item.productId, item]))
  const invalid: InvalidParam[] = []
  const changed: LineChange[] = []
  body.changes.forEach((change, index) => {
    const line = lines.get(change.productId)
    if (line) {
      if (change.quantity < line.fulfilledQuantity) {
        invalid.push({ field: `changes[${index}].quantity`, message: `must be at least ${line.fulfilledQuantity}, the quantity already shipped` })
      } else if (change.quantity !== line.quantity) {
        changed.push({ index, productId: line.productId, productName: line.productName, before: line.quantity, after: change.quantity, unitPrice: line.unitPrice })
      }
      return
    }
    if (change.quantity === 0) return // not on the order: nothing to remove
    const product = products.get(change.productId)
    if (!product || product.status !== 'ACTIVE') {
      invalid.push({ field: `changes[${index}].productId`, message: 'is not an active product' })
      return
    }
    changed.push({ index, productId: product.id, productName: product.name, before: 0, after: change.quantity, unitPrice: product.price })
  })
  if (invalid.length > 0) throw new ApiError('VALIDATION_FAILED', 'The request has invalid parameters.', { invalidParams: invalid })

  const shippingAddress = body.shippingAddress === undefined ? order.shipping_address : body.shippingAddress
  const shippingAddressChanged = shippingAddress !== order.shipping_address
  if (changed.length === 0 && !shippingAddressChanged) {
    throw invalidParam('changes', 'change nothing: every quantity is already as asked and the shipping address is unchanged')
  }
  const items = editedItems(order.items, changed)
  if (items.length === 0) throw invalidParam('changes', 'would leave the order without lines; cancel the order instead')
  if (items.length > 100) throw invalidParam('changes', `would leave the order with ${items.length} lines; an order has at most 100`)
  const totalAfter = items.reduce((sum, item) => sum + item.lineTotal, 0)
  if (!Number.isSafeInteger(totalAfter)) throw invalidParam('changes', 'the order total is too large')
  if (order.status === 'CONFIRMED' && totalAfter < order.credited_amount) {
    throw invalidParam('changes', `would make the total ${totalAfter}, less than the ${order.credited_amount} already credited to the customer`)
  }

  // More stock is reserved all or nothing; less is released.
  const taken = new Map(changed.map(line => [line.productId, line.after - line.before]))
  const short = changed.flatMap(line => {
    const stock = products.get(line.productId)!.stock_quantity
    const more = line.after - line.before
    return more > stock ? [`product ${line.productId}: ${more} more requested, ${stock} in stock`] : []
  })
  if (short.length > 0) throw new ApiError('INSUFFICIENT_STOCK', `Not enough stock, nothing was changed (${short.join('; ')}).`)

  const plan = planSettlement(order, payments, order.total_amount, totalAfter)
  const edit: Omit<OrderEdit, 'editId' | 'createdAt' | 'settlement'> = {
    orderId: order.id,
    fromVersion: order.version,
    toVersion: order.version + 1,
    changes: changed.toSorted((a, b) => a.index - b.index).map(line => ({
      productId: line.productId, productName: line.productName, quantityBefore: line.before, quantityAfter: line.after, unitPrice: line.unitPrice,
    })),
    shippingAddressChanged,
    totalBefore: order.total_amount,
    totalAfter,
    actorId: principal.memberId,
    actorRole: principal.role,
  }
  if (request.dryRun) {
    // A preview names the payment that would be adjusted or refunded from; a payment yet to be opened has no id.
    const paymentId = plan.refund ? newestRefundable(payments) : plan.adjust?.payment.id ?? null
    return {
      status: request.answerAs.status,
      body: { editId: null, ...edit, settlement: { kind: plan.kind, amount: plan.amount, paymentId }, createdAt: new Date().toISOString() },
    }
  }

  const editId = await nextEditId(trx)
  await moveStock(trx, taken)
  await storeLines(trx, order.id, items, totalAfter)
  const { events, paymentId } = await settle(trx, provider, order, plan, editId, principal.memberId)
  const settled = { ...edit, editId, settlement: { kind: plan.kind, amount: plan.amount, paymentId } }
  const createdAt = await insertEdit(trx, settled)
  const answer: OrderEdit = { ...settled, createdAt: createdAt.toISOString() }
  await updateOrder(trx, order, {
    status: order.status, memo: order.memo, shippingAddress, paymentId: order.payment_id,
  }, { action: 'edit', actor: { id: principal.memberId, role: principal.role }, refs: { editId } }, [...events, { type: 'order.edited', edit: answer }])
  const location = request.answerAs.location?.replace('{id}', String(order.id)).replace('{editId}', String(editId)) ?? null
  return { status: request.answerAs.status, body: answer, location }
}

/** The order's lines after the edit: kept lines in their place (changed or not), removed ones gone, new ones after them in the request's order. */
function editedItems (items: readonly OrderItem[], changed: readonly LineChange[]): OrderItem[] {
  const byProduct = new Map(changed.map(line => [line.productId, line]))
  const line = (item: OrderItem, quantity: number): OrderItem => ({ ...item, quantity, lineTotal: item.unitPrice * quantity })
  const kept = items.flatMap(item => {
    const change = byProduct.get(item.productId)
    if (!change) return [item]
    return change.after === 0 ? [] : [line(item, change.after)]
  })
  const added = changed.filter(change => change.before === 0).map(change => line({
    productId: change.productId, productName: change.productName, quantity: 0, unitPrice: change.unitPrice, lineTotal: 0, fulfilledQuantity: 0, returnedQuantity: 0,
  }, change.after))
  return [...kept, ...added]
}

/** The payment a refund would start with: the newest captured one with money left. */
function newestRefundable (payments: readonly PaymentRow[]): number | null {
  return payments.findLast(payment => isCaptured(payment.status) && payment.amount > payment.refunded_amount)?.id ?? null
}

/** Carries out the settlement; returns its payments' events (in the order they happened) and the payment the edit names. */
async function settle (
  trx: Tx, provider: PaymentProvider, order: OrderWithItems, plan: SettlementPlan, editId: number, actorId: number
): Promise<{ events: Announcement[], paymentId: number | null }> {
  const events: Announcement[] = []
  let paymentId: number | null = null
  if (plan.adjust) {
    const { payment, amount } = plan.adjust
    if (amount === null) {
      await updatePayment(trx, payment.id, { status: 'CANCELLED' })
      events.push({ type: 'payment.cancelled', paymentId: payment.id })
    } else {
      await updatePayment(trx, payment.id, { amount })
      events.push({ type: 'payment.updated', paymentId: payment.id })
    }
    paymentId = payment.id
  }
  if (plan.refund) {
    const refunded = await refundAcross(trx, provider, order.id, plan.refund, { reason: 'EDIT', editId }, actorId)
    events.push(...refunded.events)
    paymentId = refunded.paymentId
  }
  if (plan.open) {
    const payment = await insertPayment(trx, { orderId: order.id, customerId: order.customer_id, amount: plan.open, currency: order.currency })
    events.push({ type: 'payment.created', paymentId: payment.id })
    paymentId = payment.id
  }
  return { events, paymentId }
}

/** The order's edits, oldest first, for its owner or an admin (the order's visibility rules, CONTRACT §15.7). */
export async function getEdits (db: Db, principal: Principal, id: string): Promise<OrderEdit[]> {
  const order = await getOrder(db, principal, id)
  return (await listEdits(db, order.id)).map(toOrderEdit)
}

export async function getEdit (db: Db, principal: Principal, id: string, editId: string): Promise<OrderEdit> {
  const order = await getOrder(db, principal, id)
  const row = await findEdit(db, order.id, editId)
  if (!row) throw new ApiError('EDIT_NOT_FOUND', `Order ${id} has no edit ${editId}.`)
  return toOrderEdit(row)
}
