import type { FastifyReply } from 'fastify'
import { isAdmin, type Principal } from '../http/access.js'
import { ok } from '../http/schemas.js'
import { isCaptured } from '../payments/service.js'
import type { OrderWithItems } from './repository.js'
import type { HistoryEntry, OrderDetail, OrderSummary, Verb } from './schemas.js'
import { VERB_TARGET, canTransition, mayApply } from './status.js'
import type { OrderHistoryRow, OrderRow } from './table.js'

const VERBS = Object.keys(VERB_TARGET) as Verb[]

/** Delivery needs a captured payment (COMPLETED or PARTIALLY_REFUNDED); why not, if it cannot happen. */
export function deliveryBlocker (order: OrderWithItems): string | undefined {
  if (isCaptured(order.payment_status)) return undefined
  return order.payment_status === null
    ? 'it has no payment'
    : `its payment is ${order.payment_status}; delivery needs a COMPLETED or PARTIALLY_REFUNDED payment`
}

/** The verbs this caller may apply to the order now (ones that would change it). */
export function allowedActions (order: OrderWithItems, principal: Principal): Verb[] {
  const caller = { isOwner: order.customer_id === principal.memberId, isAdmin: isAdmin(principal) }
  return VERBS.filter(verb =>
    mayApply(verb, caller) &&
    canTransition(order.status, VERB_TARGET[verb]) &&
    (verb !== 'deliver' || deliveryBlocker(order) === undefined))
}

/** The strong ETag of an order version. */
export const etagOf = (order: OrderRow) => `"${order.version}"`

export function toOrderDetail (order: OrderWithItems, principal: Principal): OrderDetail {
  return {
    orderId: order.id,
    customerId: order.customer_id,
    status: order.status,
    items: order.items,
    totalAmount: order.total_amount,
    currency: order.currency,
    shippingAddress: order.shipping_address,
    memo: order.memo,
    paymentId: order.payment_id,
    version: order.version,
    allowedActions: allowedActions(order, principal),
    createdAt: order.created_at.toISOString(),
    updatedAt: order.updated_at.toISOString(),
  }
}

/** Answers with the order's detail for this caller and the ETag of the version shown. */
export function sendOrder (reply: FastifyReply, order: OrderWithItems, principal: Principal) {
  return reply.header('ETag', etagOf(order)).send(ok(toOrderDetail(order, principal)))
}

export function toOrderSummary (order: OrderRow): OrderSummary {
  return {
    orderId: order.id,
    customerId: order.customer_id,
    status: order.status,
    itemCount: order.item_count,
    totalAmount: order.total_amount,
    currency: order.currency,
    createdAt: order.created_at.toISOString(),
  }
}

export function toHistoryEntry (row: OrderHistoryRow): HistoryEntry {
  return {
    from: row.from_status,
    to: row.to_status,
    action: row.action,
    actorId: row.actor_id,
    actorRole: row.actor_role,
    at: row.at.toISOString(),
  }
}
