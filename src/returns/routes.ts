import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { principalOf } from '../http/access.js'
import { idempotencyKeyOf, sendAnswer } from '../http/idempotency.js'
import { IdParams, IdempotencyHeaders, ok } from '../http/schemas.js'
import type { PaymentProvider } from '../payments/provider.js'
import {
  AdminReturnListQuery, OrderReturnParams, ReceiveReturnBody, RejectReturnBody, RequestReturnBody, ReturnEnvelope, ReturnIdParams,
  ReturnListEnvelope, ReturnPageEnvelope,
} from './schemas.js'
import {
  cancelReturn, getOrderReturn, getOrderReturns, pageAllReturns, receiveReturn, rejectReturn, requestReturn, type ReturnAnswer,
} from './service.js'

/** A return step's answer: the return in `data` and the order's ETag (CONTRACT §15.7). */
const sendStep = (reply: FastifyReply, answer: ReturnAnswer) => reply.header('ETag', answer.etag).send(ok(answer.return))

/** Returns, line by line (CONTRACT §15.4): the owner's and the back office's. */
export const returnRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['orders']

  app.post('/api/v1/orders/:id/returns', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS', 'RETURN_WINDOW_CLOSED'], sends: ['Location', 'ETag'] },
    schema: {
      tags,
      operationId: 'requestReturn',
      summary: 'Ask to send goods back (the order\'s owner or an admin)',
      description: 'A line may go back up to what was delivered of it minus what is returned or in open (REQUESTED) returns (400 naming ' +
        '`items[i].quantity`). The owner may ask within `RETURN_WINDOW` (default 30 days; `0`: never) of the latest delivery among the ' +
        'order\'s fulfilments, else 400 `RETURN_WINDOW_CLOSED`; admins at any time. A DELETED order takes no return. The answer carries ' +
        'the order\'s new `ETag`. With an idempotency key, a repeat returns the first result with 200 and `Idempotent-Replayed: true`.',
      params: IdParams,
      headers: IdempotencyHeaders,
      body: RequestReturnBody,
      response: { 200: ReturnEnvelope, 201: ReturnEnvelope },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const { id } = request.params
    const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey)
    const { outcome, etag } = await requestReturn(app.db, principal, app.config.returnWindowMs, id, request.body, {
      scope: { memberId: principal.memberId, method: 'POST', path: `/api/v1/orders/${id}/returns` },
      key,
      ttlMs: app.config.idempotencyTtlMs,
    }, { status: 201, location: `/api/v1/orders/${id}/returns/{returnId}` })
    return sendAnswer(reply.header('ETag', etag), outcome)
  })

  app.get('/api/v1/orders/:id/returns', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'listOrderReturns',
      summary: "An order's returns, oldest first",
      description: 'Every return of the order, whatever its status, with its lines; for its owner or an admin.',
      params: IdParams,
      response: { 200: ReturnListEnvelope },
    },
  }, async (request) => ok(await getOrderReturns(app.db, principalOf(request), request.params.id)))

  app.get('/api/v1/orders/:id/returns/:returnId', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'RETURN_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getOrderReturn',
      summary: 'Get a return of an order',
      description: 'One return of the order, for its owner or an admin; a return of another order is 404 `RETURN_NOT_FOUND`.',
      params: OrderReturnParams,
      response: { 200: ReturnEnvelope },
    },
  }, async (request) => ok(await getOrderReturn(app.db, principalOf(request), request.params.id, request.params.returnId)))

  app.patch('/api/v1/orders/:id/returns/:returnId/cancel', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'RETURN_NOT_FOUND', 'INVALID_RETURN_STATUS'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'cancelReturn',
      summary: 'Cancel a return (the order\'s owner or an admin)',
      description: 'No request body. REQUESTED → CANCELLED; a return already CANCELLED is answered as it is, nothing changes; RECEIVED or ' +
        'REJECTED → 400 `INVALID_RETURN_STATUS`. The answer is the return, with the order\'s new `ETag`.',
      params: OrderReturnParams,
      response: { 200: ReturnEnvelope },
    },
  }, async (request, reply) =>
    sendStep(reply, await cancelReturn(app.db, principalOf(request), request.params.id, request.params.returnId)))

  app.get('/api/v1/admin/returns', {
    config: { access: 'admin' },
    schema: {
      tags: ['admin'],
      operationId: 'adminListReturns',
      summary: 'List every return, newest first (page shape)',
      description: 'Filter by `status` (one or several, comma-separated) and `orderId`.',
      querystring: AdminReturnListQuery,
      response: { 200: ReturnPageEnvelope },
    },
  }, async (request) => ok(await pageAllReturns(app.db, request.query)))

  app.patch('/api/v1/admin/returns/:returnId/reject', {
    config: { access: 'admin', errors: ['RETURN_NOT_FOUND', 'INVALID_RETURN_STATUS'], sends: ['ETag'] },
    schema: {
      tags: ['admin'],
      operationId: 'adminRejectReturn',
      summary: 'Reject a return',
      description: 'REQUESTED → REJECTED; `reason` (optional, ≤ 500 characters) is shown as `rejectionReason`. The body may be left out. ' +
        'A return already REJECTED is answered as it is, nothing changes; RECEIVED or CANCELLED → 400 `INVALID_RETURN_STATUS`. ' +
        'The answer is the return, with its order\'s new `ETag`.',
      params: ReturnIdParams,
      body: RejectReturnBody,
      // No body at all is a reject without a reason (a JSON null is still a malformed body).
      'x-optional-body': true,
      response: { 200: ReturnEnvelope },
    },
  }, async (request, reply) =>
    sendStep(reply, await rejectReturn(app.db, principalOf(request), request.params.returnId, request.body)))

  app.patch('/api/v1/admin/returns/:returnId/receive', {
    config: { access: 'admin', errors: ['RETURN_NOT_FOUND', 'INVALID_RETURN_STATUS'], sends: ['ETag'] },
    schema: {
      tags: ['admin'],
      operationId: 'adminReceiveReturn',
      summary: 'Receive a return: record what came back, restock it, refund it',
      description: 'REQUESTED → RECEIVED in one transaction: each line\'s quantity (at most what the return asked for; a line left out ' +
        'came back with nothing), `restock: true` puts it back in stock, and the refund (reason RETURN, newest captured payment first) is ' +
        '`refundAmount` when given (0 allowed; more than is still refundable → 400), else the received quantities × their unitPrice, ' +
        'capped at what is still refundable. A provider that cannot refund → 503, nothing changes. A return already RECEIVED is answered ' +
        'as it is; REJECTED or CANCELLED → 400 `INVALID_RETURN_STATUS`. The answer is the return, with its order\'s new `ETag`.',
      params: ReturnIdParams,
      body: ReceiveReturnBody,
      response: { 200: ReturnEnvelope },
    },
  }, async (request, reply) =>
    sendStep(reply, await receiveReturn(app.db, paymentProvider, principalOf(request), request.params.returnId, request.body)))
}
