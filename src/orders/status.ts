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

/** The shipping address may change only while the order has not shipped or ended. */
export const addressEditable = holdsReservation
