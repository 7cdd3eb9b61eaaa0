import { isAdmin, type Principal } from '../http/access.js'
import { isCaptured, type PaymentStatus } from '../payments/schemas.js'
import type { OrderStatus, Verb } from './schemas.js'

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

/** Delivery needs a captured payment (COMPLETED or PARTIALLY_REFUNDED); why not, if it cannot happen. */
export function deliveryBlocker (order: { payment_status: PaymentStatus | null }): string | undefined {
  if (isCaptured(order.payment_status)) return undefined
  return order.payment_status === null
    ? 'it has no payment'
    : `its payment is ${order.payment_status}; delivery needs a COMPLETED or PARTIALLY_REFUNDED payment`
}

const VERBS = Object.keys(VERB_TARGET) as Verb[]

/** The verbs this caller may apply to the order now (ones that would change it). */
export function allowedActions (
  order: { customer_id: number, status: OrderStatus, payment_status: PaymentStatus | null }, principal: Principal
): Verb[] {
  const caller = { isOwner: order.customer_id === principal.memberId, isAdmin: isAdmin(principal) }
  return VERBS.filter(verb =>
    mayApply(verb, caller) &&
    canTransition(order.status, VERB_TARGET[verb]) &&
    (verb !== 'deliver' || deliveryBlocker(order) === undefined))
}
