import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { principalOf } from '../http/access.js'
import { idempotencyKeyOf, sendAnswer } from '../http/idempotency.js'
import { IdParams, IdempotencyHeaders, ok } from '../http/schemas.js'
import type { PaymentProvider } from '../payments/provider.js'
import { EditIdParams, EditOrderBody, EditQuery, OrderEditAnswer, OrderEditListAnswer } from './schemas.js'
import { assertEditRequest, editOrder, getEdit, getEdits } from './service.js'

const EditHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'if-match': Type.Optional(Type.String({ description: 'The order\'s ETag, required: absent → 428, stale → 412' })),
})

/** Edits of an order's lines and address (CONTRACT §15.2, §15.7). */
export const editRoutes: FastifyPluginAsyncTypebox<{ paymentProvider: PaymentProvider }> = async (app, { paymentProvider }) => {
  const tags = ['orders']

  app.post('/api/v1/orders/:id/edits', {
    config: {
      access: 'owner',
      errors: ['INVALID_ORDER_STATUS', 'ORDER_NOT_FOUND', 'INSUFFICIENT_STOCK', 'PRECONDITION_REQUIRED'],
      sends: ['Location', 'ETag'],
    },
    schema: {
      tags,
      operationId: 'editOrder',
      summary: "Change an order's lines or shipping address",
      description: 'Each change sets a line\'s new quantity: 0 removes it, a product not on the order is added at its current price (it must be ACTIVE), ' +
        'an existing line keeps its price; a line cannot go below what shipped. The owner edits while PLACED or PENDING, an admin also while CONFIRMED. ' +
        '`If-Match` with the order\'s ETag is required (absent 428, stale 412). More stock is reserved all or nothing (409), less released, and the ' +
        'difference in money settled in the same transaction: NONE before confirmation, PAYMENT_ADJUSTED (the open payment takes the difference), ' +
        'REFUND (reason EDIT, newest captured payment first) or PAYMENT (a new PENDING payment for the rise). `?dryRun=true` answers 200 with the edit ' +
        'as it would be applied (editId null) and changes nothing. Otherwise 201 with `Location` and the order\'s new `ETag`; with an idempotency key, ' +
        'a repeat returns the first result with 200 and `Idempotent-Replayed: true`, even when its If-Match is stale by then.',
      params: IdParams,
      querystring: EditQuery,
      headers: EditHeaders,
      body: EditOrderBody,
      response: { 200: OrderEditAnswer, 201: OrderEditAnswer },
    },
  }, async (request, reply) => {
    const principal = principalOf(request)
    const dryRun = request.query.dryRun === true
    const key = idempotencyKeyOf(request.headers['idempotency-key'], request.body.idempotencyKey)
    assertEditRequest(request.body)
    const outcome = await editOrder(app.db, paymentProvider, app.config, principal, request.params.id, request.body, {
      ifMatch: request.headers['if-match'],
      dryRun,
      key: dryRun ? undefined : key,
      keyPath: `/api/v1/orders/${request.params.id}/edits`,
      answerAs: dryRun ? { status: 200, location: null } : { status: 201, location: '/api/v1/orders/{id}/edits/{editId}' },
    })
    // A preview changes nothing: the order keeps its version, and its ETag is sent as it is.
    return sendAnswer(reply, outcome, edit => ({ ETag: `"${dryRun ? edit.fromVersion : edit.toVersion}"` }))
  })

  app.get('/api/v1/orders/:id/edits', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'listOrderEdits',
      summary: "An order's edits, oldest first",
      description: 'Every applied edit of the order, with the lines it changed and how it settled the money; for its owner or an admin.',
      params: IdParams,
      response: { 200: OrderEditListAnswer },
    },
  }, async (request) => ok(await getEdits(app.db, principalOf(request), request.params.id)))

  app.get('/api/v1/orders/:id/edits/:editId', {
    config: { access: 'owner', errors: ['ORDER_NOT_FOUND', 'EDIT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getOrderEdit',
      summary: 'One edit of an order',
      description: 'An edit of the order by its id; an id that is not one of this order\'s edits is 404 EDIT_NOT_FOUND.',
      params: EditIdParams,
      response: { 200: OrderEditAnswer },
    },
  }, async (request) => ok(await getEdit(app.db, principalOf(request), request.params.id, request.params.editId)))
}
