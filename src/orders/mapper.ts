import type { Principal } from '../http/access.js'
import type { OrderPayment } from '../payments/schemas.js'
import type { OrderWithItems } from './repository.js'
import type { HistoryEntry, OrderDetail, OrderItem, OrderSummary } from './schemas.js'
import { balanceDue } from './money.js'
import { allowedActions } from './status.js'
import type { OrderHistoryRow, OrderRow } from './table.js'

/** The strong ETag of an order version, e.g. `"3"` (CONTRACT §3). */
export const etagOf = (order: { version: number }) => `"${order.version}"`

/** The order as an admin reads it, without `allowedActions`: what events carry (CONTRACT §12). */
export function toOrderData (order: OrderRow & { items: OrderItem[], payments: OrderPayment[] }): Omit<OrderDetail, 'allowedActions' | 'fulfillments'> {
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
    payments: order.payments,
    paidAmount: order.paid_amount,
    refundedAmount: order.refunded_amount,
    balanceDue: balanceDue(order),
    paymentStatus: order.payment_status,
    fulfillmentStatus: order.fulfillment_status,
    version: order.version,
    createdAt: order.created_at.toISOString(),
    updatedAt: order.updated_at.toISOString(),
  }
}

/**
 * The order's detail as this caller sees it (its `allowedActions` depend on who asks): the data with
 * `allowedActions` added last, rather than spread into a copy (every read by id builds one).
 */
export function toOrderDetail (order: OrderWithItems, principal: Principal): OrderDetail {
  const detail = toOrderData(order) as OrderDetail
  detail.fulfillments = order.fulfillments
  detail.allowedActions = allowedActions(order, principal)
  return detail
}

/** The columns a summary shows: what a list needs to select (bench/RESULTS.md, "Why a list costs 3–4 reads by id"). */
export type OrderSummaryRow = Pick<OrderRow, 'id' | 'customer_id' | 'status' | 'item_count' | 'total_amount' | 'currency' |
  'paid_amount' | 'refunded_amount' | 'credited_amount' | 'payment_status' | 'fulfillment_status' | 'created_at'>

export function toOrderSummary (order: OrderSummaryRow): OrderSummary {
  return {
    orderId: order.id,
    customerId: order.customer_id,
    status: order.status,
    itemCount: order.item_count,
    totalAmount: order.total_amount,
    currency: order.currency,
    paidAmount: order.paid_amount,
    refundedAmount: order.refunded_amount,
    balanceDue: balanceDue(order),
    paymentStatus: order.payment_status,
    fulfillmentStatus: order.fulfillment_status,
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
    ...(row.edit_id === null ? {} : { editId: row.edit_id }),
    ...(row.fulfillment_id === null ? {} : { fulfillmentId: row.fulfillment_id }),
    ...(row.return_id === null ? {} : { returnId: row.return_id }),
    at: row.at.toISOString(),
  }
}
