import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Envelope, Page, ok } from '../http/schemas.js'
import {
  CreateEndpointBody, DeliveryListQuery, EndpointIdParams, EndpointListQuery, PatchEndpointBody, WebhookDelivery,
  WebhookEndpoint, WebhookEndpointWithSecret,
} from './schemas.js'
import {
  changeEndpoint, createEndpoint, getEndpoint, pageEndpointDeliveries, pageEndpoints, removeEndpoint, retryDelivery, rotateSecret,
} from './service.js'

/** Webhook endpoints and their delivery log (CONTRACT §12), admin only. */
export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['webhooks']
  const settings = { allowPrivate: app.config.webhookAllowPrivate }
  const base = '/api/v1/admin/webhook-endpoints'

  app.post(base, {
    config: { access: 'admin', sends: ['Location'] },
    schema: {
      tags,
      operationId: 'createWebhookEndpoint',
      summary: 'Register a webhook endpoint',
      description: 'Events committed from now on are POSTed to `url` (Standard Webhooks). `eventTypes` absent or null = every type. ' +
        'The answer carries the signing `secret`, shown only here and on rotation. `url` must be https:// and name a public host ' +
        '(unless WEBHOOK_ALLOW_PRIVATE); at most 50 endpoints.',
      body: CreateEndpointBody,
      response: { 201: Envelope(WebhookEndpointWithSecret) },
    },
  }, async (request, reply) => {
    const endpoint = await createEndpoint(app.db, settings, request.body)
    app.webhooks?.endpointActive()
    return reply.code(201).header('Location', `${base}/${endpoint.endpointId}`).send(ok(endpoint))
  })

  app.get(base, {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints (page shape)',
      description: 'Every endpoint, newest first, without secrets.',
      querystring: EndpointListQuery,
      response: { 200: Envelope(Page(WebhookEndpoint)) },
    },
  }, async (request) => ok(await pageEndpoints(app.db, request.query)))

  app.get(`${base}/:id`, {
    config: { access: 'admin', errors: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getWebhookEndpoint',
      summary: 'Get a webhook endpoint',
      description: 'The endpoint, without its secret.',
      params: EndpointIdParams,
      response: { 200: Envelope(WebhookEndpoint) },
    },
  }, async (request) => ok(await getEndpoint(app.db, request.params.id)))

  app.patch(`${base}/:id`, {
    config: { access: 'admin', errors: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'updateWebhookEndpoint',
      summary: 'Change a webhook endpoint (url, eventTypes, description, status)',
      description: 'Absent fields are unchanged; `eventTypes: null` = every type. Setting status DISABLED stops its PENDING deliveries as FAILED; ' +
        'events committed while it is DISABLED are not delivered to it (read them from the event feed).',
      params: EndpointIdParams,
      body: PatchEndpointBody,
      response: { 200: Envelope(WebhookEndpoint) },
    },
  }, async (request) => {
    const endpoint = await changeEndpoint(app.db, settings, request.params.id, request.body)
    if (endpoint.status === 'ACTIVE') app.webhooks?.endpointActive()
    return ok(endpoint)
  })

  app.patch(`${base}/:id/rotate-secret`, {
    config: { access: 'admin', errors: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description: 'A new secret, shown in the answer; for 24 hours deliveries carry signatures with both the old and the new secret.',
      params: EndpointIdParams,
      response: { 200: Envelope(WebhookEndpointWithSecret) },
    },
  }, async (request) => ok(await rotateSecret(app.db, request.params.id)))

  app.patch(`${base}/:id/delete`, {
    config: { access: 'admin', errors: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete a webhook endpoint',
      description: 'The endpoint is gone (404 afterwards) and gets nothing more; its PENDING deliveries stop as FAILED.',
      params: EndpointIdParams,
      response: { 200: Envelope(Type.Null()) },
    },
  }, async (request) => {
    await removeEndpoint(app.db, request.params.id)
    return ok(null)
  })

  app.get(`${base}/:id/deliveries`, {
    config: { access: 'admin', errors: ['WEBHOOK_ENDPOINT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'listWebhookDeliveries',
      summary: 'An endpoint’s delivery log (page shape)',
      description: 'Its deliveries, newest first (deliveryId desc); filter `status`.',
      params: EndpointIdParams,
      querystring: DeliveryListQuery,
      response: { 200: Envelope(Page(WebhookDelivery)) },
    },
  }, async (request) => ok(await pageEndpointDeliveries(app.db, request.params.id, request.query)))

  app.patch('/api/v1/admin/webhook-deliveries/:id/retry', {
    config: { access: 'admin', errors: ['WEBHOOK_DELIVERY_NOT_FOUND', 'WEBHOOK_ENDPOINT_DISABLED'] },
    schema: {
      tags,
      operationId: 'retryWebhookDelivery',
      summary: 'Retry a delivery now',
      description: 'In any status: the delivery becomes PENDING, due now, on a fresh retry schedule; `attempts` keeps counting. ' +
        'A delivery to a DISABLED endpoint is 409 WEBHOOK_ENDPOINT_DISABLED.',
      params: EndpointIdParams,
      response: { 200: Envelope(WebhookDelivery) },
    },
  }, async (request) => {
    const delivery = await retryDelivery(app.db, request.params.id)
    app.webhooks?.endpointActive()
    return ok(delivery)
  })
}
