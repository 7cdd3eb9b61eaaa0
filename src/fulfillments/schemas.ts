import { Type, type Static } from 'typebox'
import { Component, Envelope, Id, Nullable, Ref, Timestamp } from '../http/schemas.js'

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
