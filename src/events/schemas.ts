import { Type, type Static } from 'typebox'
import { Component, documentAs, Envelope, Id, Nullable, PathId, Ref, Slice, Timestamp } from '../http/schemas.js'
import { commaListPattern, OrderDetail } from '../orders/schemas.js'
import { OrderEdit } from '../edits/schemas.js'
import { Fulfillment } from '../fulfillments/schemas.js'
import { Payment, RefundReasonSchema } from '../payments/schemas.js'
import { Return } from '../returns/schemas.js'

/** Every event type (CONTRACT §12), in the order of its table. */
export const EVENT_TYPES = [
  'order.placed', 'order.confirmed', 'order.cancelled', 'order.expired', 'order.delivered', 'order.deleted',
  'order.updated', 'payment.created', 'payment.succeeded', 'payment.failed', 'payment.refunded', 'payment.cancelled',
  'order.edited', 'payment.updated', 'fulfillment.created', 'fulfillment.delivered', 'fulfillment.cancelled',
  'return.requested', 'return.received', 'return.rejected', 'return.cancelled',
] as const
export const EventTypeSchema = Component('EventType', Type.Enum([...EVENT_TYPES]))
export type EventType = Static<typeof EventTypeSchema>

/** The order as an admin reads it, without `allowedActions` (which depend on who asks). */
const { allowedActions: _allowedActions, fulfillments: _fulfillments, ...orderFields } = OrderDetail.properties
export const EventOrder = Component('EventOrder', Type.Object(orderFields, {
  description: 'The order as an admin reads it, without allowedActions and fulfillments (a fulfillment.* event carries its shipment in data.fulfillment)',
}))
export type EventOrder = Static<typeof EventOrder>

export const Event = Component('Event', Type.Object({
  eventId: Id,
  type: Ref(EventTypeSchema),
  timestamp: Timestamp,
  orderId: Id,
  sequence: Type.Integer({ minimum: 1, description: 'Per order: 1, 2, 3, … without gaps, across order and payment events' }),
  data: Type.Object({
    order: Ref(EventOrder),
    payment: Nullable(Ref(Payment)),
    refund: Type.Optional(Type.Object({
      amount: Type.Integer({ minimum: 0 }),
      reason: Ref(RefundReasonSchema),
      editId: Type.Optional(Id),
      returnId: Type.Optional(Id),
    }, { description: 'On payment.refunded: the refund, why it happened, and the edit or return it settles' })),
    edit: Type.Optional(Ref(OrderEdit)),
    fulfillment: Type.Optional(Ref(Fulfillment)),
    return: Type.Optional(Ref(Return)),
  }, { description: 'The order as committed; the payment the event is about (on any other event the order\'s most recent, null while it has none); on order.edited the edit, on fulfillment.* the fulfilment, on return.* the return' }),
}, { description: 'Something that happened to an order or its payment, as committed' }))
export type Event = Static<typeof Event>

export const EventFeedQuery = Type.Object({
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Slice size, 1..100 (default 20)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The nextCursor of the previous slice' })),
  // Checked by the service (`parseList`, with its own message); the document shows the rule as a pattern.
  type: Type.Optional(documentAs(Type.String({ minLength: 1, maxLength: 500, description: 'One event type or several, comma-separated' }), {
    type: 'string',
    minLength: 1,
    maxLength: 500,
    pattern: commaListPattern(EVENT_TYPES),
    description: `One event type or several, comma-separated (${EVENT_TYPES.join(', ')}), e.g. \`order.placed,order.cancelled\``,
  })),
  orderId: Type.Optional(Id),
}, { additionalProperties: false })
export type EventFeedQuery = Static<typeof EventFeedQuery>

export const EventIdParams = Type.Object({ eventId: PathId }, { additionalProperties: false })

/** The answers' envelopes, made when this module loads (named components). */
export const EventEnvelope = Envelope(Event)
export const EventSliceEnvelope = Envelope(Slice(Event))
