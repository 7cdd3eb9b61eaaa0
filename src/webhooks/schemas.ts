import { Type, type Static } from 'typebox'
import { EventTypeSchema } from '../events/schemas.js'
import { Component, Envelope, Id, Nullable, Page, PageQuery, PathId, PlainName, Ref, Timestamp } from '../http/schemas.js'

/** At most this many endpoints (not deleted) exist at once (CONTRACT §14). */
export const MAX_ENDPOINTS = 50
export const MAX_URL_LENGTH = 2048

const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'Absolute https:// URL (≤ 2048 characters, no user-info) of a public host; http:// and private hosts only with WEBHOOK_ALLOW_PRIVATE=true', examples: ['https://hooks.example.com/orders'] })
const EventTypes = Nullable(Type.Array(Ref(EventTypeSchema), { minItems: 1, maxItems: 12, description: 'The event types sent; null = every type' }))
const Description = Nullable(PlainName({ maxLength: 500 }))
export const EndpointStatusSchema = Component('WebhookEndpointStatus', Type.Enum(['ACTIVE', 'DISABLED']))
export const DeliveryStatusSchema = Component('WebhookDeliveryStatus', Type.Enum(['PENDING', 'SUCCEEDED', 'FAILED']))

const EndpointFields = {
  endpointId: Id,
  url: Type.String(),
  eventTypes: EventTypes,
  description: Nullable(Type.String()),
  status: Ref(EndpointStatusSchema),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}
export const WebhookEndpoint = Component('WebhookEndpoint', Type.Object(EndpointFields, { description: 'Where events are sent' }))
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

export const WebhookEndpointWithSecret = Component('WebhookEndpointWithSecret', Type.Object({
  ...EndpointFields,
  secret: Type.String({ description: '`whsec_` + base64 of 32 random bytes: the signing key. Shown on creation and rotation only.' }),
}, { description: 'An endpoint with its signing secret (creation and rotation only)' }))
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>

export const CreateEndpointBody = Type.Object({
  url: Url,
  eventTypes: Type.Optional(EventTypes),
  description: Type.Optional(Description),
}, { additionalProperties: false })
export type CreateEndpointBody = Static<typeof CreateEndpointBody>

export const PatchEndpointBody = Type.Object({
  url: Type.Optional(Url),
  eventTypes: Type.Optional(EventTypes),
  description: Type.Optional(Description),
  status: Type.Optional(Ref(EndpointStatusSchema)),
}, { additionalProperties: false })
export type PatchEndpointBody = Static<typeof PatchEndpointBody>

export const EndpointListQuery = Type.Object({ ...PageQuery }, { additionalProperties: false })
export type EndpointListQuery = Static<typeof EndpointListQuery>

export const DeliveryListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(Ref(DeliveryStatusSchema)),
}, { additionalProperties: false })
export type DeliveryListQuery = Static<typeof DeliveryListQuery>

export const WebhookDelivery = Component('WebhookDelivery', Type.Object({
  deliveryId: Id,
  endpointId: Id,
  eventId: Id,
  eventType: Ref(EventTypeSchema),
  status: Ref(DeliveryStatusSchema),
  attempts: Type.Integer({ minimum: 0 }),
  lastAttemptAt: Nullable(Timestamp),
  nextAttemptAt: Nullable(Timestamp),
  lastResponseStatus: Nullable(Type.Integer()),
  lastError: Nullable(Type.String({ maxLength: 200 })),
}, { description: 'One event to one endpoint: the delivery log' }))
export type WebhookDelivery = Static<typeof WebhookDelivery>

export const EndpointIdParams = Type.Object({ id: PathId }, { additionalProperties: false })

/** The answers' envelopes, made when this module loads (named components). */
export const WebhookEndpointEnvelope = Envelope(WebhookEndpoint)
export const WebhookEndpointWithSecretEnvelope = Envelope(WebhookEndpointWithSecret)
export const WebhookEndpointPageEnvelope = Envelope(Page(WebhookEndpoint))
export const WebhookDeliveryEnvelope = Envelope(WebhookDelivery)
export const WebhookDeliveryPageEnvelope = Envelope(Page(WebhookDelivery))
