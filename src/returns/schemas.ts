import { Type, type Static } from 'typebox'
import { Component, Id, Nullable, Ref, Timestamp } from '../http/schemas.js'

/** A return's life (CONTRACT §15.4): REQUESTED, then RECEIVED, REJECTED or CANCELLED. */
export const RETURN_STATUSES = ['REQUESTED', 'RECEIVED', 'REJECTED', 'CANCELLED'] as const
export const ReturnStatusSchema = Component('ReturnStatus', Type.Enum([...RETURN_STATUSES], {
  description: 'REQUESTED (open), then RECEIVED (goods back, refunded), REJECTED (by staff) or CANCELLED (by the owner or staff)',
}))
export type ReturnStatus = Static<typeof ReturnStatusSchema>

export const RETURN_REASONS = ['DAMAGED', 'WRONG_ITEM', 'NOT_AS_DESCRIBED', 'NO_LONGER_NEEDED', 'OTHER'] as const
export const ReturnReasonSchema = Component('ReturnReason', Type.Enum([...RETURN_REASONS], {
  description: 'Why the customer sends the line back',
}))
export type ReturnReason = Static<typeof ReturnReasonSchema>

/** Goods coming back, line by line (CONTRACT §15.4). */
export const Return = Component('Return', Type.Object({
  returnId: Id,
  orderId: Id,
  status: Ref(ReturnStatusSchema),
  items: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 1, description: 'How many were asked to go back' }),
    reason: Nullable(Ref(ReturnReasonSchema)),
    receivedQuantity: Nullable(Type.Integer({ minimum: 0, description: 'How many came back; null until received' })),
    restock: Nullable(Type.Boolean({ description: 'Whether what came back went back in stock; null until received' })),
  })),
  note: Nullable(Type.String({ maxLength: 1000 })),
  rejectionReason: Nullable(Type.String({ maxLength: 500 })),
  refundAmount: Nullable(Type.Integer({ minimum: 0, description: 'What the receipt refunded (reason RETURN); null until received' })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { description: 'A request to send goods back, and what came of it' }))
export type Return = Static<typeof Return>
