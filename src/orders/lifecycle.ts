import type { Db, Tx } from '../db/schema.js'
import { isAdmin, type Principal } from '../http/access.js'
import { ApiError } from '../errors.js'
import { shipAndDeliverAll } from '../fulfillments/repository.js'
import type { Announcement } from '../events/outbox.js'
import type { EventType } from '../events/schemas.js'
import { fulfillmentsShipped, ordersCancelled, ordersExpired } from '../ops/metrics.js'
import type { PaymentProvider } from '../payments/provider.js'
import { lockOrderPayments, updatePayment } from '../payments/repository.js'
import { isCaptured } from '../payments/schemas.js'
import { openPayment, settlePayments } from '../payments/service.js'
import { lockLapsedReservation, lockOrder, releaseStock, updateOrder, type OrderWithItems } from './repository.js'
import type { OrderStatus, Verb } from './schemas.js'
import { etagOf } from './mapper.js'
import { assertVisible } from './service.js'
import {
  VERB_TARGET, addressEditable, canTransition, deliveryBlocker, hasShipped, holdsReservation, holdsUnconfirmedReservation, mayApply, verbFor,
} from './status.js'

/** What a caller asks to change; `undefined` leaves a field as it is, `null` clears it. */
export interface OrderChangeRequest {
  /** A verb path (`/confirm`, `/cancel`, `/delete`) or an admin step. */
  verb?: Verb
  /** A target status from PUT/PATCH; null or absent = unchanged. */
  status?: OrderStatus | null
  memo?: string | null
  shippingAddress?: string | null
  /** The `If-Match` header, when sent. */
  ifMatch?: string | undefined
}

function assertIfMatch (order: OrderWithItems, ifMatch: string | undefined): void {
  if (ifMatch === undefined) return
  const tags = ifMatch.split(',').map(tag => tag.trim().replace(/^W\//, ''))
  if (!tags.includes('*') && !tags.includes(etagOf(order))) {
    throw new ApiError('PRECONDITION_FAILED', `If-Match does not match the order's current ETag ${etagOf(order)}; fetch it again.`)
  }
}

/** The verb a request applies, after checking who may apply it and from which status. */
function resolveVerb (order: OrderWithItems, principal: Principal, request: OrderChangeRequest): Verb | undefined {
  const target = request.verb ? VERB_TARGET[request.verb] : (request.status ?? order.status)
  const verb = request.verb ?? (target === order.status ? undefined : verbFor(target))
  if (target !== order.status && verb === undefined) {
    throw new ApiError('INVALID_ORDER_STATUS', `An order cannot be moved back to ${target}; it is ${order.status}.`)
  }
  if (verb === undefined) return undefined
  if (!mayApply(verb, { isOwner: order.customer_id === principal.memberId, isAdmin: isAdmin(principal) })) {
    throw new ApiError('ACCESS_DENIED', verb === 'confirm'
      ? 'Only the customer who placed the order may confirm it.'
      : `Only an admin may ${verb} an order.`)
  }
  if (target === order.status) return undefined // already there: nothing to do (PATCH verbs are idempotent)
  if (!canTransition(order.status, target)) {
    throw new ApiError('INVALID_ORDER_STATUS', `Cannot ${verb} an order that is ${order.status}.`)
  }
  const blocker = verb === 'deliver' ? deliveryBlocker(order) : undefined
  if (blocker) throw new ApiError('INVALID_ORDER_STATUS', `Cannot deliver an order that is ${order.status}: ${blocker}.`)
  // Goods that left come back through a return, not a cancel (CONTRACT §15.3).
  if ((verb === 'cancel' || verb === 'delete') && hasShipped(order)) {
    throw new ApiError('INVALID_ORDER_STATUS',
      `Cannot ${verb} an order that is CONFIRMED with goods shipped (fulfillmentStatus ${order.fulfillment_status}); cancel its shipments first, or take goods back through a return.`)
  }
  return verb
}

/**
 * Applies a change to an order in one transaction, in the contract's order of checks: visible (404),
 * owner (403), If-Match (412), status rule (403 who / 400 from where), address rule (400).
 * Side effects happen in the same transaction: confirm opens the order's payment; a cancel or
 * delete of an active order releases its stock and settles its payments (refunded if captured,
 * cancelled if not), so either all of it happens or none. Returns the order as it is afterwards.
 */
export async function changeOrder (
  db: Db, provider: PaymentProvider, principal: Principal, id: string, request: OrderChangeRequest
): Promise<OrderWithItems> {
  const happened: { cancelled: boolean, shipped: boolean, lapsedAt: Date | null } = { cancelled: false, shipped: false, lapsedAt: null }
  const changed = await db.transaction().execute(async (trx) => {
    // Delivery depends on the order's stored money, which every payment verb changes under this lock too.
    const order = await lockOrder(trx, id)
    assertVisible(order, principal, id)
    assertIfMatch(order, request.ifMatch)
    const verb = resolveVerb(order, principal, request)
    if (verb === 'confirm' && reservationLapsed(order)) {
      // The sweep has not got to it yet: the order expires now, and the confirm is refused after commit.
      happened.lapsedAt = order.reserved_until
      return (await expire(trx, order))!
    }

    const shippingAddress = request.shippingAddress === undefined ? order.shipping_address : request.shippingAddress
    if (shippingAddress !== order.shipping_address && !addressEditable(order.status)) {
      throw new ApiError('INVALID_ORDER_STATUS', `The shipping address cannot change once an order is ${order.status}.`)
    }
    const memo = request.memo === undefined ? order.memo : request.memo
    const status = verb ? VERB_TARGET[verb] : order.status
    if (status === order.status && memo === order.memo && shippingAddress === order.shipping_address) return order

    let paymentId = order.payment_id
    const events: Announcement[] = []
    if (verb === 'confirm') {
      paymentId = (await openPayment(trx, order)).id
      events.push({ type: 'payment.created', paymentId })
    }
    // The one-step deliver ships what is left and delivers every shipment (CONTRACT §15.3, §15.7):
    // fulfillment.created, then fulfillment.delivered per shipment, then order.delivered.
    if (verb === 'deliver') {
      const { created, delivered } = await shipAndDeliverAll(trx, order.id)
      if (created) {
        happened.shipped = true
        events.push({ type: 'fulfillment.created', fulfillment: { ...created, status: 'SHIPPED', deliveredAt: null } })
      }
      for (const fulfillment of delivered) events.push({ type: 'fulfillment.delivered', fulfillment })
    }
    if ((status === 'CANCELLED' || status === 'DELETED') && holdsReservation(order.status)) {
      await releaseStock(trx, order.id)
      events.push(...await settlePayments(trx, provider, order.id, principal.memberId))
    }
    events.push({ type: verb ? VERB_EVENT[verb] : 'order.updated' })
    const row = await updateOrder(trx, order, { status, memo, shippingAddress, paymentId }, {
      action: verb ?? 'update',
      actor: { id: principal.memberId, role: principal.role },
    }, events)
    happened.cancelled = status === 'CANCELLED' && order.status !== 'CANCELLED'
    return row
  })
  if (happened.cancelled) ordersCancelled.inc() // counted once committed: a cancel rolled back never happened
  if (happened.shipped) fulfillmentsShipped.inc()
  if (happened.lapsedAt !== null) {
    ordersExpired.inc()
    throw new ApiError('INVALID_ORDER_STATUS',
      `Cannot confirm an order that is CANCELLED: its stock reservation expired at ${happened.lapsedAt.toISOString()}.`)
  }
  return changed
}

/** The event each verb announces (CONTRACT §12); a change of memo or address alone is `order.updated`. */
const VERB_EVENT: Readonly<Record<Verb, EventType>> = {
  confirm: 'order.confirmed',
  cancel: 'order.cancelled',
  deliver: 'order.delivered',
  delete: 'order.deleted',
}

const reservationLapsed = (order: OrderWithItems) =>
  holdsUnconfirmedReservation(order.status) && order.reserved_until !== null && order.reserved_until.getTime() <= Date.now()

/**
 * Expires a locked order whose reservation ran out before any money was captured (CONTRACT §11,
 * §18): its payment, if the order was confirmed, is CANCELLED (`payment.cancelled`), its stock goes
 * back and it is CANCELLED by the service itself (history action `expire`, no actor,
 * `order.expired`). A payment found captured under its lock leaves the order alone (`undefined`):
 * a capture takes the order's lock first and clears the deadline, so the sweep never finds one.
 */
async function expire (trx: Tx, order: OrderWithItems): Promise<OrderWithItems | undefined> {
  const events: Announcement[] = []
  const payments = await lockOrderPayments(trx, order.id)
  if (payments.some(payment => isCaptured(payment.status) || payment.status === 'REFUNDED')) return undefined
  for (const payment of payments.toReversed()) {
    if (payment.status === 'PENDING' || payment.status === 'FAILED') {
      await updatePayment(trx, payment.id, { status: 'CANCELLED' })
      events.push({ type: 'payment.cancelled', paymentId: payment.id })
    }
  }
  await releaseStock(trx, order.id)
  events.push({ type: 'order.expired' })
  return updateOrder(trx, order, {
    status: 'CANCELLED', memo: order.memo, shippingAddress: order.shipping_address, paymentId: order.payment_id,
  }, { action: 'expire', actor: null }, events)
}

/**
 * Expires every order whose reservation has run out before a payment was captured, one transaction
 * each, at most `limit` per call; returns how many. Any number of instances may sweep at once: each
 * order is locked with SKIP LOCKED and re-checked under its lock, so it is expired exactly once. A
 * capture that commits first wins (it clears the deadline); a confirm does not stop the clock, but
 * a confirm that commits first is what the sweep then finds: a CONFIRMED order, whose payment it
 * cancels.
 */
export async function expireLapsedReservations (db: Db, limit = 500): Promise<number> {
  let expired = 0
  while (expired < limit) {
    const done = await db.transaction().execute(async (trx) => {
      const order = await lockLapsedReservation(trx)
      if (!order) return false
      // A capture clears the deadline, so an order found is never captured; if one were, it is
      // left alone and its deadline cleared, so the sweep does not find it again.
      if (await expire(trx, order)) return true
      await trx.updateTable('orders').set({ reserved_until: null }).where('id', '=', order.id).execute()
      return 'kept'
    })
    if (!done) break
    if (done === 'kept') continue
    expired++
    ordersExpired.inc()
  }
  return expired
}
