import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { Event } from '../../src/events/schemas.js'
import type { HistoryEntry, OrderDetail } from '../../src/orders/schemas.js'
import type { Return } from '../../src/returns/schemas.js'
import { feedSettled, successData, type Api, type Member } from '../helper.js'
import { get, patch } from '../payments/fixtures.js'

/** What the return tests share: a delivered order of two lines, reached through HTTP only, and readers of everything a step may change. */

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export const post = (api: Api, url: string, who: Member, payload: object, headers: Record<string, string> = {}) =>
  api.inject({ method: 'POST', url, headers: { ...who.headers, ...headers }, payload })

/**
 * A member's order of 2 beans × 500 and 3 cups × 300 (total 1900; stock 10 each → 8 and 7), confirmed,
 * paid and delivered with §3's one-step deliver. `deliver: false` stops after the payment.
 */
export async function deliveredOrder (api: Api, { deliver = true } = {}) {
  const admin = await api.admin()
  const owner = await api.member('owner')
  const beans = (await api.product(admin, { price: 500, stockQuantity: 10, name: 'Beans' })).productId
  const cups = (await api.product(admin, { price: 300, stockQuantity: 10, name: 'Cups' })).productId
  const { orderId } = await api.order(owner, [{ productId: beans, quantity: 2 }, { productId: cups, quantity: 3 }])
  const orderUrl = `/api/v1/orders/${orderId}`
  assert.equal((await patch(api, `${orderUrl}/confirm`, owner)).statusCode, 200)
  const paymentId = successData<OrderDetail>(await get(api, orderUrl, owner)).paymentId!
  assert.equal((await patch(api, `/api/v1/payments/${paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' })).statusCode, 200)
  if (deliver) assert.equal((await patch(api, `/api/v1/admin/orders/${orderId}`, admin, { status: 'DELIVERED' })).statusCode, 200)
  return { admin, owner, beans, cups, orderId, orderUrl, returnsUrl: `${orderUrl}/returns`, paymentId, paymentUrl: `/api/v1/payments/${paymentId}` }
}
export type Delivered = Awaited<ReturnType<typeof deliveredOrder>>

/** The order as an admin reads it. */
export const adminOrder = async (api: Api, o: Delivered) => successData<OrderDetail>(await get(api, `/api/v1/admin/orders/${o.orderId}`, o.admin))

/** A return answer: status, JSON envelope, the order's ETag; the return's timestamps checked for format and left out. */
export function assertReturn (res: LightMyRequestResponse, status: number, expected: Omit<Return, 'createdAt' | 'updatedAt'>): Return {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const { data, ...envelope } = res.json()
  assert.deepEqual(envelope, { success: true, error: null })
  const { createdAt, updatedAt, ...fields } = data
  assert.match(createdAt, TIMESTAMP)
  assert.match(updatedAt, TIMESTAMP)
  assert.deepEqual(fields, expected)
  return data
}

/** The order's events as the feed shows them, once it has settled. */
export async function eventsOf (api: Api, o: Delivered): Promise<Event[]> {
  await feedSettled(api.app)
  return successData<{ content: Event[] }>(await get(api, `/api/v1/admin/events?orderId=${o.orderId}&size=100`, o.admin)).content
}

/** Everything a refused step must leave as it was: the order (version, money, items), its returns, history, events, payments, stock. */
export async function everything (api: Api, o: Delivered) {
  return {
    order: await adminOrder(api, o),
    returns: successData<Return[]>(await get(api, o.returnsUrl, o.admin)),
    history: successData<HistoryEntry[]>(await get(api, `${o.orderUrl}/history`, o.admin)),
    events: (await eventsOf(api, o)).map(event => event.eventId),
    payments: await api.app.db.selectFrom('payments').selectAll().where('order_id', '=', o.orderId).orderBy('id').execute(),
    refunds: await api.app.db.selectFrom('payment_refunds').selectAll().orderBy('id').execute(),
    stock: [await api.stockOf(o.beans), await api.stockOf(o.cups)],
  }
}
