import type { Config } from '../config.js'
import type { Db, Tx } from '../db/schema.js'
import { ApiError, invalidParam, type InvalidParam } from '../errors.js'
import { assertOwnerOrAdmin, isAdmin, type Principal } from '../http/access.js'
import { assertRange } from '../http/ranges.js'
import { pageWindow, parseList, parseSort, sliceWindow, toPage, toSlice } from '../http/paging.js'
import { toHistoryEntry, toOrderSummary } from './mapper.js'
import {
  findHistory, findOrder, insertOrderReservingStock, listOrders, lockProductStock, memberExists, pageOrders,
  type OrderFilter, type OrderWithItems,
} from './repository.js'
import {
  ORDER_SORT, ORDER_STATUSES, type AdminOrderSearchQuery, type CreateOrderBody, type HistoryEntry, type OrderSearchQuery,
} from './schemas.js'

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
 * Places an order (CONTRACT §3) in the caller's transaction, after `assertOrderRequest`: checks the
 * customer exists (400), every product is active (400) and in stock (409), then reserves the stock
 * until the reservation TTL runs out (CONTRACT §11), inserts the order and records its history.
 * Returns the order as created.
 */
export async function placeOrder (
  trx: Tx, config: Pick<Config, 'currency' | 'orderReservationTtlMs'>, principal: Principal, body: CreateOrderBody
): Promise<OrderWithItems> {
  if (body.customerId !== principal.memberId && !(await memberExists(trx, body.customerId))) {
    throw invalidParam('customerId', 'is not a registered member')
  }

  const products = new Map((await lockProductStock(trx, body.items.map(item => item.productId))).map(p => [p.id, p]))
  const inactive: InvalidParam[] = []
  body.items.forEach((item, index) => {
    if (products.get(item.productId)?.status !== 'ACTIVE') {
      inactive.push({ field: `items[${index}].productId`, message: 'is not an active product' })
    }
  })
  if (inactive.length > 0) {
    throw new ApiError('VALIDATION_FAILED', 'Every item must be an active product.', { invalidParams: inactive })
  }

  const short = body.items.filter(item => products.get(item.productId)!.stock_quantity < item.quantity)
  if (short.length > 0) {
    const detail = short.map(item =>
      `product ${item.productId}: ${item.quantity} requested, ${products.get(item.productId)!.stock_quantity} in stock`).join('; ')
    throw new ApiError('INSUFFICIENT_STOCK', `Not enough stock, nothing was reserved (${detail}).`)
  }

  const items = body.items.map(item => {
    const product = products.get(item.productId)!
    return {
      productId: item.productId,
      productName: product.name,
      quantity: item.quantity,
      unitPrice: product.price,
      lineTotal: product.price * item.quantity,
    }
  })
  const totalAmount = items.reduce((sum, item) => sum + item.lineTotal, 0)
  if (!Number.isSafeInteger(totalAmount)) throw invalidParam('items', 'the order total is too large')

  const row = await insertOrderReservingStock(trx, {
    customerId: body.customerId,
    currency: config.currency,
    totalAmount,
    shippingAddress: body.shippingAddress ?? null,
    memo: body.memo ?? null,
    items,
    actor: { id: principal.memberId, role: principal.role },
    reservationMs: config.orderReservationTtlMs,
  })
  return { ...row, items, payment_status: null }
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
