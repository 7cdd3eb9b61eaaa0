import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { Payment, PaymentStatus } from '../../src/payments/schemas.js'
import type { Api, Member } from '../helper.js'

/** What the payment tests share: a confirmed order with its payment, reached through HTTP only, and checks of the payment shape. */

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const UNAUTHENTICATED = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'
export const BODY_INVALID = 'The request body has invalid parameters.'

export type Fields = Omit<Payment, 'createdAt' | 'updatedAt'>

export const get = (api: Api, url: string, who?: Member) => api.inject({ method: 'GET', url, headers: { ...who?.headers } })
export const patch = (api: Api, url: string, who?: Member, payload?: object, headers: Record<string, string> = {}) =>
  api.inject({ method: 'PATCH', url, headers: { ...who?.headers, ...headers }, ...(payload === undefined ? {} : { payload }) })

/**
 * A member's CONFIRMED order of 2 × 500 (stock 10 → 8) and its PENDING payment of 1000, reached
 * through HTTP only.
 */
export async function confirmedOrder (api: Api) {
  const admin = await api.admin()
  const owner = await api.member('owner')
  const product = await api.product(admin, { price: 500, stockQuantity: 10 })
  const order = await api.order(owner, [{ productId: product.productId, quantity: 2 }])
  const orderUrl = `/api/v1/orders/${order.orderId}`
  assert.equal((await patch(api, `${orderUrl}/confirm`, owner)).statusCode, 200)
  const paymentId = (await get(api, orderUrl, owner)).json().data.paymentId as number
  return {
    admin, owner, productId: product.productId, orderId: order.orderId, orderUrl, paymentId, paymentUrl: `/api/v1/payments/${paymentId}`,
  }
}
export type Confirmed = Awaited<ReturnType<typeof confirmedOrder>>

/** The payment of a fresh confirmed order as it is right after confirmation. */
export const pendingPayment = (o: Confirmed): Fields => ({
  paymentId: o.paymentId,
  orderId: o.orderId,
  amount: 1000,
  refundedAmount: 0,
  currency: 'USD',
  status: 'PENDING',
  method: null,
  failureReason: null,
})
export const completedPayment = (o: Confirmed): Fields => ({ ...pendingPayment(o), status: 'COMPLETED', method: 'CARD' })

/** A 200 success envelope whose data is a payment with exactly `expected` (timestamps checked for format). */
export function assertPayment (res: LightMyRequestResponse, expected: Fields): Payment {
  assert.equal(res.statusCode, 200, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const { data, ...envelope } = res.json()
  assert.deepEqual(envelope, { success: true, error: null })
  const { createdAt, updatedAt, ...fields } = data
  assert.match(createdAt, TIMESTAMP)
  assert.match(updatedAt, TIMESTAMP)
  assert.deepEqual(fields, expected)
  return data
}

export const pay = (api: Api, o: Confirmed, token: string, headers: Record<string, string> = {}) =>
  patch(api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: token }, headers)

/** PATCH /refund as the admin; no payload sends no body. */
export const refund = (api: Api, o: Confirmed, payload?: object, headers: Record<string, string> = {}) =>
  patch(api, `${o.paymentUrl}/refund`, o.admin, payload, headers)

/** The payment as its owner reads it. */
export const paymentOf = async (api: Api, o: Confirmed): Promise<Payment> => (await get(api, o.paymentUrl, o.owner)).json().data

/** A confirmed order whose payment has been brought to `status` through HTTP. */
export async function paymentIn (api: Api, status: PaymentStatus): Promise<Confirmed> {
  const o = await confirmedOrder(api)
  if (status === 'FAILED') assert.equal((await pay(api, o, 'tok_declined')).statusCode, 402)
  if (['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED'].includes(status)) assert.equal((await pay(api, o, 'tok_visa')).statusCode, 200)
  if (status === 'PARTIALLY_REFUNDED') assert.equal((await refund(api, o, { amount: 300 })).statusCode, 200)
  if (status === 'REFUNDED') assert.equal((await refund(api, o)).statusCode, 200)
  if (status === 'CANCELLED') assert.equal((await patch(api, `${o.orderUrl}/cancel`, o.owner)).statusCode, 200)
  assert.equal((await paymentOf(api, o)).status, status)
  return o
}
