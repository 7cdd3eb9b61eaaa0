import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { OrderEdit } from '../../src/edits/schemas.js'
import { feedSettled, successData, type Api, type Member } from '../helper.js'
import { TIMESTAMP, get, patch } from '../payments/fixtures.js'

/** What the edit tests share: an order of 2 × A (500 each, stock 10 → 8), B (300, stock 10) not on it, reached through HTTP only. */
export async function placedOrder (api: Api) {
  const admin = await api.admin()
  const owner = await api.member('owner')
  const a = await api.product(admin, { price: 500, stockQuantity: 10, name: 'Beans' })
  const b = await api.product(admin, { price: 300, stockQuantity: 10, name: 'Filters' })
  const order = await api.order(owner, [{ productId: a.productId, quantity: 2 }])
  const orderUrl = `/api/v1/orders/${order.orderId}`
  return { admin, owner, a: a.productId, b: b.productId, orderId: order.orderId, orderUrl, editsUrl: `${orderUrl}/edits` }
}
export type Placed = Awaited<ReturnType<typeof placedOrder>>

/** The order confirmed by its owner: a PENDING payment of 1000. */
export async function confirmed (api: Api, o: Placed) {
  successData(await patch(api, `${o.orderUrl}/confirm`, o.owner))
  const paymentId = (await adminOrder(api, o)).paymentId as number
  return paymentId
}

/** Captures the payment with the simulated provider. */
export async function pay (api: Api, o: Placed, paymentId: number) {
  successData(await patch(api, `/api/v1/payments/${paymentId}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
}

/** POST an edit as `who`, with If-Match `"version"` unless `ifMatch` is null. */
export function edit (
  api: Api, o: Placed, who: Member, payload: object, options: { ifMatch?: string | null, query?: string, headers?: Record<string, string> } = {}
): Promise<LightMyRequestResponse> {
  const ifMatch = options.ifMatch === undefined ? '"1"' : options.ifMatch
  return api.inject({
    method: 'POST',
    url: `${o.editsUrl}${options.query ?? ''}`,
    headers: { ...who.headers, ...(ifMatch === null ? {} : { 'if-match': ifMatch }), ...options.headers },
    payload,
  })
}

export const adminOrder = async (api: Api, o: Placed) => successData<any>(await get(api, `/api/v1/admin/orders/${o.orderId}`, o.admin))

/** The order's events, oldest first, once the feed shows everything committed. */
export async function eventsOf (api: Api, o: Placed) {
  await feedSettled(api.app)
  return successData<{ content: any[] }>(await get(api, `/api/v1/admin/events?orderId=${o.orderId}&size=100`, o.admin)).content
}

/**
 * Everything an edit may change: the order as an admin reads it, its history, edits, payments'
 * refunds, events, both products' stock and the idempotency keys. A refused edit leaves all of it.
 */
export async function everything (api: Api, o: Placed) {
  return {
    order: await adminOrder(api, o),
    history: successData(await get(api, `${o.orderUrl}/history`, o.admin)),
    edits: successData(await get(api, o.editsUrl, o.admin)),
    refunds: await api.app.db.selectFrom('payment_refunds').selectAll().orderBy('id').execute(),
    events: await eventsOf(api, o),
    stock: [await api.stockOf(o.a), await api.stockOf(o.b)],
    keys: await api.app.db.selectFrom('idempotency_keys').select(['key', 'path']).execute(),
  }
}

/** A 201 or 200 answer whose data is exactly `expected` (besides `editId` when null is not expected and `createdAt`); returns the edit. */
export function assertEdit (res: LightMyRequestResponse, status: number, expected: Omit<OrderEdit, 'editId' | 'createdAt'> & { editId?: null }): OrderEdit {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const { data, ...envelope } = res.json()
  assert.deepEqual(envelope, { success: true, error: null })
  const { editId, createdAt, ...fields } = data
  assert.match(createdAt, TIMESTAMP)
  if (expected.editId === null) assert.equal(editId, null)
  else assert.ok(Number.isSafeInteger(editId) && editId > 0, String(editId))
  const { editId: _editId, ...rest } = expected
  assert.deepEqual(fields, rest)
  return data
}
