import { isAdmin, type Principal } from '../http/access.js'
import { balanceDue } from './money.js'
import type { OrderFulfillmentStatus } from '../fulfillments/table.js'
import type { OrderActionName, OrderPaymentStatus, OrderStatus, Verb } from './schemas.js'

/**
 * The order lifecycle as data (CONTRACT §3). PENDING (carried over from earlier systems) behaves
 * as PLACED everywhere.
 */
export const TRANSITIONS: Readonly<Record<OrderStatus, readonly OrderStatus[]>> = {
  PENDING: ['CONFIRMED', 'CANCELLED', 'DELETED'],
  PLACED: ['CONFIRMED', 'CANCELLED', 'DELETED'],
  CONFIRMED: ['CANCELLED', 'DELIVERED', 'DELETED'],
  DELIVERED: ['DELETED'],
  CANCELLED: ['DELETED'],
  DELETED: [],
}

export function canTransition (from: OrderStatus, to: OrderStatus): boolean {
  return TRANSITIONS[from].includes(to)
}

/** The status each verb leads to. */
export const VERB_TARGET: Readonly<Record<Verb, OrderStatus>> = {
  confirm: 'CONFIRMED',
  cancel: 'CANCELLED',
  deliver: 'DELIVERED',
  delete: 'DELETED',
}

/** The verb that leads to `status`, if any (PLACED and PENDING are reached by no verb). */
export function verbFor (status: OrderStatus): Verb | undefined {
  return (Object.keys(VERB_TARGET) as Verb[]).find(verb => VERB_TARGET[verb] === status)
}

/** Who may apply each verb: the order's owner, an admin, or both. */
const APPLIERS: Readonly<Record<Verb, { owner: boolean, admin: boolean }>> = {
  confirm: { owner: true, admin: false },
  cancel: { owner: true, admin: true },
  deliver: { owner: false, admin: true },
  delete: { owner: true, admin: true },
}

export function mayApply (verb: Verb, caller: { isOwner: boolean, isAdmin: boolean }): boolean {
  const rule = APPLIERS[verb]
  return (rule.owner && caller.isOwner) || (rule.admin && caller.isAdmin)
}

/** Orders in these statuses hold reserved stock (and, once confirmed, a payment). */
export function holdsReservation (status: OrderStatus): boolean {
  return status === 'PENDING' || status === 'PLACED' || status === 'CONFIRMED'
}

/** Orders whose reservation runs out unless they are confirmed in time (CONTRACT §11). */
export function holdsUnconfirmedReservation (status: OrderStatus): boolean {
  return status === 'PENDING' || status === 'PLACED'
}

/** The shipping address may change only while the order has not shipped or ended. */
export const addressEditable = holdsReservation

/** The order's money, as its stored columns have it (CONTRACT §15.1). */
export interface OrderMoney {
  status: OrderStatus
  total_amount: number
  paid_amount: number
  refunded_amount: number
  credited_amount: number
  payment_status: OrderPaymentStatus
}

/**
 * Delivery needs nothing owed and money kept (CONTRACT §15.1, §15.7: balanceDue 0 and paymentStatus
 * PAID or PARTIALLY_REFUNDED); why not, if it cannot happen. A GOODWILL refund is credited: it
 * lowers what is owed as much as what was kept, so the order stays deliverable unless all is refunded.
 */
export function deliveryBlocker (order: OrderMoney, what: 'delivery' | 'shipping' = 'delivery'): string | undefined {
  const due = balanceDue(order)
  if (due > 0) return `its balanceDue is ${due} (paymentStatus ${order.payment_status}); ${what} needs it paid in full`
  if (order.payment_status !== 'PAID' && order.payment_status !== 'PARTIALLY_REFUNDED') {
    return `its paymentStatus is ${order.payment_status}; ${what} needs PAID or PARTIALLY_REFUNDED`
  }
  return undefined
}

const VERBS = Object.keys(VERB_TARGET) as Verb[]

/** Whether some delivered goods of the order have not come back. */
function hasReturnable (order: {
  items?: ReadonlyArray<{ productId: number, returnedQuantity: number }>,
  fulfillments?: ReadonlyArray<{ status: string, items: ReadonlyArray<{ productId: number, quantity: number }> }>
}): boolean {
  const delivered = new Map<number, number>()
  for (const shipment of order.fulfillments ?? []) {
    if (shipment.status !== 'DELIVERED') continue
    for (const item of shipment.items) delivered.set(item.productId, (delivered.get(item.productId) ?? 0) + item.quantity)
  }
  return (order.items ?? []).some(item => (delivered.get(item.productId) ?? 0) > item.returnedQuantity)
}

/** Whether goods of the order left: then it is no longer cancelled, but its goods come back through a return (CONTRACT §15.3). */
export const hasShipped = (order: { status: OrderStatus, fulfillment_status: OrderFulfillmentStatus }) =>
  order.status === 'CONFIRMED' && order.fulfillment_status !== 'UNFULFILLED'

/**
 * What this caller may do to the order now (ones that would change it): status verbs, then edit,
 * fulfil and return (CONTRACT §15.5). `return` is offered while something delivered has not come
 * back; the owner's RETURN_WINDOW is checked when the return is asked for.
 */
export function allowedActions (
  order: OrderMoney & {
    customer_id: number,
    fulfillment_status: OrderFulfillmentStatus,
    items?: ReadonlyArray<{ productId: number, returnedQuantity: number }>,
    fulfillments?: ReadonlyArray<{ status: string, items: ReadonlyArray<{ productId: number, quantity: number }> }>
  }, principal: Principal
): OrderActionName[] {
  const caller = { isOwner: order.customer_id === principal.memberId, isAdmin: isAdmin(principal) }
  const actions: OrderActionName[] = VERBS.filter(verb =>
    mayApply(verb, caller) &&
    canTransition(order.status, VERB_TARGET[verb]) &&
    (verb !== 'deliver' || deliveryBlocker(order) === undefined) &&
    ((verb !== 'cancel' && verb !== 'delete') || !hasShipped(order)))
  if ((caller.isAdmin && ['PLACED', 'PENDING', 'CONFIRMED'].includes(order.status)) ||
    (caller.isOwner && (order.status === 'PLACED' || order.status === 'PENDING'))) actions.push('edit')
  if (caller.isAdmin && order.status === 'CONFIRMED' && order.fulfillment_status !== 'FULFILLED' && deliveryBlocker(order, 'shipping') === undefined) {
    actions.push('fulfil')
  }
  if ((caller.isAdmin || caller.isOwner) && order.status !== 'DELETED' && hasReturnable(order)) actions.push('return')
  return actions
}
