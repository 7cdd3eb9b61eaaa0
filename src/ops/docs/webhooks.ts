import { EVENT_TYPES, type EventType } from '../../events/schemas.js'
import { eventExample } from './examples.js'

/**
 * The document's `webhooks` (OpenAPI 3.1): what the service POSTs to a webhook endpoint, one entry per
 * event type it can emit (CONTRACT §12, docs/events.md), with the Standard Webhooks headers and the
 * answers the receiver should give. Built from `EVENT_TYPES`, so a new type is documented with it.
 */

/** When each type is sent (CONTRACT §12's table). */
const WHEN: Record<EventType, string> = {
  'order.placed': 'POST /orders created an order (not on an idempotent replay)',
  'order.confirmed': 'the owner confirmed the order',
  'order.cancelled': 'the owner or an admin cancelled the order',
  'order.expired': 'the order was not confirmed within ORDER_RESERVATION_TTL and the service cancelled it',
  'order.delivered': 'an admin marked the order delivered',
  'order.deleted': 'the order was deleted (from an active state: after the payment’s event)',
  'order.updated': 'PUT or PATCH changed the memo or the shipping address without a status change',
  'payment.created': 'a confirm opened the order’s payment',
  'payment.succeeded': 'processing captured the payment',
  'payment.failed': 'processing was declined',
  'payment.refunded': 'a refund, partial or full (`data.refund.amount`)',
  'payment.cancelled': 'the order was cancelled, deleted or expired while the payment was PENDING or FAILED, or an edit lowered the total by at least what the payment still asked for',
  'order.edited': 'an edit changed the order\'s lines or address (after the event of the payment it settled with, if any; `data.edit`)',
  'payment.updated': 'an edit changed the amount of the order\'s open (PENDING or FAILED) payment',
  'fulfillment.created': 'goods of the order shipped (`data.fulfillment`, with carrier and tracking when given)',
  'fulfillment.delivered': 'a shipment was delivered (before `order.delivered`, when the order follows)',
  'fulfillment.cancelled': 'a SHIPPED shipment was cancelled and its quantities are to ship again',
  'return.requested': 'the owner or an admin asked to send goods back (`data.return`)',
  'return.received': 'the goods of a return came back, after the `payment.refunded` of its refund',
  'return.rejected': 'an admin rejected a return',
  'return.cancelled': 'the owner or an admin cancelled a return that was still REQUESTED',
}

const header = (name: string, pattern: string, description: string, example: string) =>
  ({ in: 'header', name, required: true, schema: { type: 'string', pattern }, description, example })

const HEADERS = [
  header('webhook-id', '^[1-9][0-9]{0,18}$', 'The `eventId` as a decimal string: the same on every attempt of the event. Skip an id already handled (delivery is at least once).', '812'),
  header('webhook-timestamp', '^[0-9]{1,12}$', 'Unix seconds of this attempt. Refuse a timestamp more than 5 minutes from your clock (it stops replays of recorded requests).', '1795512600'),
  header('webhook-signature', '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$',
    '`v1,` + base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` (the raw body), keyed with the bytes of the endpoint’s secret after `whsec_` (base64-decoded). For 24 h after a rotation there are two, space-separated: accept the request when one matches.',
    'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='),
  header('user-agent', '^order-service/', '`order-service/<version>`.', 'order-service/0.1.0'),
]

const retried = (what: string) => ({
  description: `${what}: the event is sent again on the retry schedule (WEBHOOK_RETRY_SCHEDULE); a Retry-After is honoured up to the next step's length`,
  headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
})

/** `order.placed` → `orderPlacedWebhook`. */
const operationId = (type: string) => `${type.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase())}Webhook`

/** The `webhooks` object: one POST per event type. */
export function webhooks (): Record<string, unknown> {
  return Object.fromEntries(EVENT_TYPES.map(type => [type, {
    post: {
      tags: ['webhooks'],
      operationId: operationId(type),
      summary: `${type}: ${WHEN[type]}`,
      description: `Sent to every ACTIVE webhook endpoint subscribed to \`${type}\` (or to all types) when ${WHEN[type]}. ` +
        'The body is the event object exactly as the feed (GET /api/v1/admin/events) shows it. Check the signature over the raw ' +
        'body before parsing it; order an order\'s events by `sequence`.',
      parameters: HEADERS,
      requestBody: {
        required: true,
        description: `The event, with \`type\` \`${type}\``,
        content: {
          'application/json': {
            schema: { allOf: [{ $ref: '#/components/schemas/Event' }, { type: 'object', properties: { type: { const: type } } }] },
            example: eventExample(type),
          },
        },
      },
      responses: {
        '2XX': { description: 'Acknowledged: any 2xx within WEBHOOK_TIMEOUT (default 10 s). The body is ignored (at most 4 KiB is read); a 2xx that comes late counts as a failure.' },
        410: { description: 'Gone: the delivery fails at once and the endpoint becomes DISABLED (it gets nothing more until re-enabled)' },
        429: retried('Too Many Requests'),
        503: retried('Service Unavailable'),
        default: { description: 'Anything else — another status, a redirect (not followed), no answer in time — is a failure: the event is sent again on the retry schedule, and the delivery is FAILED after its last step.' },
      },
    },
  }]))
}
