import { Type, type Static } from 'typebox'
import { Component, Envelope, Id, IdempotencyKeyField, Money, Nullable, PathId, Ref, Timestamp } from '../http/schemas.js'
import { ShippingAddress } from '../orders/schemas.js'
import { RoleSchema } from '../members/schemas.js'

/** How an edit settles the difference it makes (CONTRACT §15.2, §15.7). */
export const SETTLEMENT_KINDS = ['NONE', 'PAYMENT_ADJUSTED', 'REFUND', 'PAYMENT'] as const
export const SettlementKindSchema = Component('EditSettlementKind', Type.Enum([...SETTLEMENT_KINDS], {
  description: 'NONE: nothing confirmed yet; PAYMENT_ADJUSTED: the open payment\'s amount became the new total; REFUND: money ' +
    'captured and the total fell, the difference refunded; PAYMENT: money captured and the total rose, a new PENDING payment for the difference',
}))
export type SettlementKind = Static<typeof SettlementKindSchema>

/** A change of what was ordered, with how its money was settled (CONTRACT §15.2). */
export const OrderEdit = Component('OrderEdit', Type.Object({
  editId: Nullable(Id),
  orderId: Id,
  fromVersion: Type.Integer({ minimum: 1, description: 'The order\'s version the edit applied to' }),
  toVersion: Type.Integer({ minimum: 1, description: 'The order\'s version after it' }),
  changes: Type.Array(Type.Object({
    productId: Id,
    productName: Type.String(),
    quantityBefore: Type.Integer({ minimum: 0 }),
    quantityAfter: Type.Integer({ minimum: 0 }),
    unitPrice: Money,
  }), { description: 'The lines the edit changed, in the order the request listed them' }),
  shippingAddressChanged: Type.Boolean(),
  totalBefore: Money,
  totalAfter: Money,
  settlement: Type.Object({
    kind: Ref(SettlementKindSchema),
    amount: Type.Integer({ minimum: 0, description: 'The money the edit moves or asks for (never negative); 0 for NONE' }),
    paymentId: Nullable(Id),
  }, { description: 'kind, the money moved or asked for, and the payment adjusted, refunded (the newest one touched) or opened (null for NONE)' }),
  actorId: Id,
  actorRole: Ref(RoleSchema),
  createdAt: Timestamp,
}, { description: 'An edit of an order\'s lines or address, and how its difference in money was settled; editId is null in a dry-run preview' }))
export type OrderEdit = Static<typeof OrderEdit>

/** `POST /orders/{id}/edits`'s body (CONTRACT §15.2). */
export const EditOrderBody = Type.Object({
  changes: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 0, maximum: 10_000, description: 'The line\'s new quantity: 0 removes it; a product not on the order adds a line at its current price' }),
  }, { additionalProperties: false }), { minItems: 1, maxItems: 100, description: 'Each product at most once' }),
  shippingAddress: Type.Optional(Nullable(ShippingAddress)),
  idempotencyKey: IdempotencyKeyField,
}, { additionalProperties: false })
export type EditOrderBody = Static<typeof EditOrderBody>

export const EditQuery = Type.Object({
  dryRun: Type.Optional(Type.Boolean({ description: '`true`: answer 200 with the edit as it would be applied (editId null) and change nothing' })),
}, { additionalProperties: false })

export const EditIdParams = Type.Object({ id: PathId, editId: PathId }, { additionalProperties: false })

/** The answers' envelopes, made when this module loads (as every component). */
export const OrderEditAnswer = Envelope(OrderEdit)
export const OrderEditListAnswer = Envelope(Type.Array(OrderEdit))
