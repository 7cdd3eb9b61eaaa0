import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { invalidParam } from '../errors.js'
import { principalOf, type Principal } from '../http/access.js'
import { idempotencyKeyOf, sendAnswer } from '../http/idempotency.js'
import { Envelope, IdParams, IdempotencyHeaders, Slice, ok } from '../http/schemas.js'
import { answerOnceInOneStatement } from '../idempotency/service.js'
import { ordersPlaced } from '../ops/metrics.js'
import type { PaymentProvider } from '../payments/provider.js'
import { changeOrder } from './lifecycle.js'
import { etagOf, toOrderDetail } from './mapper.js'
import type { OrderWithItems } from './repository.js'
import {
  CreateOrderBody, HistoryEntry, IfMatchHeaders, OrderDetail, OrderItem, OrderListQuery,
  OrderSearchQuery, OrderSummary, PatchOrderBody, PutOrderBody, type Verb,
} from './schemas.js'
import { assertOrderRequest, getOrder, getOrderHistory, listOwnOrders, placeOrder } from './service.js'

/** Answers with the order's detail for this caller and the ETag of the version shown. */
export function sendOrder (reply: FastifyReply, order: OrderWithItems, principal: Principal): FastifyReply {
  return reply.header('ETag', etagOf(order)).send(ok(toOrderDetail(order, principal)))
}

export const orderRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['orders']

  app.post('/api/v1/orders', {
    config: { access: 'member', errors: ['ACCESS_DENIED', 'INSUFFICIENT_STOCK', 'UNPAID_ORDER_LIMIT_REACHED'], sends: ['Location', 'ETag'] },
    schema: {
      tags,
      operationId: 'placeOrder',
      summary: 'Place an order',
      description: 'Reserves stock for every item or none, until the order\'s payment is captured or `ORDER_RESERVATION_TTL` runs out. A member ordering for itself that already holds `MAX_UNPAID_ORDERS` orders with stock and nothing captured gets 409 `UNPAID_ORDER_LIMIT_REACHED` (admins are exempt). With an idempotency key, a repeat returns the first result with 200 and `Idempotent-Replayed: true`.',
      headers: IdempotencyHeaders,
      body: CreateOrderBody,
      response: { 200: Envelope(OrderDetail), 201: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey)
    assertOrderRequest(principal, request.body)
    const once = { scope: { memberId: principal.memberId, method: 'POST', path: '/api/v1/orders' }, key, body: request.body, ttlMs: app.config.idempotencyTtlMs }
    // One statement: the key's claim, the checks, the order and the stored answer (issue 22).
    const outcome = await answerOnceInOneStatement(app.db, once, claim =>
      placeOrder(app.db, claim, app.config, principal, request.body, { status: 201, location: '/api/v1/orders/{id}' }))
    if ('replayed' in outcome && !outcome.replayed) ordersPlaced.inc() // once committed, never on a replay
    return sendAnswer(reply, outcome, order => ({ ETag: etagOf(order) }))
  })

  app.get('/api/v1/orders', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'listMyOrders',
      summary: 'List my orders, newest first',
      description: 'The caller’s own orders, newest first, deleted ones excluded, in the cursor (slice) shape; filter by status (one or several, comma-separated).',
      querystring: OrderListQuery,
      response: { 200: Envelope(Slice(OrderSummary)) },
    },
  }, async (request) => ok(await listOwnOrders(app.db, principalOf(request), request.query)))

  app.get('/api/v1/orders/search', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'searchMyOrders',
      summary: 'Search my orders',
      description: 'The list’s filters plus createdFrom (inclusive), createdTo (exclusive), minTotal, maxTotal and productId.',
      querystring: OrderSearchQuery,
      response: { 200: Envelope(Slice(OrderSummary)) },
    },
  }, async (request) => ok(await listOwnOrders(app.db, principalOf(request), request.query)))

  app.get('/api/v1/orders/:id', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'getOrder',
      summary: 'Get an order',
      description: 'The order’s detail with the verbs the caller may apply now (allowedActions) and an ETag for If-Match.',
      params: IdParams,
      response: { 200: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const order = await getOrder(app.db, principal, request.params.id)
    return sendOrder(reply, order, principal)
  })

  app.get('/api/v1/orders/:id/items', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'listOrderItems',
      summary: "List an order's items",
      description: 'The items with the prices they were ordered at, in the order they were submitted.',
      params: IdParams,
      response: { 200: Envelope(Type.Array(OrderItem)) },
    },
  }, async (request) => ok((await getOrder(app.db, principalOf(request), request.params.id)).items))

  app.get('/api/v1/orders/:id/history', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getOrderHistory',
      summary: "An order's status changes, oldest first",
      description: 'Every status change: from, to, action, who and when; the first entry is the creation.',
      params: IdParams,
      response: { 200: Envelope(Type.Array(HistoryEntry)) },
    },
  }, async (request) => ok(await getOrderHistory(app.db, principalOf(request), request.params.id)))

  const verbs: Array<[Verb, string]> = [
    ['confirm', 'Confirm an order (its customer only); opens its payment'],
    ['cancel', 'Cancel an order: releases its stock, refunds or cancels its payment'],
    ['delete', 'Soft-delete an order (cancelling it first if it is active)'],
  ]
  for (const [verb, summary] of verbs) {
    app.patch(`/api/v1/orders/:id/${verb}`, {
      config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS'], sends: ['ETag'] },
      schema: {
        tags,
        operationId: `${verb}Order`,
        summary,
        description: 'No request body. Applying a verb to an order already in its target state changes nothing. The answer carries the order’s new `ETag` (for `delete`, the deleted order’s version, which admins can still read).',
        params: IdParams,
        headers: IfMatchHeaders,
        response: { 200: Envelope(Type.Null()) },
      },
    }, async (request, reply) => {
      const order = await changeOrder(app.db, paymentProvider, principalOf(request), request.params.id, {
        verb,
        ifMatch: request.headers['if-match'],
      })
      // data is null, but the new version's ETag lets the client send its next If-Match without a GET.
      return reply.header('ETag', etagOf(order)).send(ok(null))
    })
  }

  app.put('/api/v1/orders/:id', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'replaceOrder',
      summary: "Replace an order's status, memo and shipping address",
      description: 'All three keys are required (memo and shippingAddress may be null). The status must be the current one or a legal target; the address may change only while the order is PLACED, PENDING or CONFIRMED.',
      params: IdParams,
      headers: IfMatchHeaders,
      body: PutOrderBody,
      response: { 200: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const order = await changeOrder(app.db, paymentProvider, principal, request.params.id, {
      ...request.body,
      ifMatch: request.headers['if-match'],
    })
    return sendOrder(reply, order, principal)
  })

  app.patch('/api/v1/orders/:id', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'updateOrder',
      summary: "Change an order's status or memo",
      description: 'Null or absent fields are left unchanged. `orderId` must equal the path id.',
      params: IdParams,
      headers: IfMatchHeaders,
      body: PatchOrderBody,
      response: { 200: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    if (String(request.body.orderId) !== request.params.id) throw invalidParam('orderId', 'must equal the order id in the path')
    const order = await changeOrder(app.db, paymentProvider, principal, request.params.id, {
      status: request.body.status ?? undefined,
      memo: request.body.memo ?? undefined,
      ifMatch: request.headers['if-match'],
    })
    return sendOrder(reply, order, principal)
  })
}
