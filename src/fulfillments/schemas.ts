import { Type, type Static } from 'typebox'
import { Component, Envelope, Id, IdempotencyKeyField, Nullable, PathId, PlainName, Ref, Timestamp } from '../http/schemas.js'

export const FULFILLMENT_STATUSES = ['SHIPPED', 'DELIVERED', 'CANCELLED'] as const
export const FulfillmentStatusSchema = Component('FulfillmentStatus', Type.Enum([...FULFILLMENT_STATUSES], {
  description: 'SHIPPED, then DELIVERED; a SHIPPED fulfilment may be CANCELLED, which unships its quantities',
}))

/** One shipment of some of an order's goods (CONTRACT §15.3). */
export const Fulfillment = Component('Fulfillment', Type.Object({
  fulfillmentId: Id,
  orderId: Id,
  status: Ref(FulfillmentStatusSchema),
  items: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 1, description: 'How many of the line this shipment holds' }),
  }), { description: 'The lines shipped, in the order\'s line order' }),
  carrier: Nullable(Type.String()),
  trackingNumber: Nullable(Type.String()),
  trackingUrl: Nullable(Type.String({ format: 'uri' })),
  shippedAt: Timestamp,
  deliveredAt: Nullable(Timestamp),
  createdAt: Timestamp,
}, { description: 'A shipment of some of an order\'s goods, with its carrier and tracking when given' }))
export type Fulfillment = Static<typeof Fulfillment>

/** `GET /orders/{id}/fulfillments`'s answer, made when this module loads (as every component). */
export const FulfillmentListAnswer = Envelope(Type.Array(Fulfillment))

/** An order's fulfilment in a path: `/orders/{id}/fulfillments/{fulfillmentId}`. */
export const FulfillmentParams = Type.Object({ id: PathId, fulfillmentId: PathId }, { additionalProperties: false })

/** `POST /admin/orders/{id}/fulfillments` (CONTRACT §15.3): what leaves, with whom, and how to follow it. */
export const ShipBody = Type.Object({
  items: Type.Optional(Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 1, maximum: 10000, description: 'How many of the line leave in this shipment; at most what is left to ship' }),
  }, { additionalProperties: false }), {
    minItems: 1,
    maxItems: 100,
    description: 'The lines and quantities that leave, each product once; absent = everything not yet shipped',
  })),
  carrier: Type.Optional(PlainName({ minLength: 1, maxLength: 100, examples: ['UPS'] })),
  trackingNumber: Type.Optional(PlainName({ minLength: 1, maxLength: 100, examples: ['1Z999AA10123456784'] })),
  trackingUrl: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2048,
    pattern: '^https://[^\\s]+$',
    description: 'An absolute https:// link where the customer follows the parcel',
    examples: ['https://www.ups.com/track?tracknum=1Z999AA10123456784'],
  })),
  idempotencyKey: IdempotencyKeyField,
}, { additionalProperties: false })
export type ShipBody = Static<typeof ShipBody>

export const FulfillmentEnvelope = Envelope(Fulfillment)
