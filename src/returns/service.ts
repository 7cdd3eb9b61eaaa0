import type { Db, Tx } from '../db/schema.js'
import { ApiError, type InvalidParam } from '../errors.js'
import type { Announcement } from '../events/outbox.js'
import { isAdmin, type Principal } from '../http/access.js'
import type { KeyedOutcome } from '../http/idempotency.js'
import { pageWindow, parseList, toPage } from '../http/paging.js'
import { answerOnce, type KeyedRequest } from '../idempotency/service.js'
import { etagOf } from '../orders/mapper.js'
import { lockOrder, updateOrder, type OrderWithItems } from '../orders/repository.js'
import type { OrderAction } from '../orders/schemas.js'
import { assertVisible, getOrder } from '../orders/service.js'
import type { PaymentProvider } from '../payments/provider.js'
import { lockOrderPayments } from '../payments/repository.js'
import { isCaptured } from '../payments/schemas.js'
import { refundAcross } from '../payments/service.js'
import {
  insertReturn, latestDelivery, listReturns, lockReturn, orderOfReturn, pageReturns, readReturn, recordReceipt, restock,
  returnableLines, storeOpenReturn, updateReturn,
} from './repository.js'
import {
  RETURN_STATUSES, type AdminReturnListQuery, type ReceiveReturnBody, type RejectReturnBody, type RequestReturnBody, type Return,
} from './schemas.js'
import type { ReturnRow } from './table.js'

/** A return step's answer: the return as it is now, and the order's ETag (new when the step changed something). */
export interface ReturnAnswer {
  return: Return
  etag: string
}

const notFound = (id: string) => new ApiError('RETURN_NOT_FOUND', `Return ${id} does not exist.`)

/** A 400 VALIDATION_FAILED naming every field in `params`. */
const invalid = (params: InvalidParam[]) => new ApiError('VALIDATION_FAILED', 'The request has invalid parameters.', { invalidParams: params })

/** Each product at most once in a list of lines: the later ones are named. */
function assertDistinct (items: ReadonlyArray<{ productId: number }>): void {
  const first = new Map<number, number>()
  const repeated: InvalidParam[] = []
  items.forEach((item, index) => {
    const at = first.get(item.productId)
    if (at === undefined) first.set(item.productId, index)
    else repeated.push({ field: `items[${index}].productId`, message: `repeats items[${at}].productId; list each product once` })
  })
  if (repeated.length > 0) throw invalid(repeated)
}

/** A duration as RETURN_WINDOW is written: `30d`, `36h`, `90s`. */
function durationText (ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}

/** The order's state at a return step: a return changes no status, memo, address or payment of the order. */
const unchanged = (order: OrderWithItems) =>
  ({ status: order.status, memo: order.memo, shippingAddress: order.shipping_address, paymentId: order.payment_id })

/**
 * Records a return step on the order in one statement: its version goes up (the answer's new ETag),
 * the history entry names the return, and the events follow the payment events given first.
 */
async function recordStep (
  trx: Tx, order: OrderWithItems, principal: Principal, action: OrderAction, returnId: number, events: Announcement[], type: Announcement['type']
): Promise<ReturnAnswer> {
  await storeOpenReturn(trx, order.id)
  const changed = (await readReturn(trx, returnId))!
  const row = await updateOrder(trx, order, unchanged(order), {
    action, actor: { id: principal.memberId, role: principal.role }, refs: { returnId },
  }, [...events, { type, return: changed }])
  return { return: changed, etag: etagOf(row) }
}

/**
 * `POST /orders/{id}/returns` (CONTRACT §15.4, §15.7), in one transaction under the order's lock, in
 * the contract's order of checks: the body (a product listed twice, 400), the order visible to the
 * caller (404) and theirs (403), the idempotency key (a replay answers the first 201 with 200), a
 * DELETED order (400 for admins), every product a line of the order (400), the owner's return window
 * (400 RETURN_WINDOW_CLOSED; admins at any time), then each quantity within what was delivered minus
 * what is returned or in open returns (400 naming `items[i].quantity`). The answer has the status and
 * `Location` (`{returnId}`: the new return's id) the route chooses.
 */
export async function requestReturn (
  db: Db, principal: Principal, windowMs: number, id: string, body: RequestReturnBody, once: Omit<KeyedRequest, 'body'>,
  answerAs: { status: number, location: string }
): Promise<{ outcome: KeyedOutcome<Return>, etag: string }> {
  assertDistinct(body.items)
  return db.transaction().execute(async (trx) => {
    const order = await lockOrder(trx, id)
    assertVisible(order, principal, id)
    let etag = etagOf(order)
    const outcome = await answerOnce(trx, { ...once, body }, async () => {
      if (order.status === 'DELETED') throw new ApiError('INVALID_ORDER_STATUS', 'A DELETED order takes no return.')
      const lines = await returnableLines(trx, order.id)
      const foreign: InvalidParam[] = body.items.flatMap((item, index) => lines.some(line => line.product_id === item.productId)
        ? []
        : [{ field: `items[${index}].productId`, message: 'is not a line of this order' }])
      if (foreign.length > 0) throw invalid(foreign)
      if (!isAdmin(principal)) await assertWindowOpen(trx, order.id, windowMs)
      const over: InvalidParam[] = body.items.flatMap((item, index) => {
        const line = lines.find(line => line.product_id === item.productId)!
        const left = line.delivered - line.returned - line.open
        return item.quantity <= left
          ? []
          : [{ field: `items[${index}].quantity`, message: `must be at most ${left}: ${line.delivered} delivered, ${line.returned} returned, ${line.open} in open returns` }]
      })
      if (over.length > 0) throw invalid(over)
      const returnId = await insertReturn(trx, order.id, {
        items: body.items.map(item => ({ productId: item.productId, quantity: item.quantity, reason: item.reason ?? null })),
        note: body.note ?? null,
      })
      const answer = await recordStep(trx, order, principal, 'request_return', returnId, [], 'return.requested')
      etag = answer.etag
      return { status: answerAs.status, body: answer.return, location: answerAs.location.replace('{returnId}', String(returnId)) }
    })
    return { outcome, etag }
  })
}

/** The owner's window (CONTRACT §15.4, §15.7): `windowMs` from the latest `deliveredAt` among the order's fulfilments; 0 = closed. */
async function assertWindowOpen (trx: Tx, orderId: number, windowMs: number): Promise<void> {
  if (windowMs === 0) {
    throw new ApiError('RETURN_WINDOW_CLOSED', 'Returns are taken by the shop\'s staff only; ask them to open one. Nothing was requested.')
  }
  const delivered = await latestDelivery(trx, orderId)
  // Nothing delivered yet: no window has started, and the quantities say why nothing can go back.
  if (delivered === null) return
  const closes = new Date(delivered.getTime() + windowMs)
  if (Date.now() > closes.getTime()) {
    throw new ApiError('RETURN_WINDOW_CLOSED',
      `The return window closed at ${closes.toISOString()}, ${durationText(windowMs)} after the order's latest delivery; nothing was requested.`)
  }
}

/** The return `returnId` of the locked order, or 404 RETURN_NOT_FOUND (also when it belongs to another order). */
async function lockReturnOf (trx: Tx, order: OrderWithItems, returnId: string): Promise<ReturnRow> {
  const found = await lockReturn(trx, returnId)
  if (!found || found.order_id !== order.id) throw notFound(returnId)
  return found
}

/** An admin verb's return and its order, locked in the contract's order (the order first). */
async function lockByReturn (trx: Tx, returnId: string): Promise<{ order: OrderWithItems, found: ReturnRow }> {
  const orderId = await orderOfReturn(trx, returnId)
  if (orderId === undefined) throw notFound(returnId)
  const order = (await lockOrder(trx, orderId))!
  return { order, found: await lockReturnOf(trx, order, returnId) }
}

/** Whether a step to `target` applies: false when the return is already there (nothing changes), 400 from anything but REQUESTED. */
function mayMove (found: ReturnRow, target: 'RECEIVED' | 'REJECTED' | 'CANCELLED', verb: string): boolean {
  if (found.status === target) return false
  if (found.status !== 'REQUESTED') {
    throw new ApiError('INVALID_RETURN_STATUS', `Cannot ${verb} a return that is ${found.status}; only a REQUESTED return can be ${target.toLowerCase()}.`)
  }
  return true
}

/** The return as it is, with the order's current ETag: the answer of a step that changes nothing. */
async function asItIs (trx: Tx, order: OrderWithItems, found: ReturnRow): Promise<ReturnAnswer> {
  return { return: (await readReturn(trx, found.id))!, etag: etagOf(order) }
}

/** `PATCH /orders/{id}/returns/{returnId}/cancel` (owner or admin): REQUESTED → CANCELLED. */
export function cancelReturn (db: Db, principal: Principal, id: string, returnId: string): Promise<ReturnAnswer> {
  return db.transaction().execute(async (trx) => {
    const order = await lockOrder(trx, id)
    assertVisible(order, principal, id)
    const found = await lockReturnOf(trx, order, returnId)
    if (!mayMove(found, 'CANCELLED', 'cancel')) return asItIs(trx, order, found)
    await updateReturn(trx, found.id, { status: 'CANCELLED' })
    return recordStep(trx, order, principal, 'cancel_return', found.id, [], 'return.cancelled')
  })
}

/** `PATCH /admin/returns/{returnId}/reject`: REQUESTED → REJECTED, with the reason shown as `rejectionReason`. */
export function rejectReturn (db: Db, principal: Principal, returnId: string, body: RejectReturnBody | undefined): Promise<ReturnAnswer> {
  return db.transaction().execute(async (trx) => {
    const { order, found } = await lockByReturn(trx, returnId)
    if (!mayMove(found, 'REJECTED', 'reject')) return asItIs(trx, order, found)
    await updateReturn(trx, found.id, { status: 'REJECTED', rejection_reason: body?.reason ?? null })
    return recordStep(trx, order, principal, 'reject_return', found.id, [], 'return.rejected')
  })
}

/**
 * `PATCH /admin/returns/{returnId}/receive` (CONTRACT §15.4, §15.7): REQUESTED → RECEIVED in one
 * transaction, locks taken in the contract's order (the order, its payments, the products by id):
 * what came back is recorded per line, the lines marked `restock` go back in stock, and the refund
 * (reason RETURN) is made through the provider, newest captured payment first. The refund is
 * `refundAmount` when given (at most what is still refundable, else 400 naming it), or the received
 * quantities × their unitPrice capped at what is still refundable. A provider that cannot refund
 * fails it all (503): nothing changes. Events: one `payment.refunded` per payment touched (none for
 * a refund of 0), then `return.received`.
 */
export function receiveReturn (
  db: Db, provider: PaymentProvider, principal: Principal, returnId: string, body: ReceiveReturnBody
): Promise<ReturnAnswer> {
  assertDistinct(body.items)
  return db.transaction().execute(async (trx) => {
    const { order, found } = await lockByReturn(trx, returnId)
    if (!mayMove(found, 'RECEIVED', 'receive')) return asItIs(trx, order, found)
    const asked = (await readReturn(trx, found.id))!.items
    const wrong: InvalidParam[] = body.items.flatMap((item, index) => {
      const line = asked.find(line => line.productId === item.productId)
      if (!line) return [{ field: `items[${index}].productId`, message: 'is not a line of this return' }]
      return item.quantity <= line.quantity
        ? []
        : [{ field: `items[${index}].quantity`, message: `must be at most ${line.quantity}, the quantity the return asked for` }]
    })
    if (wrong.length > 0) throw invalid(wrong)

    const payments = await lockOrderPayments(trx, order.id)
    const refundable = payments.filter(payment => isCaptured(payment.status))
      .reduce((sum, payment) => sum + payment.amount - payment.refunded_amount, 0)
    if (body.refundAmount !== undefined && body.refundAmount > refundable) {
      throw invalid([{ field: 'refundAmount', message: `must not exceed the ${refundable} still refundable` }])
    }
    const lines = await returnableLines(trx, order.id)
    const worth = body.items.reduce((sum, item) => sum + item.quantity * lines.find(line => line.product_id === item.productId)!.unit_price, 0)
    const amount = body.refundAmount ?? Math.min(worth, refundable)

    await restock(trx, body.items.filter(item => item.restock && item.quantity > 0).toSorted((a, b) => a.productId - b.productId))
    await recordReceipt(trx, found.id, body.items)
    await updateReturn(trx, found.id, { status: 'RECEIVED', refund_amount: amount })
    const { events } = await refundAcross(trx, provider, order.id, amount, { reason: 'RETURN', returnId: found.id }, principal.memberId)
    return recordStep(trx, order, principal, 'receive_return', found.id, events, 'return.received')
  })
}

/** An order's returns, oldest first, for its owner or an admin. */
export async function getOrderReturns (db: Db, principal: Principal, id: string): Promise<Return[]> {
  const order = await getOrder(db, principal, id)
  return listReturns(db, order.id)
}

/** One return of an order, for its owner or an admin; 404 RETURN_NOT_FOUND when the order has no such return. */
export async function getOrderReturn (db: Db, principal: Principal, id: string, returnId: string): Promise<Return> {
  const order = await getOrder(db, principal, id)
  const found = await readReturn(db, returnId)
  if (!found || found.orderId !== order.id) throw notFound(returnId)
  return found
}

/** Every return, newest first, as a page (admin). */
export async function pageAllReturns (db: Db, query: Partial<AdminReturnListQuery>) {
  const window = pageWindow(query)
  const { rows, total } = await pageReturns(db, {
    statuses: parseList('status', query.status, RETURN_STATUSES),
    orderId: query.orderId,
    offset: window.offset,
    limit: window.limit,
  })
  return toPage(rows, total, window, (row: Return) => row)
}
