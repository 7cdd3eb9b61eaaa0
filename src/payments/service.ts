import type { Db, Tx } from '../db/schema.js'
import { assertOwnerOrAdmin, type Principal } from '../http/access.js'
import { ApiError, invalidParam } from '../errors.js'
import type { Announcement } from '../events/outbox.js'
import { sliceWindow, toSlice } from '../http/paging.js'
import { meteredCharge } from '../ops/metrics.js'
import type { PaymentProvider } from './provider.js'
import {
  announcePaymentChange, findPayment, insertPayment, insertRefund, listCustomerPayments, lockOrderOfPayment, lockOrderPayments, lockPayment,
  updatePayment, type RefundCause,
} from './repository.js'
import { isCaptured, type Payment, type PaymentHistoryQuery, type ProcessPaymentBody, type RefundPaymentBody } from './schemas.js'
import type { PaymentRow } from './table.js'

export function toPayment (row: PaymentRow): Payment {
  return {
    paymentId: row.id,
    orderId: row.order_id,
    amount: row.amount,
    refundedAmount: row.refunded_amount,
    currency: row.currency.trim(),
    status: row.status,
    method: row.method,
    failureReason: row.failure_reason,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

/**
 * Calls the provider; an error from it (unreachable, timed out, refused a refund) becomes a 503 and
 * rolls back the transaction around it, so nothing is recorded that the provider did not confirm.
 */
async function viaProvider<T> (call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    throw new ApiError('SERVICE_UNAVAILABLE', 'The payment provider could not be reached or did not complete the operation; nothing was changed. Try again.', {
      headers: { 'Retry-After': '5' },
      cause: error,
    })
  }
}

const notFound = (id: string | number) => new ApiError('PAYMENT_NOT_FOUND', `Payment ${id} does not exist.`)

/** Confirming an order opens its payment: PENDING, for the order's total. */
export async function openPayment (trx: Tx, order: { id: number, customer_id: number, total_amount: number, currency: string }): Promise<PaymentRow> {
  return insertPayment(trx, { orderId: order.id, customerId: order.customer_id, amount: order.total_amount, currency: order.currency })
}

/** Refunds `amount` of a captured payment through the provider and records it with its cause; the caller holds the lock. */
async function refund (trx: Tx, provider: PaymentProvider, payment: PaymentRow, amount: number, cause: RefundCause, actorId: number): Promise<PaymentRow> {
  const refunded = payment.refunded_amount + amount
  if (amount > 0) {
    const { reference } = await viaProvider(() => provider.refund({
      paymentId: payment.id,
      chargeReference: payment.provider_reference!,
      amount,
      currency: payment.currency.trim(),
      idempotencyKey: `payment-${payment.id}-refund-${refunded}`,
    }))
    await insertRefund(trx, { paymentId: payment.id, amount, reference, cause, actorId })
  }
  return updatePayment(trx, payment.id, {
    refunded_amount: refunded,
    status: refunded === payment.amount ? 'REFUNDED' : 'PARTIALLY_REFUNDED',
  })
}

/**
 * When its order is cancelled or deleted, its payments end too, in the same transaction, newest
 * first (CONTRACT §15.1): money captured is refunded in full (reason CANCEL, → REFUNDED), a payment
 * never captured is CANCELLED. Returns their events, in that order; the caller stores the order's
 * money with its own change. If the provider cannot refund, the whole change fails: no order is
 * cancelled while its money stays captured. The caller holds the order's lock.
 */
export async function settlePayments (trx: Tx, provider: PaymentProvider, orderId: number, actorId: number): Promise<Announcement[]> {
  const events: Announcement[] = []
  for (const payment of (await lockOrderPayments(trx, orderId)).toReversed()) {
    if (isCaptured(payment.status)) {
      const left = payment.amount - payment.refunded_amount
      await refund(trx, provider, payment, left, { reason: 'CANCEL' }, actorId)
      events.push({ type: 'payment.refunded', paymentId: payment.id, refund: { amount: left, reason: 'CANCEL' } })
    } else if (payment.status === 'PENDING' || payment.status === 'FAILED') {
      await updatePayment(trx, payment.id, { status: 'CANCELLED' })
      events.push({ type: 'payment.cancelled', paymentId: payment.id })
    }
  }
  return events
}

/**
 * Refunds `amount` of the order's captured money for an edit or a return (CONTRACT §15.1, §15.7),
 * taking from the newest captured payment first and spreading over older ones when it must. Returns
 * one `payment.refunded` per payment touched (newest first) and the id of the newest one (null when
 * `amount` is 0). The caller holds the order's lock, has checked that `amount` is refundable, and
 * stores the order's money with its own change; a provider that cannot refund fails it all (503).
 */
export async function refundAcross (
  trx: Tx, provider: PaymentProvider, orderId: number, amount: number, cause: RefundCause, actorId: number
): Promise<{ events: Announcement[], paymentId: number | null }> {
  const events: Announcement[] = []
  let paymentId: number | null = null
  let left = amount
  for (const payment of (await lockOrderPayments(trx, orderId)).toReversed()) {
    if (left === 0) break
    if (!isCaptured(payment.status)) continue
    const part = Math.min(left, payment.amount - payment.refunded_amount)
    if (part === 0) continue
    await refund(trx, provider, payment, part, cause, actorId)
    events.push({ type: 'payment.refunded', paymentId: payment.id, refund: { amount: part, ...cause } })
    paymentId ??= payment.id
    left -= part
  }
  if (left > 0) throw new Error(`refundAcross: ${left} of ${amount} is not refundable on order ${orderId}`)
  return { events, paymentId }
}

/** The owner of the payment's order, or an admin; the payment outlives a deleted order. */
export async function getPayment (db: Db, principal: Principal, id: string): Promise<Payment> {
  const payment = await findPayment(db, id)
  if (!payment) throw notFound(id)
  assertOwnerOrAdmin(principal, payment.customer_id, 'payment')
  return toPayment(payment)
}

/** The caller's payments, newest first, as a slice. */
export async function listPaymentHistory (db: Db, principal: Principal, query: PaymentHistoryQuery) {
  const { size, ...window } = sliceWindow(query)
  const rows = await listCustomerPayments(db, { customerId: principal.memberId, ...window })
  return toSlice(rows, size, toPayment)
}

/** A payment verb's caller and target: the payment id as it appears in the path. */
export interface PaymentCommand {
  provider: PaymentProvider
  principal: Principal
  id: string
}

/** The payment to change, locked for the rest of the transaction; 404 when there is none. */
async function lockExisting (trx: Tx, id: string): Promise<PaymentRow> {
  await lockOrderOfPayment(trx, id)
  const payment = await lockPayment(trx, id)
  if (!payment) throw notFound(id)
  return payment
}

/** The error of a declined charge: the payment is FAILED (committed) and may be processed again. */
export function paymentDeclined (payment: PaymentRow): ApiError {
  return new ApiError('PAYMENT_DECLINED', `The payment provider declined the payment: ${payment.failure_reason ?? 'no reason given'} The payment is FAILED and may be processed again with another payment method.`)
}

/**
 * Charges a PENDING or FAILED payment (the order's customer only), in the caller's transaction.
 * Approved → COMPLETED. Declined → FAILED, with `declined` set: the caller commits it and answers
 * 402; it may be processed again. COMPLETED or PARTIALLY_REFUNDED → unchanged, whatever the token;
 * REFUNDED or CANCELLED → 400.
 */
export async function processPayment (
  trx: Tx, { provider, principal, id }: PaymentCommand, body: ProcessPaymentBody
): Promise<{ payment: PaymentRow, declined: boolean }> {
  const payment = await lockExisting(trx, id)
  if (payment.customer_id !== principal.memberId) {
    throw new ApiError('ACCESS_DENIED', 'Only the customer who placed the order may pay for it.')
  }
  if (isCaptured(payment.status)) return { payment, declined: false }
  if (payment.status !== 'PENDING' && payment.status !== 'FAILED') {
    throw new ApiError('INVALID_PAYMENT_STATUS', `Cannot process a payment that is ${payment.status}.`)
  }
  const attempt = payment.attempts + 1
  // Counted in payments_processed_total as approved, declined or error (src/ops/metrics.ts).
  const charge = await viaProvider(() => meteredCharge(() => provider.charge({
    paymentId: payment.id,
    orderId: payment.order_id,
    amount: payment.amount,
    currency: payment.currency.trim(),
    paymentMethodToken: body.paymentMethodToken,
    idempotencyKey: `payment-${payment.id}-attempt-${attempt}`,
  })))
  if (!charge.approved) {
    const failed = await updatePayment(trx, payment.id, { status: 'FAILED', attempts: attempt, failure_reason: charge.reason })
    await announcePaymentChange(trx, payment.order_id, { type: 'payment.failed', paymentId: payment.id })
    return { payment: failed, declined: true }
  }
  const completed = await updatePayment(trx, payment.id, {
    status: 'COMPLETED',
    attempts: attempt,
    method: charge.method,
    provider: provider.name,
    provider_reference: charge.reference,
    failure_reason: null,
  })
  await announcePaymentChange(trx, payment.order_id, { type: 'payment.succeeded', paymentId: payment.id }, true)
  return { payment: completed, declined: false }
}

/**
 * Refunds part or all of what is left of a captured payment (admin), in the caller's transaction:
 * a GOODWILL refund, credited to the order (it lowers what is owed, CONTRACT §15.1). Concurrent
 * refunds take the order's and the payment's lock one after the other, so together they never
 * exceed the amount.
 */
export async function refundPayment (trx: Tx, { provider, principal, id }: PaymentCommand, body: RefundPaymentBody): Promise<PaymentRow> {
  const payment = await lockExisting(trx, id)
  if (!isCaptured(payment.status)) {
    throw new ApiError('INVALID_PAYMENT_STATUS', `Cannot refund a payment that is ${payment.status}; only COMPLETED and PARTIALLY_REFUNDED payments can be refunded.`)
  }
  const left = payment.amount - payment.refunded_amount
  if (body.amount !== undefined && body.amount > left) {
    throw invalidParam('amount', `must not exceed the ${left} left to refund`)
  }
  const amount = body.amount ?? left
  const refunded = await refund(trx, provider, payment, amount, { reason: 'GOODWILL' }, principal.memberId)
  await announcePaymentChange(trx, payment.order_id, { type: 'payment.refunded', paymentId: payment.id, refund: { amount, reason: 'GOODWILL' } })
  return refunded
}
