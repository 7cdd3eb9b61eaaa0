import type { Config } from '../config.js'
import type { Db } from '../db/schema.js'
import { ApiError, invalidParam, type InvalidParam } from '../errors.js'
import { assertOwnerOrAdmin, isAdmin, type Principal } from '../http/access.js'
import { assertRange } from '../http/ranges.js'
import { pageWindow, parseList, parseSort, sliceWindow, toPage, toSlice } from '../http/paging.js'
import type { KeyClaim } from '../idempotency/repository.js'
import type { StatementOutcome } from '../idempotency/service.js'
import { toHistoryEntry, toOrderSummary } from './mapper.js'
import {
  findHistory, findOrder, listOrders, pageOrders, placeOrderInOneStatement,
  type OrderFilter, type OrderWithItems, type PlaceOrderResult,
} from './repository.js'
import {
  ORDER_SORT, ORDER_FULFILLMENT_STATUSES, ORDER_PAYMENT_STATUSES, ORDER_STATUSES, type AdminOrderSearchQuery, type CreateOrderBody, type HistoryEntry, type OrderDetail,
  type OrderSearchQuery,
} from './schemas.js'
import { allowedActions } from './status.js'

/**
 * The checks of a create that need no database, in the contract's order (CONTRACT §10): the body
 * (a product listed twice, 400), then whom the order is for (403). They come before the
 * idempotency key is looked at, so a replay is only ever answered to a valid request.
 */
export function assertOrderRequest (principal: Principal, body: CreateOrderBody): void {
  const firstIndex = new Map<number, number>()
  const duplicates: InvalidParam[] = []
  body.items.forEach((item, index) => {
    const first = firstIndex.get(item.productId)
    if (first === undefined) firstIndex.set(item.productId, index)
    else duplicates.push({ field: `items[${index}].productId`, message: `repeats items[${first}].productId; list each product once` })
  })
  if (duplicates.length > 0) {
    throw new ApiError('VALIDATION_FAILED', 'Each product may appear only once in an order.', { invalidParams: duplicates })
  }
  if (body.customerId !== principal.memberId && !isAdmin(principal)) {
    throw new ApiError('ACCESS_DENIED', 'A member may only place orders for itself.')
  }
}

/**
 * Places an order (CONTRACT §3) in one statement, the idempotency key's claim (`claim`) and the
 * stored answer included, after `assertOrderRequest`: checks the customer exists (400), every product
 * is active (400) and in stock (409), and that a member ordering for itself holds fewer than
 * `MAX_UNPAID_ORDERS` orders with stock and nothing captured (409, CONTRACT §18; admins are exempt),
 * then reserves the stock until the reservation TTL runs out (CONTRACT §11), inserts the order and
 * records its history and its event. The answer is the order as created, with the status and
 * `Location` (`{id}`: the order's id) the route chooses. Run it through `answerOnceInOneStatement`,
 * which replays a taken key.
 */
export async function placeOrder (
  db: Db, claim: KeyClaim | null, config: Pick<Config, 'currency' | 'orderReservationTtlMs' | 'maxUnpaidOrders'>,
  principal: Principal, body: CreateOrderBody, answerAs: { status: number, location: string }
): Promise<StatementOutcome<OrderDetail>> {
  const unpaidLimit = body.customerId === principal.memberId && !isAdmin(principal) ? config.maxUnpaidOrders : 0
  let result: PlaceOrderResult
  let attempts = 0
  do {
    if (++attempts > MAX_ATTEMPTS) {
      throw new ApiError('SERVICE_UNAVAILABLE', 'Too many orders are being placed for this member at once; nothing was placed. Try again.', {
        headers: { 'Retry-After': '1' },
      })
    }
    result = await placeOrderOnce(db, claim, config, principal, body, answerAs, unpaidLimit)
    // A stale count wrote nothing: a concurrent create of the member committed after this statement's
    // snapshot was taken. The next run's snapshot includes it.
  } while (result.limit_fresh === false)
  if (result.stored) return { keyTaken: result.stored }
  if (result.answer) return { answered: result.answer }
  // The checks passed, but a concurrent request claimed the key first: nothing was written.
  if (result.checks_passed) return { keyTaken: undefined }
  return { refused: refusalOf(body, result, unpaidLimit) }
}

/** How many times a create runs again after finding its unpaid-order count stale (each time, another create committed). */
const MAX_ATTEMPTS = 10

function placeOrderOnce (
  db: Db, claim: KeyClaim | null, config: Pick<Config, 'currency' | 'orderReservationTtlMs'>, principal: Principal,
  body: CreateOrderBody, answerAs: { status: number, location: string }, unpaidLimit: number
): Promise<PlaceOrderResult> {
  return placeOrderInOneStatement(db, claim, {
    customerId: body.customerId,
    checkCustomer: body.customerId !== principal.memberId,
    items: body.items,
    currency: config.currency,
    shippingAddress: body.shippingAddress ?? null,
    memo: body.memo ?? null,
    actor: { id: principal.memberId, role: principal.role },
    reservationMs: config.orderReservationTtlMs,
    unpaidLimit,
    allowedActions: allowedActions({
      customer_id: body.customerId, status: 'PLACED', total_amount: 0, paid_amount: 0, refunded_amount: 0, credited_amount: 0, payment_status: 'UNPAID', fulfillment_status: 'UNFULFILLED',
    }, principal),
    answerAs,
  })
}

/** Why the create's statement refused: the first check that failed, in the contract's order (§10). */
function refusalOf (body: CreateOrderBody, result: PlaceOrderResult, unpaidLimit: number): ApiError {
  if (!result.customer_known) return invalidParam('customerId', 'is not a registered member')
  const products = result.products!
  const inactive: InvalidParam[] = []
  body.items.forEach((item, index) => {
    if (products[index]!.status !== 'ACTIVE') inactive.push({ field: `items[${index}].productId`, message: 'is not an active product' })
  })
  if (inactive.length > 0) {
    return new ApiError('VALIDATION_FAILED', 'Every item must be an active product.', { invalidParams: inactive })
  }
  const short = body.items.flatMap((item, index) => {
    const stock = products[index]!.stock!
    return stock < item.quantity ? [`product ${item.productId}: ${item.quantity} requested, ${stock} in stock`] : []
  })
  if (short.length > 0) return new ApiError('INSUFFICIENT_STOCK', `Not enough stock, nothing was reserved (${short.join('; ')}).`)
  if (!result.total_fits) return invalidParam('items', 'the order total is too large')
  if (result.unpaid_held !== null && result.unpaid_held >= unpaidLimit) {
    return new ApiError('UNPAID_ORDER_LIMIT_REACHED',
      `A member may hold at most ${unpaidLimit} orders that reserve stock without a captured payment, and ${result.unpaid_held} are open; pay for or cancel one of them first. Nothing was placed.`)
  }
  throw new Error('the create refused an order that passes every check')
}

/**
 * 404 when the order does not exist for this caller (soft-deleted orders exist only for admins),
 * 403 when it belongs to someone else.
 */
export function assertVisible (order: OrderWithItems | undefined, principal: Principal, id: string): asserts order is OrderWithItems {
  if (!order || (order.status === 'DELETED' && !isAdmin(principal))) {
    throw new ApiError('ORDER_NOT_FOUND', `Order ${id} does not exist.`)
  }
  assertOwnerOrAdmin(principal, order.customer_id, 'order')
}

export async function getOrder (db: Db, principal: Principal, id: string): Promise<OrderWithItems> {
  const order = await findOrder(db, id)
  assertVisible(order, principal, id)
  return order
}

export async function getOrderHistory (db: Db, principal: Principal, id: string): Promise<HistoryEntry[]> {
  const order = await getOrder(db, principal, id)
  return (await findHistory(db, order.id)).map(toHistoryEntry)
}

/** The filters a list query names, parsed. */
export function orderFilter (query: Partial<AdminOrderSearchQuery>): OrderFilter {
  assertRange('minTotal', query.minTotal, 'maxTotal', query.maxTotal)
  const createdFrom = query.createdFrom !== undefined ? new Date(query.createdFrom) : undefined
  const createdTo = query.createdTo !== undefined ? new Date(query.createdTo) : undefined
  assertRange('createdFrom', createdFrom?.getTime(), 'createdTo', createdTo?.getTime(), true)
  return {
    customerId: query.customerId,
    statuses: parseList('status', query.status, ORDER_STATUSES),
    paymentStatuses: parseList('paymentStatus', query.paymentStatus, ORDER_PAYMENT_STATUSES),
    fulfillmentStatuses: parseList('fulfillmentStatus', query.fulfillmentStatus, ORDER_FULFILLMENT_STATUSES),
    hasOpenReturn: query.hasOpenReturn === undefined ? undefined : query.hasOpenReturn === 'true',
    createdFrom,
    createdTo,
    minTotal: query.minTotal,
    maxTotal: query.maxTotal,
    productId: query.productId,
  }
}

/**
 * The caller's own orders, newest first, as a slice. `GET /orders` uses the status filter only;
 * `GET /orders/search` adds dates, totals and a product.
 */
export async function listOwnOrders (db: Db, principal: Principal, query: Partial<OrderSearchQuery>) {
  const { size, ...window } = sliceWindow(query)
  const rows = await listOrders(db, { ...orderFilter(query), customerId: principal.memberId, ...window })
  return toSlice(rows, size, toOrderSummary)
}

/** Every customer's orders, DELETED included unless filtered out, as a sorted page (admin lists). */
export async function pageAllOrders (db: Db, query: Partial<AdminOrderSearchQuery>) {
  const window = pageWindow(query)
  const { rows, total } = await pageOrders(db, {
    ...orderFilter(query),
    includeDeleted: true,
    sort: parseSort(query.sort, ORDER_SORT),
    ...window,
  })
  return toPage(rows, total, window, toOrderSummary)
}
