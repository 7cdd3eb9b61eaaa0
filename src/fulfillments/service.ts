import type { Db, Tx } from '../db/schema.js'
import { ApiError } from '../errors.js'
import type { Principal } from '../http/access.js'
import type { Mail } from '../mail/mailer.js'
import { etagOf } from '../orders/mapper.js'
import { lockOrder, updateOrder, type OrderWithItems } from '../orders/repository.js'
import { assertVisible } from '../orders/service.js'
import { deliveryBlocker } from '../orders/status.js'
import { findFulfillment, insertFulfillment, leftToShip, lockFulfillment, setFulfillmentStatus, storeFulfillmentStatus } from './repository.js'
import type { Fulfillment, ShipBody } from './schemas.js'

/** A fulfilment verb's answer: the shipment as it is now, and the order's new ETag. */
export interface FulfillmentChange {
  fulfillment: Fulfillment
  etag: string
  /** The shipping mail to send once committed (a new shipment only). */
  mail?: Mail
}

const VALIDATION = 'The request has invalid parameters.'

/**
 * The order a fulfilment verb works on, locked: 404 as §3 (CONTRACT §15.7); a DELETED order takes
 * no shipment (400 for admins, CONTRACT §15.6).
 */
async function lockShippable (trx: Tx, principal: Principal, id: string, doing: string): Promise<OrderWithItems> {
  const order = await lockOrder(trx, id)
  assertVisible(order, principal, id)
  if (order.status === 'DELETED') throw new ApiError('INVALID_ORDER_STATUS', `Cannot ${doing} an order that is DELETED.`)
  return order
}

/** Checks the body's own rules, before anything is read: each product once, a tracking link that is absolute https. */
function assertShipBody (body: ShipBody): void {
  const invalid: Array<{ field: string, message: string }> = []
  const seen = new Set<number>()
  body.items?.forEach((item, i) => {
    if (seen.has(item.productId)) invalid.push({ field: `items[${i}].productId`, message: 'appears more than once; list each product once' })
    seen.add(item.productId)
  })
  if (body.trackingUrl !== undefined && !isHttpsUrl(body.trackingUrl)) {
    invalid.push({ field: 'trackingUrl', message: 'must be an absolute https:// URL' })
  }
  if (invalid.length > 0) throw new ApiError('VALIDATION_FAILED', VALIDATION, { invalidParams: invalid })
}

function isHttpsUrl (text: string): boolean {
  try {
    const url = new URL(text)
    return url.protocol === 'https:' && url.hostname !== '' && url.username === '' && url.password === ''
  } catch {
    return false
  }
}

/**
 * Ships goods of a CONFIRMED order that owes nothing (CONTRACT §15.3, §15.7), in the caller's
 * transaction: a SHIPPED fulfilment of the items given (absent: everything not yet shipped), the
 * order's fulfilment status kept, history `fulfil` and `fulfillment.created`, all with the order's
 * next version. Refusals change nothing.
 */
export async function ship (trx: Tx, principal: Principal, id: string, body: ShipBody, customerEmail: (customerId: number) => Promise<string | undefined>): Promise<FulfillmentChange> {
  assertShipBody(body)
  const order = await lockShippable(trx, principal, id, 'ship')
  if (order.status !== 'CONFIRMED') {
    throw new ApiError('INVALID_ORDER_STATUS', `Cannot ship an order that is ${order.status}; only CONFIRMED orders ship.`)
  }
  const blocker = deliveryBlocker(order, 'shipping')
  if (blocker) throw new ApiError('INVALID_ORDER_STATUS', `Cannot ship an order that is CONFIRMED: ${blocker}.`)

  const left = new Map((await leftToShip(trx, order.id)).map(line => [line.product_id, line.quantity]))
  let items: Array<{ productId: number, quantity: number }>
  if (body.items === undefined) {
    items = [...left].filter(([, quantity]) => quantity > 0).map(([productId, quantity]) => ({ productId, quantity }))
    if (items.length === 0) throw new ApiError('INVALID_ORDER_STATUS', 'Cannot ship: every line of the order has shipped already.')
  } else {
    const invalid: Array<{ field: string, message: string }> = []
    body.items.forEach((item, i) => {
      const rest = left.get(item.productId)
      if (rest === undefined) invalid.push({ field: `items[${i}].productId`, message: 'is not a line of the order' })
      else if (item.quantity > rest) invalid.push({ field: `items[${i}].quantity`, message: `must not exceed the ${rest} left to ship` })
    })
    if (invalid.length > 0) throw new ApiError('VALIDATION_FAILED', VALIDATION, { invalidParams: invalid })
    // In the order's line order, as every read shows them.
    const lines = [...left.keys()]
    items = [...body.items].sort((a, b) => lines.indexOf(a.productId) - lines.indexOf(b.productId))
  }

  const fulfillmentId = await insertFulfillment(trx, order.id, items, {
    carrier: body.carrier ?? null, trackingNumber: body.trackingNumber ?? null, trackingUrl: body.trackingUrl ?? null,
  })
  await storeFulfillmentStatus(trx, order.id)
  const fulfillment = (await findFulfillment(trx, order.id, fulfillmentId))!
  const changed = await updateOrder(trx, order, sameStatus(order), {
    action: 'fulfil', actor: { id: principal.memberId, role: principal.role }, refs: { fulfillmentId },
  }, [{ type: 'fulfillment.created', fulfillment }])
  const to = await customerEmail(order.customer_id)
  return { fulfillment, etag: etagOf(changed), ...(to === undefined ? {} : { mail: shippingMail(to, order, fulfillment) }) }
}

/**
 * Marks a SHIPPED fulfilment DELIVERED (CONTRACT §15.3, §15.7). When the order is then FULFILLED
 * and every shipment that is not CANCELLED is DELIVERED, the order becomes DELIVERED in the same
 * statement (`fulfillment.delivered`, then `order.delivered`) — unless it owes money again (an edit
 * raised its total after shipping): then it stays CONFIRMED until it is paid and delivered with
 * §3's deliver. Already DELIVERED → unchanged; CANCELLED → 400.
 */
export async function deliverShipment (trx: Tx, principal: Principal, id: string, fulfillmentId: string): Promise<FulfillmentChange> {
  const order = await lockShippable(trx, principal, id, 'deliver a fulfilment of')
  const found = await lockFulfillment(trx, order.id, fulfillmentId)
  if (!found) throw notFound(fulfillmentId)
  if (found.status === 'DELIVERED') return { fulfillment: (await findFulfillment(trx, order.id, found.id))!, etag: etagOf(order) }
  if (found.status === 'CANCELLED') {
    throw new ApiError('INVALID_FULFILLMENT_STATUS', `Cannot deliver fulfilment ${found.id}: it is CANCELLED.`)
  }
  const stillShipped = await setFulfillmentStatus(trx, found.id, 'DELIVERED')
  const fulfillment = (await findFulfillment(trx, order.id, found.id))!
  const completes = order.status === 'CONFIRMED' && order.fulfillment_status === 'FULFILLED' && stillShipped === 0 &&
    deliveryBlocker(order) === undefined
  const changed = await updateOrder(trx, order, completes ? { ...sameStatus(order), status: 'DELIVERED' } : sameStatus(order), {
    action: 'deliver_fulfillment', actor: { id: principal.memberId, role: principal.role }, refs: { fulfillmentId: found.id },
  }, completes ? [{ type: 'fulfillment.delivered', fulfillment }, { type: 'order.delivered' }] : [{ type: 'fulfillment.delivered', fulfillment }])
  return { fulfillment, etag: etagOf(changed) }
}

/**
 * Cancels a SHIPPED fulfilment (CONTRACT §15.3): its quantities are to ship again and the order's
 * fulfilment status follows. Already CANCELLED → unchanged; DELIVERED → 400 (goods that arrived
 * come back through a return).
 */
export async function cancelShipment (trx: Tx, principal: Principal, id: string, fulfillmentId: string): Promise<FulfillmentChange> {
  const order = await lockShippable(trx, principal, id, 'cancel a fulfilment of')
  const found = await lockFulfillment(trx, order.id, fulfillmentId)
  if (!found) throw notFound(fulfillmentId)
  if (found.status === 'CANCELLED') return { fulfillment: (await findFulfillment(trx, order.id, found.id))!, etag: etagOf(order) }
  if (found.status === 'DELIVERED') {
    throw new ApiError('INVALID_FULFILLMENT_STATUS', `Cannot cancel fulfilment ${found.id}: it is DELIVERED; goods that arrived come back through a return.`)
  }
  await setFulfillmentStatus(trx, found.id, 'CANCELLED')
  await storeFulfillmentStatus(trx, order.id)
  const fulfillment = (await findFulfillment(trx, order.id, found.id))!
  const changed = await updateOrder(trx, order, sameStatus(order), {
    action: 'cancel_fulfillment', actor: { id: principal.memberId, role: principal.role }, refs: { fulfillmentId: found.id },
  }, [{ type: 'fulfillment.cancelled', fulfillment }])
  return { fulfillment, etag: etagOf(changed) }
}

/** An order's fulfilment, for its owner or an admin; 404 FULFILLMENT_NOT_FOUND when the order has no such one. */
export async function getShipment (db: Db, order: OrderWithItems, fulfillmentId: string): Promise<Fulfillment> {
  const found = await findFulfillment(db, order.id, fulfillmentId)
  if (!found) throw notFound(fulfillmentId)
  return found
}

export const notFound = (fulfillmentId: string | number) =>
  new ApiError('FULFILLMENT_NOT_FOUND', `Fulfillment ${fulfillmentId} does not exist on this order.`)

const sameStatus = (order: OrderWithItems) =>
  ({ status: order.status, memo: order.memo, shippingAddress: order.shipping_address, paymentId: order.payment_id })

/** The customer's mail for a shipment: what left, with whom, and where to follow it (CONTRACT §15.3). */
export function shippingMail (to: string, order: OrderWithItems, fulfillment: Fulfillment): Mail {
  const names = new Map(order.items.map(item => [item.productId, item.productName]))
  const lines = fulfillment.items.map(item => `  ${item.quantity} × ${names.get(item.productId) ?? `product ${item.productId}`}`)
  const tracking = [
    fulfillment.carrier === null ? null : `Carrier: ${fulfillment.carrier}`,
    fulfillment.trackingNumber === null ? null : `Tracking number: ${fulfillment.trackingNumber}`,
    fulfillment.trackingUrl === null ? null : `Follow your parcel: ${fulfillment.trackingUrl}`,
  ].filter(line => line !== null)
  return {
    to,
    subject: `Your order ${order.id} has shipped`,
    text: [
      `Goods of your order ${order.id} are on their way:`,
      '',
      ...lines,
      '',
      ...(tracking.length > 0 ? tracking : ['The shop gave no tracking for this shipment.']),
      '',
      `Shipment ${fulfillment.fulfillmentId}, shipped at ${fulfillment.shippedAt}.`,
    ].join('\n'),
  }
}
