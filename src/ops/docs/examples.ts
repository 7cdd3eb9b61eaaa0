import type { ApiKey, CreatedApiKey, TokenPair } from '../../auth/schemas.js'
import type { Category, Product } from '../../catalog/schemas.js'
import type { OrderEdit } from '../../edits/schemas.js'
import type { Event, EventOrder, EventType } from '../../events/schemas.js'
import type { Fulfillment } from '../../fulfillments/schemas.js'
import type { Return } from '../../returns/schemas.js'
import type { Member, MyAccount } from '../../members/schemas.js'
import type { HistoryEntry, OrderDetail, OrderItem, OrderStatus, OrderSummary } from '../../orders/schemas.js'
import type { Payment, PaymentStatus } from '../../payments/schemas.js'
import type { WebhookDelivery, WebhookEndpoint, WebhookEndpointWithSecret } from '../../webhooks/schemas.js'

/**
 * The examples of the OpenAPI document, in one place (ops/openapi.ts puts them on the media types).
 * They tell one story: Ada (member 7) orders two bags of beans and filter papers (order 42), confirms,
 * pays (payment 9). Typed with the schemas' own types, and validated against the document's schemas
 * by test/ops/openapi-examples.test.ts, so an example cannot go stale silently.
 */

const PLACED_AT = '2026-11-22T09:30:00.000Z'
const CONFIRMED_AT = '2026-11-22T09:31:12.408Z'
const PAID_AT = '2026-11-22T09:31:40.125Z'

const beans: Product = {
  productId: 12,
  name: 'Espresso beans, 1 kg',
  description: 'Dark roast, whole beans',
  price: 2450,
  currency: 'USD',
  stockQuantity: 98,
  categoryId: 3,
  status: 'ACTIVE',
  createdAt: '2026-11-20T08:00:00.000Z',
  updatedAt: PLACED_AT,
}

const items: OrderItem[] = [
  { productId: 12, productName: 'Espresso beans, 1 kg', quantity: 2, unitPrice: 2450, lineTotal: 4900, fulfilledQuantity: 0, returnedQuantity: 0 },
  { productId: 15, productName: 'Filter papers, 100', quantity: 1, unitPrice: 350, lineTotal: 350, fulfilledQuantity: 0, returnedQuantity: 0 },
]

const order: OrderDetail = {
  orderId: 42,
  customerId: 7,
  status: 'PLACED',
  items,
  totalAmount: 5250,
  currency: 'USD',
  shippingAddress: '1 Main St, Springfield',
  memo: 'Leave at the door',
  paymentId: null,
  payments: [],
  paidAmount: 0,
  refundedAmount: 0,
  balanceDue: 5250,
  paymentStatus: 'UNPAID',
  fulfillmentStatus: 'UNFULFILLED',
  fulfillments: [],
  version: 1,
  allowedActions: ['confirm', 'cancel', 'delete', 'edit'],
  createdAt: PLACED_AT,
  updatedAt: PLACED_AT,
}

const payment: Payment = {
  paymentId: 9,
  orderId: 42,
  amount: 5250,
  refundedAmount: 0,
  currency: 'USD',
  status: 'COMPLETED',
  method: 'CARD',
  failureReason: null,
  createdAt: CONFIRMED_AT,
  updatedAt: PAID_AT,
}

const member: Member = {
  memberId: 7,
  email: 'ada@example.com',
  name: 'Ada Lovelace',
  role: 'USER',
  status: 'ACTIVE',
  emailVerified: true,
  createdAt: '2026-11-01T10:00:00.000Z',
}

const myAccount: MyAccount = { ...member, identityProviders: [] }

const tokens: TokenPair = {
  accessToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI3Iiwicm9sZSI6IlVTRVIifQ.c2lnbmF0dXJlLW9mLXRoZS1leGFtcGxl',
  refreshToken: 'Yq3nK8vB2mR5tW9xZ1cF4hJ7lP0sD6gA-eU_oI3rT8k',
  tokenType: 'Bearer',
  expiresIn: 900,
  refreshExpiresIn: 1209600,
}

const createdKey: CreatedApiKey = {
  keyId: 3,
  name: 'warehouse sync',
  prefix: 'k7Rt2pQx',
  secret: 'k7Rt2pQxV9mB4nL8cW1zH6fJ3sD0gA5eY2uT7oI9rK4',
  createdAt: '2026-11-21T16:05:00.000Z',
}
const apiKey: ApiKey = { keyId: 3, name: 'warehouse sync', prefix: 'k7Rt2pQx', createdAt: '2026-11-21T16:05:00.000Z', revokedAt: null }

const category: Category = { categoryId: 3, name: 'Coffee', parentId: null }

const summary: OrderSummary = {
  orderId: 42,
  customerId: 7,
  status: 'PLACED',
  itemCount: 2,
  totalAmount: 5250,
  currency: 'USD',
  paidAmount: 0,
  refundedAmount: 0,
  balanceDue: 5250,
  paymentStatus: 'UNPAID',
  fulfillmentStatus: 'UNFULFILLED',
  createdAt: PLACED_AT,
}

const history: HistoryEntry = { from: null, to: 'PLACED', action: 'create', actorId: 7, actorRole: 'USER', at: PLACED_AT }

const endpoint: WebhookEndpoint = {
  endpointId: 5,
  url: 'https://hooks.example.com/orders',
  eventTypes: ['order.placed', 'order.cancelled', 'payment.refunded'],
  description: 'Fulfilment system',
  status: 'ACTIVE',
  createdAt: '2026-11-20T12:00:00.000Z',
  updatedAt: '2026-11-20T12:00:00.000Z',
}
const endpointWithSecret: WebhookEndpointWithSecret = { ...endpoint, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4uGlSHSuMfY=' }

const delivery: WebhookDelivery = {
  deliveryId: 31,
  endpointId: 5,
  eventId: 812,
  eventType: 'order.placed',
  status: 'SUCCEEDED',
  attempts: 1,
  lastAttemptAt: '2026-11-22T09:30:00.412Z',
  nextAttemptAt: null,
  lastResponseStatus: 204,
  lastError: null,
}

/** Before confirm, Ada asks for a third bag: her order's total goes from 5250 to 7700. */
const orderEdit: OrderEdit = {
  editId: 4,
  orderId: 42,
  fromVersion: 2,
  toVersion: 3,
  changes: [{ productId: 12, productName: 'Espresso beans, 1 kg', quantityBefore: 2, quantityAfter: 3, unitPrice: 2450 }],
  shippingAddressChanged: false,
  totalBefore: 5250,
  totalAfter: 7700,
  settlement: { kind: 'NONE', amount: 0, paymentId: null },
  actorId: 7,
  actorRole: 'USER',
  createdAt: '2026-11-22T09:30:40.000Z',
}

/** The beans leave first, with tracking; the filter papers follow. */
const fulfillment: Fulfillment = {
  fulfillmentId: 3,
  orderId: 42,
  status: 'SHIPPED',
  items: [{ productId: 12, quantity: 2 }],
  carrier: 'UPS',
  trackingNumber: '1Z999AA10123456784',
  trackingUrl: 'https://www.ups.com/track?tracknum=1Z999AA10123456784',
  shippedAt: '2026-11-23T14:00:00.000Z',
  deliveredAt: null,
  createdAt: '2026-11-23T14:00:00.000Z',
}

/** One bag arrived damaged and goes back. */
const orderReturn: Return = {
  returnId: 5,
  orderId: 42,
  status: 'REQUESTED',
  items: [{ productId: 12, quantity: 1, reason: 'DAMAGED', receivedQuantity: null, restock: null }],
  note: 'The bag was torn open',
  rejectionReason: null,
  refundAmount: null,
  createdAt: '2026-11-26T10:00:00.000Z',
  updatedAt: '2026-11-26T10:00:00.000Z',
}

/** The return once its bag came back, was not restocked (torn) and was refunded at its unit price. */
const receivedReturn: Return = {
  ...orderReturn,
  status: 'RECEIVED',
  items: [{ ...orderReturn.items[0]!, receivedQuantity: 1, restock: false }],
  refundAmount: 2450,
  updatedAt: '2026-11-28T09:00:00.000Z',
}

/**
 * What each event type leaves the order and its payment as, and the event's place in the order's
 * `sequence` (placed 1; confirmed with its payment 2–3; paid 4; then one of the endings).
 */
const EVENT_STATES: Record<EventType, {
  status: OrderStatus, payment: PaymentStatus | null, sequence: number, refund?: number, subject?: Pick<Event['data'], 'edit' | 'fulfillment' | 'return'>
}> = {
  'order.placed': { status: 'PLACED', payment: null, sequence: 1 },
  'order.updated': { status: 'PLACED', payment: null, sequence: 2 },
  'payment.created': { status: 'CONFIRMED', payment: 'PENDING', sequence: 3 },
  'order.confirmed': { status: 'CONFIRMED', payment: 'PENDING', sequence: 4 },
  'payment.failed': { status: 'CONFIRMED', payment: 'FAILED', sequence: 5 },
  'payment.succeeded': { status: 'CONFIRMED', payment: 'COMPLETED', sequence: 6 },
  'order.delivered': { status: 'DELIVERED', payment: 'COMPLETED', sequence: 7 },
  'payment.refunded': { status: 'CANCELLED', payment: 'REFUNDED', sequence: 7, refund: 5250 },
  'order.cancelled': { status: 'CANCELLED', payment: 'REFUNDED', sequence: 8 },
  'order.deleted': { status: 'DELETED', payment: 'REFUNDED', sequence: 8 },
  'payment.cancelled': { status: 'CONFIRMED', payment: 'CANCELLED', sequence: 5 },
  'order.expired': { status: 'CANCELLED', payment: null, sequence: 2 },
  'order.edited': { status: 'PLACED', payment: null, sequence: 2, subject: { edit: orderEdit } },
  'payment.updated': { status: 'CONFIRMED', payment: 'PENDING', sequence: 5 },
  'fulfillment.created': { status: 'CONFIRMED', payment: 'COMPLETED', sequence: 7, subject: { fulfillment } },
  'fulfillment.delivered': { status: 'CONFIRMED', payment: 'COMPLETED', sequence: 8, subject: { fulfillment: { ...fulfillment, status: 'DELIVERED', deliveredAt: '2026-11-25T11:20:00.000Z' } } },
  'fulfillment.cancelled': { status: 'CONFIRMED', payment: 'COMPLETED', sequence: 8, subject: { fulfillment: { ...fulfillment, status: 'CANCELLED' } } },
  'return.requested': { status: 'DELIVERED', payment: 'COMPLETED', sequence: 9, subject: { return: orderReturn } },
  'return.received': { status: 'DELIVERED', payment: 'COMPLETED', sequence: 11, subject: { return: receivedReturn } },
  'return.rejected': { status: 'DELIVERED', payment: 'COMPLETED', sequence: 10, subject: { return: { ...orderReturn, status: 'REJECTED', rejectionReason: 'No damage visible on the photos', updatedAt: '2026-11-27T09:00:00.000Z' } } },
  'return.cancelled': { status: 'DELIVERED', payment: 'COMPLETED', sequence: 10, subject: { return: { ...orderReturn, status: 'CANCELLED', updatedAt: '2026-11-26T12:00:00.000Z' } } },
}

/** An event of `type` about order 42, as the feed shows it and a webhook delivers it. */
export function eventExample (type: EventType): Event {
  const state = EVENT_STATES[type]
  const timestamp = `2026-11-22T09:${30 + state.sequence}:00.000Z`
  const { allowedActions: _allowedActions, fulfillments: _fulfillments, ...fields } = order
  const paid = state.payment === 'COMPLETED' || state.payment === 'REFUNDED' ? payment.amount : 0
  const refunded = state.payment === 'REFUNDED' ? payment.amount : 0
  const ended = state.status === 'CANCELLED' || state.status === 'DELETED' || type === 'payment.cancelled'
  const eventOrder: EventOrder = {
    ...fields,
    status: state.status,
    paymentId: state.payment === null ? null : payment.paymentId,
    payments: state.payment === null ? [] : [{ paymentId: payment.paymentId, amount: payment.amount, refundedAmount: refunded, status: state.payment }],
    paidAmount: paid,
    refundedAmount: refunded,
    balanceDue: ended ? 0 : order.totalAmount - (paid - refunded),
    paymentStatus: paid === 0 ? 'UNPAID' : refunded >= paid ? 'REFUNDED' : 'PAID',
    fulfillmentStatus: state.status === 'DELIVERED' ? 'FULFILLED' : 'UNFULFILLED',
    items: state.status === 'DELIVERED' ? items.map(item => ({ ...item, fulfilledQuantity: item.quantity })) : items,
    version: state.sequence,
    updatedAt: timestamp,
    ...(type === 'order.updated' ? { memo: 'Ring twice' } : {}),
  }
  if (type === 'payment.cancelled') eventOrder.status = 'CANCELLED'
  const eventPayment: Payment | null = state.payment === null
    ? null
    : {
        ...payment,
        status: state.payment,
        method: ['COMPLETED', 'REFUNDED'].includes(state.payment) ? 'CARD' : null,
        failureReason: state.payment === 'FAILED' ? 'card_declined' : null,
        refundedAmount: state.payment === 'REFUNDED' ? payment.amount : 0,
        updatedAt: timestamp,
      }
  return {
    eventId: 800 + state.sequence,
    type,
    timestamp,
    orderId: order.orderId,
    sequence: state.sequence,
    data: {
      order: eventOrder,
      payment: eventPayment,
      ...(state.refund === undefined ? {} : { refund: { amount: state.refund, reason: 'CANCEL' } }),
      ...state.subject,
    },
  }
}

/** The example of each named component that a 2xx answer holds (its envelope, list or page is built around it). */
export const COMPONENT_EXAMPLES: Record<string, unknown> = {
  Order: order,
  OrderSummary: summary,
  OrderItem: items[0],
  OrderHistoryEntry: history,
  Fulfillment: fulfillment,
  OrderEdit: orderEdit,
  Return: orderReturn,
  Product: beans,
  Category: category,
  Member: member,
  MyAccount: myAccount,
  TokenPair: tokens,
  ApiKey: apiKey,
  CreatedApiKey: createdKey,
  Payment: payment,
  OrderPayment: { paymentId: 9, amount: 5250, refundedAmount: 0, status: 'COMPLETED' },
  Event: eventExample('order.placed'),
  WebhookEndpoint: endpoint,
  WebhookEndpointWithSecret: endpointWithSecret,
  WebhookDelivery: delivery,
  Health: { status: 'UP', components: { db: { status: 'UP', details: { database: 'PostgreSQL' } } } },
  Probe: { status: 'UP' },
  BuildInfo: { app: { name: 'order-service', version: '0.1.0' }, build: { time: '2026-11-22T08:00:00.000Z' }, git: { commit: '4f2d9c1' } },
  MetricNames: { names: ['http.server.requests', 'orders.placed', 'webhook.deliveries'] },
  Metric: {
    name: 'http.server.requests',
    description: 'HTTP server request durations',
    baseUnit: 'seconds',
    measurements: [{ statistic: 'COUNT', value: 1532 }, { statistic: 'TOTAL_TIME', value: 4.81 }],
    availableTags: [{ tag: 'method', values: ['GET', 'POST'] }, { tag: 'status', values: ['200', '201', '404'] }],
  },
}

/** A media type's examples: one value, or several named ones (e.g. the two ways to log in). */
export type MediaExample = { example: unknown } | { examples: Record<string, { summary: string, value: unknown }> }

const one = (example: unknown): MediaExample => ({ example })

const productBody = { name: 'Espresso beans, 1 kg', description: 'Dark roast, whole beans', price: 2450, stockQuantity: 100, categoryId: 3, status: 'ACTIVE' }

/** The request body of each operation that takes one, by `method path` as the document writes them. */
export const REQUEST_EXAMPLES: Record<string, MediaExample> = {
  'post /api/v1/members': one({ email: 'ada@example.com', password: 'correct horse battery staple', name: 'Ada Lovelace' }),
  'patch /api/v1/members/{id}': one({ name: 'Ada King' }),
  'post /api/v1/members/email/verify': one({ token: 'v3rT9kLm2QxZ8pW4nB6cH1jF5sD7gA0eY' }),
  'post /api/v1/auth/login': {
    examples: {
      password: { summary: 'With email and password', value: { email: 'ada@example.com', password: 'correct horse battery staple' } },
      loginCode: { summary: 'With the one-time code of an OpenID sign-in', value: { loginCode: 'lc_Hq8Zt2Wm5Rv9Kx3Pn7Bd' } },
    },
  },
  'post /api/v1/auth/refresh': one({ refreshToken: tokens.refreshToken }),
  'patch /api/v1/members/password/change': one({ currentPassword: 'correct horse battery staple', newPassword: 'tr0ub4dor and three more words' }),
  'post /api/v1/members/password/reset': {
    examples: {
      request: { summary: 'Mail a reset token', value: { email: 'ada@example.com' } },
      complete: { summary: 'Set a new password with the mailed token', value: { token: 'r5Tk9Lm2QxZ8pW4nB6cH1jF5sD7gA0eY', newPassword: 'tr0ub4dor and three more words' } },
    },
  },
  'post /api/v1/members/me/api-keys': one({ name: 'warehouse sync' }),
  'patch /api/v1/admin/members/{id}': one({ status: 'SUSPENDED' }),
  'post /api/v1/products/categories': one({ name: 'Coffee', parentId: null }),
  'post /api/v1/admin/products': one(productBody),
  'put /api/v1/admin/products/{id}': one({ ...productBody, price: 2600 }),
  'patch /api/v1/admin/products/{id}': one({ stockQuantity: 250 }),
  'post /api/v1/orders': one({
    customerId: 7,
    items: [{ productId: 12, quantity: 2 }, { productId: 15, quantity: 1 }],
    shippingAddress: '1 Main St, Springfield',
    memo: 'Leave at the door',
  }),
  'put /api/v1/orders/{id}': one({ status: 'PLACED', memo: 'Ring twice', shippingAddress: '1 Main St, Springfield' }),
  'patch /api/v1/orders/{id}': one({ orderId: 42, memo: 'Ring twice' }),
  'patch /api/v1/admin/orders/{id}': one({ status: 'DELIVERED' }),
  'post /api/v1/orders/{id}/edits': {
    examples: {
      change: { summary: 'A third bag of beans', value: { changes: [{ productId: 12, quantity: 3 }] } },
      swap: { summary: 'No filter papers, a milk jug instead, to a new address', value: { changes: [{ productId: 15, quantity: 0 }, { productId: 21, quantity: 1 }], shippingAddress: '2 Side St, Springfield' } },
    },
  },
  'patch /api/v1/payments/{id}/process': one({ paymentMethodToken: 'tok_visa' }),
  'patch /api/v1/payments/{id}/refund': one({ amount: 1000 }),
  'post /api/v1/admin/webhook-endpoints': one({ url: 'https://hooks.example.com/orders', eventTypes: ['order.placed', 'order.cancelled', 'payment.refunded'], description: 'Fulfilment system' }),
  'patch /api/v1/admin/webhook-endpoints/{id}': one({ status: 'DISABLED' }),
  'post /api/v1/admin/orders/{id}/fulfillments': one({
    items: [{ productId: 12, quantity: 2 }], carrier: 'UPS', trackingNumber: '1Z999AA10123456784', trackingUrl: 'https://www.ups.com/track?tracknum=1Z999AA10123456784',
  }),
  'post /api/v1/orders/{id}/returns': one({ items: [{ productId: 12, quantity: 1, reason: 'DAMAGED' }], note: 'The bag was torn open' }),
  'patch /api/v1/admin/returns/{returnId}/reject': one({ reason: 'No damage visible on the photos' }),
  'patch /api/v1/admin/returns/{returnId}/receive': {
    examples: {
      byPrice: { summary: 'Refund what came back at its unit price', value: { items: [{ productId: 12, quantity: 1, restock: false }] } },
      amount: { summary: 'Refund an amount of your choosing (0 allowed)', value: { items: [{ productId: 12, quantity: 1, restock: true }], refundAmount: 1000 } },
    },
  },
}

/** Answers that are not a named component's envelope, by `method path status`. */
export const RESPONSE_EXAMPLES: Record<string, unknown> = {
  'get /api/v1/health 200': { success: true, data: { status: 'UP' }, error: null },
  // A preview (?dryRun=true) of the same edit after the order was paid: 2450 more is asked for; nothing changed yet.
  'post /api/v1/orders/{id}/edits 200': {
    success: true,
    data: { ...orderEdit, editId: null, fromVersion: 4, toVersion: 5, settlement: { kind: 'PAYMENT', amount: 2450, paymentId: null }, actorId: 1, actorRole: 'ADMIN' },
    error: null,
  },
  'patch /api/v1/payments/{id}/refund 200': {
    success: true,
    data: { ...payment, refundedAmount: 1000, status: 'PARTIALLY_REFUNDED', updatedAt: '2026-11-23T14:00:00.000Z' },
    error: null,
  },
  'get /api/v1/admin/orders/export 200': 'orderId,customerId,customerEmail,status,itemCount,totalAmount,currency,paymentId,paymentStatus,shippingAddress,memo,createdAt,updatedAt,' +
    'orderPaymentStatus,fulfillmentStatus,paidAmount,refundedAmount,balanceDue\r\n' +
    '42,7,ada@example.com,CONFIRMED,2,5250,USD,9,COMPLETED,"1 Main St, Springfield",Leave at the door,2026-11-22T09:30:00.000Z,2026-11-22T09:31:12.408Z,' +
    'PAID,UNFULFILLED,5250,0,0\r\n',
  'patch /api/v1/orders/{id}/returns/{returnId}/cancel 200': {
    success: true, data: { ...orderReturn, status: 'CANCELLED', updatedAt: '2026-11-26T12:00:00.000Z' }, error: null,
  },
  'patch /api/v1/admin/returns/{returnId}/reject 200': {
    success: true,
    data: { ...orderReturn, status: 'REJECTED', rejectionReason: 'No damage visible on the photos', updatedAt: '2026-11-27T09:00:00.000Z' },
    error: null,
  },
  'patch /api/v1/admin/returns/{returnId}/receive 200': { success: true, data: receivedReturn, error: null },
  'get /actuator/prometheus 200': '# HELP orders_placed_total Orders placed (idempotent replays not counted)\n# TYPE orders_placed_total counter\norders_placed_total 1532\n',
  'get /v3/api-docs 200': { openapi: '3.1.0', info: { title: 'Order service API', version: '0.1.0' }, paths: {} },
  'get /docs/index.html 200': '<!doctype html><html lang="en"><head><title>Order service API</title></head><body>…</body></html>',
}
