import { Type, type Static } from 'typebox'
import { Component, Envelope, Id, IdempotencyKeyField, Nullable, Page, PageQuery, PathId, Ref, Timestamp, documentAs } from '../http/schemas.js'
import { commaListPattern } from '../orders/schemas.js'

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

/** `POST /orders/{id}/returns`: the lines to send back (CONTRACT §15.4). */
export const RequestReturnBody = Type.Object({
  items: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 1, maximum: 10_000, description: 'At most what was delivered of the line minus what is returned or in open returns' }),
    reason: Type.Optional(Nullable(Ref(ReturnReasonSchema))),
  }, { additionalProperties: false }), { minItems: 1, maxItems: 100, description: 'One entry per order line, each product once' }),
  note: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
  idempotencyKey: IdempotencyKeyField,
}, { additionalProperties: false })
export type RequestReturnBody = Static<typeof RequestReturnBody>

/** `PATCH /admin/returns/{returnId}/reject`: why, shown as `rejectionReason` (CONTRACT §15.7). The body may be left out. */
export const RejectReturnBody = Type.Object({
  reason: Type.Optional(Nullable(Type.String({ maxLength: 500, description: 'Shown to the customer as rejectionReason' }))),
}, { additionalProperties: false })
export type RejectReturnBody = Static<typeof RejectReturnBody>

/** `PATCH /admin/returns/{returnId}/receive`: what came back, per line, and the refund (CONTRACT §15.4). */
export const ReceiveReturnBody = Type.Object({
  items: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 0, maximum: 10_000, description: 'How many came back: at most what the return asked for' }),
    restock: Type.Boolean({ description: 'true puts that quantity back in the product\'s stock' }),
  }, { additionalProperties: false }), {
    minItems: 1,
    maxItems: 100,
    description: 'Lines of the return, each product once; a line left out came back with nothing (receivedQuantity 0)',
  }),
  refundAmount: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'The refund (reason RETURN), 0 allowed, at most what is still refundable (captured − refunded). ' +
      'Left out: the received quantities × their unitPrice, capped at what is still refundable',
  })),
}, { additionalProperties: false })
export type ReceiveReturnBody = Static<typeof ReceiveReturnBody>

/** A path `{id}` (the order) and `{returnId}`. */
export const OrderReturnParams = Type.Object({ id: PathId, returnId: PathId }, { additionalProperties: false })
/** A path `{returnId}`. */
export const ReturnIdParams = Type.Object({ returnId: PathId }, { additionalProperties: false })

/** `GET /admin/returns`: page shape, newest first; `status` (one or several, comma-separated) and `orderId`. */
export const AdminReturnListQuery = Type.Object({
  ...PageQuery,
  // Checked by the service (`parseList`, with its own message); the document shows the rule as a pattern.
  status: Type.Optional(documentAs(Type.String({ minLength: 1, maxLength: 200, description: 'One return status or several, comma-separated' }), {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    pattern: commaListPattern(RETURN_STATUSES),
    description: `One return status or several, comma-separated (${RETURN_STATUSES.join(', ')}), e.g. \`REQUESTED\``,
  })),
  orderId: Type.Optional(Id),
}, { additionalProperties: false })
export type AdminReturnListQuery = Static<typeof AdminReturnListQuery>

/** The answers' envelopes, made when this module loads (named components). */
export const ReturnEnvelope = Envelope(Return)
export const ReturnListEnvelope = Envelope(Type.Array(Return))
export const ReturnPageEnvelope = Envelope(Page(Return))
