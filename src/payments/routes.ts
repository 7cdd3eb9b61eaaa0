import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, Slice, ok } from '../http/schemas.js'
import { idempotencyKeyOf } from '../idempotency/service.js'
import { CreateOrderHeaders } from '../orders/schemas.js'
import type { PaymentProvider } from './provider.js'
import { Payment, PaymentHistoryQuery, ProcessPaymentBody, RefundPaymentBody } from './schemas.js'
import { getPayment, listPaymentHistory, processPayment, refundPayment, type PaymentResult } from './service.js'

export const paymentRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['payments']
  const replayNote = 'With an idempotency key (header or body), a repeat returns the first result with `Idempotent-Replayed: true`.'
  const answer = (result: PaymentResult, reply: { header: (name: string, value: string) => unknown }) => {
    if (result.replayed) reply.header('Idempotent-Replayed', 'true')
    return ok(result.payment)
  }

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
    config: { access: 'owner' },
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
    config: { access: 'owner' },
    schema: {
      tags,
      operationId: 'processPayment',
      summary: 'Pay: charge the payment through the payment provider (its customer only)',
      description: `PENDING or FAILED → COMPLETED, or FAILED with 402 when the provider declines (it may be processed again). A COMPLETED payment is answered as it is. ${replayNote}`,
      params: IdParams,
      headers: CreateOrderHeaders,
      body: ProcessPaymentBody,
      response: { 200: Envelope(Payment) },
    },
  }, async (request, reply) => {
    const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey)
    const command = { provider: paymentProvider, config: app.config, principal: principalOf(request), id: request.params.id, key }
    return answer(await processPayment(app.db, command, request.body), reply)
  })

  app.patch('/api/v1/payments/:id/refund', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'refundPayment',
      summary: 'Refund a payment, fully or in part (admin)',
      description: `Without \`amount\`, refunds everything not yet refunded. Never more than is left. ${replayNote}`,
      params: IdParams,
      headers: CreateOrderHeaders,
      body: RefundPaymentBody,
      // The body is optional: none at all means a full refund (a JSON null is still a malformed body).
      'x-optional-body': true,
      response: { 200: Envelope(Payment) },
    },
  }, async (request, reply) => {
    const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey)
    const command = { provider: paymentProvider, config: app.config, principal: principalOf(request), id: request.params.id, key }
    return answer(await refundPayment(app.db, command, request.body), reply)
  })
}
