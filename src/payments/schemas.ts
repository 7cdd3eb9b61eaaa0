import { Type, type Static } from 'typebox'
import {
  Component, Currency, Envelope, Id, IdempotencyKeyField, Money, Nullable, Ref, Slice, SliceQuery, Timestamp,
} from '../http/schemas.js'

export const PAYMENT_STATUSES = ['PENDING', 'COMPLETED', 'FAILED', 'PARTIALLY_REFUNDED', 'REFUNDED', 'CANCELLED'] as const
export const PaymentStatusSchema = Component('PaymentStatus', Type.Enum([...PAYMENT_STATUSES]))
export type PaymentStatus = Static<typeof PaymentStatusSchema>

/** Why money went back (CONTRACT §15.1): the admin's refund verb, an edit, a return, a cancel or delete. */
export const REFUND_REASONS = ['GOODWILL', 'EDIT', 'RETURN', 'CANCEL'] as const
export const RefundReasonSchema = Component('RefundReason', Type.Enum([...REFUND_REASONS], {
  description: 'GOODWILL: the admin refund verb; EDIT: an edit lowered the total; RETURN: goods came back; CANCEL: the order was cancelled or deleted. ' +
    'GOODWILL and RETURN refunds are credited: they lower what the order owes.',
}))
export type RefundReason = Static<typeof RefundReasonSchema>

/** Money has been captured and not all of it returned (a refund or a delivery needs this). */
export const isCaptured = (status: PaymentStatus | null) => status === 'COMPLETED' || status === 'PARTIALLY_REFUNDED'

export const Payment = Component('Payment', Type.Object({
  paymentId: Id,
  orderId: Id,
  amount: Money,
  refundedAmount: Money,
  currency: Currency,
  status: Ref(PaymentStatusSchema),
  method: Nullable(Type.String({ description: 'How the customer paid (e.g. CARD), as the provider reports it; null until processed' })),
  failureReason: Nullable(Type.String({ description: 'Why the last attempt was declined; null otherwise' })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { description: 'A payment of a confirmed order (an order may have several)' }))
export type Payment = Static<typeof Payment>

/** A payment as the order's detail lists it (CONTRACT §15.1). */
export const OrderPayment = Component('OrderPayment', Type.Object({
  paymentId: Id,
  amount: Money,
  refundedAmount: Money,
  status: Ref(PaymentStatusSchema),
}, { description: 'One of the order\'s payments, as its detail lists them (oldest first)' }))
export type OrderPayment = Static<typeof OrderPayment>

export const ProcessPaymentBody = Type.Object({
  paymentMethodToken: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'A token from the payment provider for the customer\'s card or wallet. The simulated provider declines `tok_declined` and approves anything else.',
    examples: ['tok_visa'],
  }),
  idempotencyKey: IdempotencyKeyField,
}, { additionalProperties: false })
export type ProcessPaymentBody = Static<typeof ProcessPaymentBody>

export const RefundPaymentBody = Type.Object({
  amount: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Minor units; absent = everything not yet refunded' })),
  idempotencyKey: IdempotencyKeyField,
}, { additionalProperties: false })
export type RefundPaymentBody = Static<typeof RefundPaymentBody>

export const PaymentHistoryQuery = Type.Object({ ...SliceQuery }, { additionalProperties: false })
export type PaymentHistoryQuery = Static<typeof PaymentHistoryQuery>

/** The answers' envelopes, made when this module loads (named components). */
export const PaymentEnvelope = Envelope(Payment)
export const PaymentSliceEnvelope = Envelope(Slice(Payment))
