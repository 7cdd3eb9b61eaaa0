import type { Config } from '../config.js'
import type { Db, Tx } from '../db/schema.js'
import { isAdmin, type Principal } from '../http/access.js'
import { ApiError, invalidParam, type InvalidParam } from '../errors.js'
import { runIdempotent } from '../idempotency/service.js'
import { ordersPlaced } from '../ops/metrics.js'
import { insertOrder, lockProducts, memberExists } from './repository.js'
import type { CreateOrderBody, OrderDetail } from './schemas.js'
import { toOrderDetail } from './views.js'

export interface CreatedOrder {
  order: OrderDetail
  location: string
  replayed: boolean
}

/**
 * Places an order (CONTRACT §3): checks in the contract's order — customer (403), products (400),
 * stock (409) — and reserves stock, inserts the order and records its history in one transaction.
 * With an idempotency key the whole thing happens at most once per key.
 */
export async function createOrder (
  db: Db,
  config: Pick<Config, 'currency' | 'idempotencyTtlMs'>,
  principal: Principal,
  body: CreateOrderBody,
  key: string | undefined
): Promise<CreatedOrder> {
  assertDistinctProducts(body) // body validation comes before the ownership check (CONTRACT §10)
  if (body.customerId !== principal.memberId && !isAdmin(principal)) {
    throw new ApiError('ACCESS_DENIED', 'A member may only place orders for itself.')
  }

  const { replayed, response } = await runIdempotent(db, config.idempotencyTtlMs, {
    scope: { memberId: principal.memberId, method: 'POST', path: '/api/v1/orders' },
    key,
    body,
  }, async (trx) => {
    const order = toOrderDetail(await placeOrder(trx, config.currency, principal, body), principal)
    return { status: 201, body: order, location: `/api/v1/orders/${order.orderId}` }
  })
  if (!replayed) ordersPlaced.inc()
  return { order: response.body as OrderDetail, location: response.location!, replayed }
}

function assertDistinctProducts (body: CreateOrderBody): void {
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
}

async function placeOrder (trx: Tx, currency: string, principal: Principal, body: CreateOrderBody) {
  if (body.customerId !== principal.memberId && !(await memberExists(trx, body.customerId))) {
    throw invalidParam('customerId', 'is not a registered member')
  }

  const products = new Map((await lockProducts(trx, body.items.map(item => item.productId))).map(p => [p.id, p]))
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

  const row = await insertOrder(trx, {
    customerId: body.customerId,
    currency,
    totalAmount,
    shippingAddress: body.shippingAddress ?? null,
    memo: body.memo ?? null,
    items,
    actor: { id: principal.memberId, role: principal.role },
  })
  return { ...row, items, payment_status: null }
}
