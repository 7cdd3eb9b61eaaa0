import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import { principalOf, type Principal } from '../http/access.js'
import { idempotencyKeyOf, sendAnswer } from '../http/idempotency.js'
import { Envelope, IdParams, IdempotencyHeaders, Slice, ok } from '../http/schemas.js'
import { answerOnce, type KeyedRequest } from '../idempotency/service.js'
import type { PaymentProvider } from './provider.js'
import { Payment, PaymentHistoryQuery, ProcessPaymentBody, RefundPaymentBody } from './schemas.js'
import { getPayment, listPaymentHistory, paymentDeclined, processPayment, refundPayment, toPayment } from './service.js'

interface VerbRequest {
  params: { id: string }
  headers: { 'idempotency-key'?: string }
  body: { idempotencyKey?: string }
}

/** A payment verb's idempotency: scope caller × PATCH × the verb's path (CONTRACT §3). */
function keyedRequest (
  request: VerbRequest, principal: Principal, verb: 'process' | 'refund', config: Pick<Config, 'idempotencyTtlMs'>
): KeyedRequest {
  return {
    scope: { memberId: principal.memberId, method: 'PATCH', path: `/api/v1/payments/${request.params.id}/${verb}` },
    key: idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey),
    body: request.body,
    ttlMs: config.idempotencyTtlMs,
  }
}

export const paymentRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['payments']
  const replayNote = 'With an idempotency key (header or body), a repeat returns the first result with `Idempotent-Replayed: true`.'

  app.get('/api/v1/payments/history', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'listMyPayments',
      summary: 'List my payments, newest first',
      description: 'The caller’s payments, newest first, in the cursor (slice) shape.',
      querystring: PaymentHistoryQuery,
      response: { 200: Envelope(Slice(Payment)) },
    },
  }, async (request) => ok(await listPaymentHistory(app.db, principalOf(request), request.query)))

  app.get('/api/v1/payments/:id', {
    config: { access: 'owner', errors: ['PAYMENT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getPayment',
      summary: 'Get a payment (its customer or an admin)',
      description: 'Readable by the order’s customer (also after the order was deleted) and by admins.',
      params: IdParams,
      response: { 200: Envelope(Payment) },
    },
  }, async (request) => ok(await getPayment(app.db, principalOf(request), request.params.id)))

  app.patch('/api/v1/payments/:id/process', {
    config: { access: 'owner', errors: ['PAYMENT_NOT_FOUND', 'INVALID_PAYMENT_STATUS', 'PAYMENT_DECLINED'] },
    schema: {
      tags,
      operationId: 'processPayment',
      summary: 'Pay: charge the payment through the payment provider (its customer only)',
      description: `PENDING or FAILED → COMPLETED, or FAILED with 402 when the provider declines (it may be processed again). A COMPLETED payment is answered as it is. ${replayNote}`,
      params: IdParams,
      headers: IdempotencyHeaders,
      body: ProcessPaymentBody,
      response: { 200: Envelope(Payment) },
    },
  }, async (request, reply) => {
    const command = { provider: paymentProvider, principal: principalOf(request), id: request.params.id }
    const once = keyedRequest(request, command.principal, 'process', app.config)
    const outcome = await app.db.transaction().execute(trx => answerOnce(trx, once, async () => {
      const { payment, declined } = await processPayment(trx, command, request.body)
      return declined ? { failure: paymentDeclined(payment) } : { status: 200, body: toPayment(payment) }
    }))
    return sendAnswer(reply, outcome)
  })

  app.patch('/api/v1/payments/:id/refund', {
    config: { access: 'admin', errors: ['PAYMENT_NOT_FOUND', 'INVALID_PAYMENT_STATUS'] },
    schema: {
      tags,
      operationId: 'refundPayment',
      summary: 'Refund a payment, fully or in part (admin)',
      description: `Without \`amount\`, refunds everything not yet refunded. Never more than is left. ${replayNote}`,
      params: IdParams,
      headers: IdempotencyHeaders,
      body: RefundPaymentBody,
      // The body is optional: none at all means a full refund (a JSON null is still a malformed body).
      'x-optional-body': true,
      response: { 200: Envelope(Payment) },
    },
  }, async (request, reply) => {
    const command = { provider: paymentProvider, principal: principalOf(request), id: request.params.id }
    const once = keyedRequest(request, command.principal, 'refund', app.config)
    const outcome = await app.db.transaction().execute(trx => answerOnce(trx, once, async () =>
      ({ status: 200, body: toPayment(await refundPayment(trx, command, request.body)) })))
    return sendAnswer(reply, outcome)
  })
}
