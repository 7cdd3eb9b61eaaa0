import { Type, type Static } from 'typebox'
import { RoleSchema } from '../members/schemas.js'
import { Currency, Id, IdempotencyKeyField, Money, Nullable, PageQuery, SliceQuery, SortQuery, Timestamp, TimestampQuery } from '../http/schemas.js'

export const ORDER_STATUSES = ['PENDING', 'PLACED', 'CONFIRMED', 'DELIVERED', 'CANCELLED', 'DELETED'] as const
export const OrderStatusSchema = Type.Enum([...ORDER_STATUSES])
export type OrderStatus = Static<typeof OrderStatusSchema>

/** The state-changing verbs a caller may be offered in `allowedActions`. */
export const VerbSchema = Type.Enum(['confirm', 'cancel', 'delete', 'deliver'])
export type Verb = Static<typeof VerbSchema>

/** Every `action` a history entry can carry. */
export const OrderActionSchema = Type.Enum(['create', 'confirm', 'cancel', 'deliver', 'delete', 'update', 'expire'])
export type OrderAction = Static<typeof OrderActionSchema>

const ShippingAddress = Type.String({ maxLength: 500, examples: ['1 Main St, Springfield'] })
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

export const OrderItem = Type.Object({
  productId: Id,
  productName: Type.String(),
  quantity: Type.Integer(),
  unitPrice: Money,
  lineTotal: Money,
})
export type OrderItem = Static<typeof OrderItem>

export const OrderDetail = Type.Object({
  orderId: Id,
  customerId: Id,
  status: OrderStatusSchema,
  items: Type.Array(OrderItem),
  totalAmount: Money,
  currency: Currency,
  shippingAddress: Nullable(Type.String()),
  memo: Nullable(Type.String()),
  paymentId: Nullable(Id),
  version: Type.Integer({ description: 'Increases with every change; the ETag is derived from it' }),
  allowedActions: Type.Array(VerbSchema, { description: 'The verbs the caller may apply now' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type OrderDetail = Static<typeof OrderDetail>

export const OrderSummary = Type.Object({
  orderId: Id,
  customerId: Id,
  status: OrderStatusSchema,
  itemCount: Type.Integer({ description: 'Number of order lines' }),
  totalAmount: Money,
  currency: Currency,
  createdAt: Timestamp,
})
export type OrderSummary = Static<typeof OrderSummary>

export const HistoryEntry = Type.Object({
  from: Nullable(OrderStatusSchema),
  to: OrderStatusSchema,
  action: OrderActionSchema,
  actorId: Nullable(Id),
  actorRole: Nullable(RoleSchema),
  at: Timestamp,
})
export type HistoryEntry = Static<typeof HistoryEntry>

const StatusFilter = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'One status or several, comma-separated',
  examples: ['PLACED,CONFIRMED'],
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

const AdminFilters = {
  status: Type.Optional(StatusFilter),
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
  status: Type.Optional(Nullable(OrderStatusSchema)),
  memo: Type.Optional(Nullable(Memo)),
}, { additionalProperties: false })
export type PatchOrderBody = Static<typeof PatchOrderBody>

export const PutOrderBody = Type.Object({
  status: OrderStatusSchema,
  memo: Nullable(Memo),
  shippingAddress: Nullable(ShippingAddress),
}, { additionalProperties: false })
export type PutOrderBody = Static<typeof PutOrderBody>
