import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, Slice, ok } from '../http/schemas.js'
import { Event, EventFeedQuery, EventIdParams } from './schemas.js'
import { getEvent, readEventFeed } from './service.js'

/** The event feed (CONTRACT §12): every announced change of an order, oldest first (admin). */
export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['events']

  app.get('/api/v1/admin/events', {
    config: { access: 'admin', errors: ['CURSOR_EXPIRED'] },
    schema: {
      tags,
      operationId: 'listEvents',
      summary: 'Read the event feed, oldest first',
      description: 'Every event in commit order, in the cursor (slice) shape; filters `type` (comma-separated) and `orderId`. ' +
        '`nextCursor` is never null: at the end of the feed it is the position to poll from later. A consumer that keeps ' +
        'following it sees every event exactly once. No `page`; a cursor older than EVENT_RETENTION is 410 CURSOR_EXPIRED.',
      querystring: EventFeedQuery,
      response: { 200: Envelope(Slice(Event)) },
    },
  }, async (request) => ok(await readEventFeed(app.db, app.config.eventRetentionMs, request.query)))

  app.get('/api/v1/admin/events/:eventId', {
    config: { access: 'admin', errors: ['EVENT_NOT_FOUND'] },
    schema: {
      tags,
      operationId: 'getEvent',
      summary: 'Get one event',
      description: 'The event as the feed and webhooks carry it.',
      params: EventIdParams,
      response: { 200: Envelope(Event) },
    },
  }, async (request) => ok(await getEvent(app.db, request.params.eventId)))
}
