import type { Db } from '../db/schema.js'
import { assertOwnerOrAdmin, isAdmin, type Principal } from '../http/access.js'
import { ApiError } from '../errors.js'
import { pageWindow, parseList, parseSort, sliceWindow, toPage, toSlice } from '../http/paging.js'
import { findHistory, findOrder, listOrders, pageOrders, type OrderFilter, type OrderWithItems } from './repository.js'
import { ORDER_SORT, ORDER_STATUSES, type AdminOrderSearchQuery, type HistoryEntry, type OrderSearchQuery } from './schemas.js'
import { toHistoryEntry, toOrderSummary } from './views.js'

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
  return {
    customerId: query.customerId,
    statuses: parseList('status', query.status, ORDER_STATUSES),
    createdFrom: query.createdFrom !== undefined ? new Date(query.createdFrom) : undefined,
    createdTo: query.createdTo !== undefined ? new Date(query.createdTo) : undefined,
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
