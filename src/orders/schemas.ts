import { Type, type Static } from 'typebox'
import { RoleSchema } from '../members/schemas.js'
import { Fulfillment } from '../fulfillments/schemas.js'
import { OrderPayment } from '../payments/schemas.js'
import {
  Component, Currency, documentAs, Envelope, Id, IdempotencyKeyField, Money, Nullable, Page, PageQuery, Ref, Slice, SliceQuery, SortQuery, Timestamp, TimestampQuery,
} from '../http/schemas.js'

export const ORDER_STATUSES = ['PENDING', 'PLACED', 'CONFIRMED', 'DELIVERED', 'CANCELLED', 'DELETED'] as const
export const OrderStatusSchema = Component('OrderStatus', Type.Enum([...ORDER_STATUSES], {
  description: 'PLACED → CONFIRMED → DELIVERED, or CANCELLED; DELETED is a soft delete. PENDING is a legacy status: no order ' +
    'placed through this API enters it; orders carried over from an earlier system may still have it, and it behaves as ' +
    'PLACED everywhere (the same verbs and transitions, no reservation deadline).',
}))
export type OrderStatus = Static<typeof OrderStatusSchema>

/** What the order's money says (CONTRACT §15.1, §15.7), stored on the order and kept by every change that moves money. */
export const ORDER_PAYMENT_STATUSES = ['UNPAID', 'PARTIALLY_PAID', 'PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'] as const
export const OrderPaymentStatusSchema = Component('OrderPaymentStatus', Type.Enum([...ORDER_PAYMENT_STATUSES], {
  description: 'UNPAID: nothing captured (also before confirm); REFUNDED: everything captured was refunded; PARTIALLY_PAID: captured, ' +
    'balanceDue > 0; PARTIALLY_REFUNDED: nothing due, something refunded; PAID: nothing due, nothing refunded. Decided in that order.',
}))
export type OrderPaymentStatus = Static<typeof OrderPaymentStatusSchema>

/** How much of the order has shipped (CONTRACT §15.3), stored on the order and kept by every shipment. */
export const ORDER_FULFILLMENT_STATUSES = ['UNFULFILLED', 'PARTIALLY_FULFILLED', 'FULFILLED'] as const
export const OrderFulfillmentStatusSchema = Component('OrderFulfillmentStatus', Type.Enum([...ORDER_FULFILLMENT_STATUSES], {
  description: 'UNFULFILLED: nothing shipped; PARTIALLY_FULFILLED: some of it shipped; FULFILLED: every line fully shipped ' +
    '(shipments that were cancelled do not count).',
}))

/** The money fields of detail and summary (CONTRACT §15.1). */
const MoneyFields = {
  paidAmount: Type.Integer({ minimum: 0, description: 'Captured, over all the order\'s payments (minor units)' }),
  refundedAmount: Type.Integer({ minimum: 0, description: 'Refunded, over all the order\'s refunds (minor units)' }),
  balanceDue: Type.Integer({
    minimum: 0,
    description: 'What the customer still owes: totalAmount − credited − (paidAmount − refundedAmount), where credited is the sum of the ' +
      'GOODWILL and RETURN refunds. totalAmount before confirm; 0 on a CANCELLED or DELETED order.',
  }),
  paymentStatus: Ref(OrderPaymentStatusSchema),
  fulfillmentStatus: Ref(OrderFulfillmentStatusSchema),
}

/** A comma-separated list of `values` (spaces around each allowed), as `parseList` (http/paging.ts) reads it. */
export const commaListPattern = (values: readonly string[]) => {
  const one = `\\s*(${values.map(value => value.replaceAll('.', '\\.')).join('|')})\\s*`
  return `^${one}(,${one})*$`
}

/** The state-changing verbs a caller may be offered in `allowedActions`. */
export const VerbSchema = Component('OrderVerb', Type.Enum(['confirm', 'cancel', 'delete', 'deliver', 'edit', 'fulfil', 'return']))
/** The status verbs: the ones `allowedActions` lists that move the order to another status. */
export type Verb = 'confirm' | 'cancel' | 'delete' | 'deliver'
/** Everything `allowedActions` may list (CONTRACT §15.5). */
export type OrderActionName = Static<typeof VerbSchema>

/** Every `action` a history entry can carry. */
export const OrderActionSchema = Component('OrderAction', Type.Enum([
  'create', 'confirm', 'cancel', 'deliver', 'delete', 'update', 'expire', 'edit',
  'fulfil', 'deliver_fulfillment', 'cancel_fulfillment', 'request_return', 'cancel_return', 'reject_return', 'receive_return',
], { description: 'What the step did: a status verb, update (memo or address), expire (the service), edit (the lines), a shipment\'s steps or a return\'s' }))
export type OrderAction = Static<typeof OrderActionSchema>

export const ShippingAddress = Type.String({ maxLength: 500, examples: ['1 Main St, Springfield'] })
const Memo = Type.String({ maxLength: 1000, examples: ['Leave at the door'] })

export const CreateOrderBody = Type.Object({
  customerId: Id,
  items: Type.Array(Type.Object({
    productId: Id,
    quantity: Type.Integer({ minimum: 1, maximum: 10_000 }),
  }, { additionalProperties: false }), { minItems: 1, maxItems: 100 }),
  idempotencyKey: IdempotencyKeyField,
  shippingAddress: Type.Optional(Nullable(ShippingAddress)),
  memo: Type.Optional(Nullable(Memo)),
}, { additionalProperties: false })
export type CreateOrderBody = Static<typeof CreateOrderBody>

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'The ETag of the version being changed; a mismatch is 412' })),
})

export const OrderItem = Component('OrderItem', Type.Object({
  productId: Id,
  productName: Type.String(),
  quantity: Type.Integer(),
  unitPrice: Money,
  lineTotal: Money,
  fulfilledQuantity: Type.Integer({ minimum: 0, description: 'How many of the line left in fulfilments that are not CANCELLED' }),
  returnedQuantity: Type.Integer({ minimum: 0, description: 'How many of the line came back in received returns (0 until returns exist)' }),
}, { description: 'An order line at the price it was ordered at, and how much of it shipped' }))
export type OrderItem = Static<typeof OrderItem>

export const OrderDetail = Component('Order', Type.Object({
  orderId: Id,
  customerId: Id,
  status: Ref(OrderStatusSchema),
  items: Type.Array(Ref(OrderItem)),
  totalAmount: Money,
  currency: Currency,
  shippingAddress: Nullable(Type.String()),
  memo: Nullable(Type.String()),
  paymentId: Nullable(Id),
  payments: Type.Array(Ref(OrderPayment), { description: 'Every payment of the order, oldest first' }),
  ...MoneyFields,
  fulfillments: Type.Array(Ref(Fulfillment), { description: 'Every shipment of the order, oldest first (cancelled ones too)' }),
  version: Type.Integer({ description: 'Increases with every change; the ETag is derived from it' }),
  allowedActions: Type.Array(Ref(VerbSchema), {
    description: 'What the caller may do now: the status verbs, and edit, fulfil (ship) and return. Ignore values you do not know: new ones may be added.',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { description: 'An order with its items, as its customer or an admin reads it' }))
export type OrderDetail = Static<typeof OrderDetail>

export const OrderSummary = Component('OrderSummary', Type.Object({
  orderId: Id,
  customerId: Id,
  status: Ref(OrderStatusSchema),
  itemCount: Type.Integer({ description: 'Number of order lines' }),
  totalAmount: Money,
  currency: Currency,
  ...MoneyFields,
  createdAt: Timestamp,
}, { description: 'An order as lists show it' }))
export type OrderSummary = Static<typeof OrderSummary>

export const HistoryEntry = Component('OrderHistoryEntry', Type.Object({
  from: Nullable(Ref(OrderStatusSchema)),
  to: Ref(OrderStatusSchema),
  action: Ref(OrderActionSchema),
  actorId: Nullable(Id),
  actorRole: Nullable(Ref(RoleSchema)),
  editId: Type.Optional(Id),
  fulfillmentId: Type.Optional(Id),
  returnId: Type.Optional(Id),
  at: Timestamp,
}, { description: 'One change of an order: its status, memo, address or lines, a shipment or a return. editId, fulfillmentId or returnId name the record the step made or changed, when it has one.' }))
export type HistoryEntry = Static<typeof HistoryEntry>

/** Checked by the service (`parseList`, with its own message); the document shows the rule as a pattern. */
const StatusFilter = documentAs(Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'One status or several, comma-separated',
}), {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: commaListPattern(ORDER_STATUSES),
  // No `examples`: Swagger UI's "Try it out" would pre-fill an optional filter and hide orders.
  description: `One status or several, comma-separated (${ORDER_STATUSES.join(', ')}), e.g. \`PLACED,CONFIRMED\``,
})

export const OrderListQuery = Type.Object({
  ...SliceQuery,
  status: Type.Optional(StatusFilter),
}, { additionalProperties: false })
export type OrderListQuery = Static<typeof OrderListQuery>

const SearchFilters = {
  createdFrom: Type.Optional(TimestampQuery),
  createdTo: Type.Optional(TimestampQuery),
  minTotal: Type.Optional(Money),
  maxTotal: Type.Optional(Money),
  productId: Type.Optional(Id),
}

export const OrderSearchQuery = Type.Object({
  ...SliceQuery,
  status: Type.Optional(StatusFilter),
  ...SearchFilters,
}, { additionalProperties: false })
export type OrderSearchQuery = Static<typeof OrderSearchQuery>

/** The fields admin lists sort on, and their columns; the first is the default. */
export const ORDER_SORT = { createdAt: 'created_at', updatedAt: 'updated_at', totalAmount: 'total_amount', status: 'status' } as const

/** Checked by the service, as `status`. */
const PaymentStatusFilter = documentAs(Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'One payment status or several, comma-separated',
}), {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: commaListPattern(ORDER_PAYMENT_STATUSES),
  // No `examples`, as `status`.
  description: `The order's paymentStatus: one or several, comma-separated (${ORDER_PAYMENT_STATUSES.join(', ')}), e.g. \`UNPAID,PARTIALLY_PAID\``,
})

/** Checked by the service, as `status`. */
const FulfillmentStatusFilter = documentAs(Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'One fulfilment status or several, comma-separated',
}), {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: commaListPattern(ORDER_FULFILLMENT_STATUSES),
  // No `examples`, as `status`.
  description: `The order's fulfillmentStatus: one or several, comma-separated (${ORDER_FULFILLMENT_STATUSES.join(', ')}), e.g. \`UNFULFILLED,PARTIALLY_FULFILLED\``,
})

const AdminFilters = {
  status: Type.Optional(StatusFilter),
  paymentStatus: Type.Optional(PaymentStatusFilter),
  fulfillmentStatus: Type.Optional(FulfillmentStatusFilter),
  hasOpenReturn: Type.Optional(Type.Enum(['true', 'false'], {
    description: 'true: only orders with a REQUESTED return; false: only orders without one',
  })),
  customerId: Type.Optional(Id),
  ...SortQuery(Object.keys(ORDER_SORT)),
}

/** `GET /admin/orders`: every customer, every status (DELETED included), page shape. */
export const AdminOrderListQuery = Type.Object({ ...PageQuery, ...AdminFilters }, { additionalProperties: false })
/** `GET /admin/orders/search`: the list's filters plus dates, totals and a product. */
export const AdminOrderSearchQuery = Type.Object({ ...PageQuery, ...AdminFilters, ...SearchFilters }, { additionalProperties: false })
export type AdminOrderSearchQuery = Static<typeof AdminOrderSearchQuery>
/** `GET /admin/orders/export`: the search's filters and sort; every matching order, no paging. */
export const AdminOrderExportQuery = Type.Object({ ...AdminFilters, ...SearchFilters }, { additionalProperties: false })
export type AdminOrderExportQuery = Static<typeof AdminOrderExportQuery>

/** An admin's change: deliver or cancel, and the memo; null or absent = unchanged. */
export const AdminPatchOrderBody = Type.Object({
  status: Type.Optional(Nullable(Type.Enum(['DELIVERED', 'CANCELLED']))),
  memo: Type.Optional(Nullable(Memo)),
}, { additionalProperties: false })
export type AdminPatchOrderBody = Static<typeof AdminPatchOrderBody>

export const PatchOrderBody = Type.Object({
  orderId: Id,
  status: Type.Optional(Nullable(Ref(OrderStatusSchema))),
  memo: Type.Optional(Nullable(Memo)),
}, { additionalProperties: false })
export type PatchOrderBody = Static<typeof PatchOrderBody>

export const PutOrderBody = Type.Object({
  status: Ref(OrderStatusSchema),
  memo: Nullable(Memo),
  shippingAddress: Nullable(ShippingAddress),
}, { additionalProperties: false })
export type PutOrderBody = Static<typeof PutOrderBody>

/** The answers' envelopes, made when this module loads (named components: `OrderEnvelope`, …). */
export const OrderEnvelope = Envelope(OrderDetail)
export const OrderSummarySliceEnvelope = Envelope(Slice(OrderSummary))
export const OrderSummaryPageEnvelope = Envelope(Page(OrderSummary))
export const OrderItemListEnvelope = Envelope(Type.Array(OrderItem))
export const OrderHistoryEntryListEnvelope = Envelope(Type.Array(HistoryEntry))
