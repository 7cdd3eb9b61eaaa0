import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Tx } from '../db/schema.js'
import { principalOf } from '../http/access.js'
import { idempotencyKeyOf, sendAnswer } from '../http/idempotency.js'
import { IdParams, IdempotencyHeaders, ok } from '../http/schemas.js'
import { answerOnce } from '../idempotency/service.js'
import type { Mail, Mailer } from '../mail/mailer.js'
import { fulfillmentsShipped } from '../ops/metrics.js'
import { getOrder } from '../orders/service.js'
import { listFulfillments } from './repository.js'
import { FulfillmentEnvelope, FulfillmentListAnswer, FulfillmentParams, ShipBody } from './schemas.js'
import { cancelShipment, deliverShipment, getShipment, ship, type FulfillmentChange } from './service.js'

/** An order's shipments (CONTRACT §15.3): the owner reads them, staff ship, deliver and cancel them. */
export const fulfillmentRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer }> = async (app, { mailer }) => {
  const tags = ['orders']

  app.get('/api/v1/orders/:id/fulfillments', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'listOrderFulfillments',
      summary: "An order's fulfilments, oldest first",
      description: 'Every shipment of the order (cancelled ones too), with its items, carrier, tracking and dates; for its owner or an admin.',
      params: IdParams,
      response: { 200: FulfillmentListAnswer },
    },
  }, async (request) => {
    const order = await getOrder(app.db, principalOf(request), request.params.id)
    return ok(await listFulfillments(app.db, order.id))
  })

  app.get('/api/v1/orders/:id/fulfillments/:fulfillmentId', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'FULFILLMENT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getOrderFulfillment',
      summary: 'One fulfilment of an order',
      description: 'The shipment with its items, carrier, tracking and dates; for the order\'s owner or an admin.',
      params: FulfillmentParams,
      response: { 200: FulfillmentEnvelope },
    },
  }, async (request) => {
    const order = await getOrder(app.db, principalOf(request), request.params.id)
    return ok(await getShipment(app.db, order, request.params.fulfillmentId))
  })

  /** Mail leaves after the commit and the response: a slow or failing mail server neither delays nor fails the shipment. */
  const mailInBackground = (mail: Mail, orderId: string, fulfillmentId: number) => {
    mailer.send(mail).catch(error => app.log.warn({ err: error, orderId, fulfillmentId }, 'shipping mail could not be sent'))
  }

  app.post('/api/v1/admin/orders/:id/fulfillments', {
    config: { access: 'admin', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS'], sends: ['Location'] },
    schema: {
      tags: ['admin'],
      operationId: 'adminShipOrder',
      summary: 'Ship goods of an order, with carrier and tracking',
      description: 'Records a SHIPPED fulfilment of the items given (absent: everything not yet shipped). Needs a CONFIRMED order with balanceDue 0 ' +
        'and paymentStatus PAID or PARTIALLY_REFUNDED. The customer is mailed the carrier, tracking number and link (with SMTP_URL set). ' +
        'With an idempotency key (header or body), a repeat returns the first result with `Idempotent-Replayed: true`.',
      params: IdParams,
      headers: IdempotencyHeaders,
      body: ShipBody,
      response: { 200: FulfillmentEnvelope, 201: FulfillmentEnvelope },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    let shipped: FulfillmentChange | undefined
    const outcome = await app.db.transaction().execute(trx => answerOnce(trx, {
      scope: { memberId: principal.memberId, method: 'POST', path: `/api/v1/admin/orders/${request.params.id}/fulfillments` },
      key: idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey),
      body: request.body,
      ttlMs: app.config.idempotencyTtlMs,
    }, async () => {
      shipped = await ship(trx, principal, request.params.id, request.body, customerId => emailOf(trx, customerId))
      const { fulfillment } = shipped
      return { status: 201, body: fulfillment, location: `/api/v1/orders/${fulfillment.orderId}/fulfillments/${fulfillment.fulfillmentId}` }
    }))
    if (shipped) {
      fulfillmentsShipped.inc()
      if (shipped.mail) mailInBackground(shipped.mail, request.params.id, shipped.fulfillment.fulfillmentId)
    }
    return sendAnswer(reply, outcome)
  })

  for (const [verb, apply, summary, description] of [
    ['deliver', deliverShipment, 'Mark a shipment delivered',
      'SHIPPED → DELIVERED. When every line has shipped and every shipment that is not CANCELLED is DELIVERED, the order becomes DELIVERED in the ' +
      'same step (fulfillment.delivered, then order.delivered). A DELIVERED one is answered as it is; a CANCELLED one is refused.'],
    ['cancel', cancelShipment, 'Cancel a shipment',
      'SHIPPED → CANCELLED: its quantities are to ship again. A CANCELLED one is answered as it is; a DELIVERED one is refused (goods that arrived ' +
      'come back through a return).'],
  ] as const) {
    app.patch(`/api/v1/admin/orders/:id/fulfillments/:fulfillmentId/${verb}`, {
      config: { access: 'admin', errors: ['ORDER_NOT_FOUND', 'FULFILLMENT_NOT_FOUND', 'INVALID_ORDER_STATUS', 'INVALID_FULFILLMENT_STATUS'], sends: ['ETag'] },
      schema: {
        tags: ['admin'],
        operationId: verb === 'deliver' ? 'adminDeliverFulfillment' : 'adminCancelFulfillment',
        summary,
        description: `${description} Answers the fulfilment, with the order's new ETag.`,
        params: FulfillmentParams,
        response: { 200: FulfillmentEnvelope },
      },
    }, async (request, reply) => {
      const principal = principalOf(request)
      const { fulfillment, etag } = await app.db.transaction().execute(trx =>
        apply(trx, principal, request.params.id, request.params.fulfillmentId))
      return reply.header('ETag', etag).send(ok(fulfillment))
    })
  }
}

/** The customer's address for the shipping mail; none for a member since removed. */
async function emailOf (trx: Tx, customerId: number): Promise<string | undefined> {
  const row = await trx.selectFrom('members').select('email').where('id', '=', customerId).executeTakeFirst()
  return row?.email
}
