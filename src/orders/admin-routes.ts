import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, Page, ok } from '../http/schemas.js'
import type { PaymentProvider } from '../payments/provider.js'
import { exportOrdersCsv } from './export.js'
import { changeOrder } from './lifecycle.js'
import { sendOrder } from './routes.js'
import {
  AdminOrderExportQuery, AdminOrderListQuery, AdminOrderSearchQuery, AdminPatchOrderBody, IfMatchHeaders, OrderDetail,
  OrderSummary,
} from './schemas.js'
import { getOrder, pageAllOrders } from './service.js'

/** The back office's orders: every customer's, soft-deleted ones included. */
export const adminOrderRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['admin']

  app.get('/api/v1/admin/orders', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'adminListOrders',
      summary: 'List every order (page shape)',
      description: 'Every status, DELETED included, unless `status` says otherwise. Default sort `createdAt,desc`.',
      querystring: AdminOrderListQuery,
      response: { 200: Envelope(Page(OrderSummary)) },
    },
  }, async (request) => ok(await pageAllOrders(app.db, request.query)))

  app.get('/api/v1/admin/orders/search', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'adminSearchOrders',
      summary: 'Search every order (page shape)',
      description: 'The list’s filters plus createdFrom (inclusive), createdTo (exclusive), minTotal, maxTotal and productId, in the offset (page) shape.',
      querystring: AdminOrderSearchQuery,
      response: { 200: Envelope(Page(OrderSummary)) },
    },
  }, async (request) => ok(await pageAllOrders(app.db, request.query)))

  app.get('/api/v1/admin/orders/export', {
    config: { access: 'admin', sends: ['Content-Disposition'] },
    schema: {
      tags,
      operationId: 'adminExportOrders',
      summary: 'Export orders as CSV',
      description: 'The search\'s filters and sort, every matching order, streamed (`text/csv`, an attachment). Not an envelope.',
      querystring: AdminOrderExportQuery,
      response: { 200: { description: 'CSV, one header line then one line per order', content: { 'text/csv': { schema: { type: 'string' } } } } },
    },
  }, async (request, reply) => {
    const stream = exportOrdersCsv(app.db, app.databaseKind, request.query)
    const stamp = new Date().toISOString().replaceAll(':', '').replace(/\.\d+Z$/, 'Z')
    return reply
      .type('text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="orders-${stamp}.csv"`)
      .header('Cache-Control', 'no-store')
      // The schema documents the CSV text for OpenAPI; what is sent is a stream of it.
      .send(stream as unknown as string)
  })

  app.get('/api/v1/admin/orders/:id', {
    config: { access: 'admin', errors: ['ORDER_NOT_FOUND'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'adminGetOrder',
      summary: 'Get any order, soft-deleted ones included',
      description: 'Any customer’s order, soft-deleted ones included, with its ETag.',
      params: IdParams,
      response: { 200: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const order = await getOrder(app.db, principal, request.params.id)
    return sendOrder(reply, order, principal)
  })

  app.patch('/api/v1/admin/orders/:id', {
    config: { access: 'admin', errors: ['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS'], sends: ['ETag'] },
    schema: {
      tags,
      operationId: 'adminUpdateOrder',
      summary: 'Deliver or cancel an order, or change its memo',
      description: '`status: DELIVERED` needs a CONFIRMED order with a COMPLETED or PARTIALLY_REFUNDED payment. `status: CANCELLED` releases stock and refunds or cancels the payment. Null or absent fields are unchanged.',
      params: IdParams,
      headers: IfMatchHeaders,
      body: AdminPatchOrderBody,
      response: { 200: Envelope(OrderDetail) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const { status, memo } = request.body
    const order = await changeOrder(app.db, paymentProvider, principal, request.params.id, {
      verb: status === 'DELIVERED' ? 'deliver' : status === 'CANCELLED' ? 'cancel' : undefined,
      memo: memo ?? undefined,
      ifMatch: request.headers['if-match'],
    })
    return sendOrder(reply, order, principal)
  })
}
