import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { principalOf } from '../http/access.js'
import { IdParams, ok } from '../http/schemas.js'
import { getOrder } from '../orders/service.js'
import { listFulfillments } from './repository.js'
import { FulfillmentListAnswer } from './schemas.js'

/** An order's shipments (CONTRACT §15.3). */
export const fulfillmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/v1/orders/:id/fulfillments', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags: ['orders'],
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
}
