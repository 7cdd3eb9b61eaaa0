import type { Db } from '../db/schema.js'
import { ApiError, invalidParam } from '../errors.js'
import { pageWindow, toPage } from '../http/paging.js'
import { hostOf, isPublicAddress, resolveAll } from './addresses.js'
import {
  countEndpoints, deleteEndpoint, findDelivery, findEndpoint, insertEndpoint, listEndpoints, pageDeliveries,
  requeueDelivery, updateEndpoint,
} from './repository.js'
import {
  MAX_ENDPOINTS, type CreateEndpointBody, type DeliveryListQuery, type EndpointListQuery, type PatchEndpointBody,
  type WebhookDelivery, type WebhookEndpoint, type WebhookEndpointWithSecret,
} from './schemas.js'
import { PREVIOUS_SECRET_TTL_MS, newSecret } from './signing.js'
import type { WebhookDeliveryRow, WebhookEndpointRow } from './table.js'
import type { EventType } from '../events/schemas.js'

export interface WebhookSettings {
  /** WEBHOOK_ALLOW_PRIVATE: private hosts and http:// allowed (development and tests). */
  allowPrivate: boolean
}

export function toEndpoint (row: WebhookEndpointRow): WebhookEndpoint {
  return {
    endpointId: row.id,
    url: row.url,
    eventTypes: row.event_types as EventType[] | null,
    description: row.description,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

export function toDelivery (row: WebhookDeliveryRow): WebhookDelivery {
  return {
    deliveryId: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type as EventType,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.last_attempt_at?.toISOString() ?? null,
    nextAttemptAt: row.status === 'PENDING' ? row.next_attempt_at.toISOString() : null,
    lastResponseStatus: row.last_response_status,
    lastError: row.last_error,
  }
}

/** The refusals that WEBHOOK_ALLOW_PRIVATE lifts say so (issue 30): `allows(what)`. */
const allows = (what: string) => `the setting WEBHOOK_ALLOW_PRIVATE=true allows ${what}, for development`

/** The URL rules (CONTRACT §12, §14): absolute https, no user-info, a public host; 400 naming `url` otherwise. */
export async function checkUrl (raw: string, settings: WebhookSettings): Promise<string> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalidParam('url', 'must be an absolute URL')
  }
  const schemes = settings.allowPrivate ? ['https:', 'http:'] : ['https:']
  if (!schemes.includes(url.protocol)) {
    throw invalidParam('url', settings.allowPrivate ? 'must be an http:// or https:// URL' : `must be an https:// URL (${allows('http://')})`)
  }
  if (url.username !== '' || url.password !== '') throw invalidParam('url', 'must not contain user-info (user:password@)')
  if (url.href.length > 2048) throw invalidParam('url', 'must be at most 2048 characters')
  if (!settings.allowPrivate) {
    const host = hostOf(url)
    const refused = (await resolveAll(host)).find(address => !isPublicAddress(address))
    if (refused !== undefined) {
      throw invalidParam('url', `must name a public host: ${host}${refused === host ? '' : ` resolves to ${refused}`}, which is not globally routable (${allows('private hosts')})`)
    }
  }
  return url.href
}

async function endpointOrThrow (db: Db, id: string): Promise<WebhookEndpointRow> {
  const row = await findEndpoint(db, id)
  if (!row) throw new ApiError('WEBHOOK_ENDPOINT_NOT_FOUND', `Webhook endpoint ${id} does not exist.`)
  return row
}

export async function createEndpoint (db: Db, settings: WebhookSettings, body: CreateEndpointBody): Promise<WebhookEndpointWithSecret> {
  const url = await checkUrl(body.url, settings)
  if (await countEndpoints(db) >= MAX_ENDPOINTS) {
    throw invalidParam('url', `no more endpoints: at most ${MAX_ENDPOINTS} may exist; delete one first`)
  }
  const row = await insertEndpoint(db, {
    url,
    event_types: body.eventTypes ? [...new Set(body.eventTypes)] : null,
    description: body.description ?? null,
    secret: newSecret(),
  })
  return { ...toEndpoint(row), secret: row.secret }
}

export async function pageEndpoints (db: Db, query: EndpointListQuery) {
  const window = pageWindow(query)
  const [rows, total] = await Promise.all([listEndpoints(db, window.offset, window.limit), countEndpoints(db)])
  return toPage(rows, total, window, toEndpoint)
}

export async function getEndpoint (db: Db, id: string): Promise<WebhookEndpoint> {
  return toEndpoint(await endpointOrThrow(db, id))
}

export async function changeEndpoint (db: Db, settings: WebhookSettings, id: string, body: PatchEndpointBody): Promise<WebhookEndpoint> {
  const changes: Parameters<typeof updateEndpoint>[2] = {}
  if (body.url !== undefined) changes.url = await checkUrl(body.url, settings)
  if (body.eventTypes !== undefined) changes.event_types = body.eventTypes ? [...new Set(body.eventTypes)] : null
  if (body.description !== undefined) changes.description = body.description
  if (body.status !== undefined) changes.status = body.status
  const row = await updateEndpoint(db, id, changes, body.status === 'DISABLED' ? 'endpoint disabled' : undefined)
  if (!row) throw new ApiError('WEBHOOK_ENDPOINT_NOT_FOUND', `Webhook endpoint ${id} does not exist.`)
  return toEndpoint(row)
}

/** A new secret; the current one keeps signing beside it for 24 h. */
export async function rotateSecret (db: Db, id: string): Promise<WebhookEndpointWithSecret> {
  const current = await endpointOrThrow(db, id)
  const row = await updateEndpoint(db, id, {
    secret: newSecret(),
    previous_secret: current.secret,
    previous_secret_expires_at: new Date(Date.now() + PREVIOUS_SECRET_TTL_MS),
  })
  if (!row) throw new ApiError('WEBHOOK_ENDPOINT_NOT_FOUND', `Webhook endpoint ${id} does not exist.`)
  return { ...toEndpoint(row), secret: row.secret }
}

export async function removeEndpoint (db: Db, id: string): Promise<void> {
  if (!await deleteEndpoint(db, id)) throw new ApiError('WEBHOOK_ENDPOINT_NOT_FOUND', `Webhook endpoint ${id} does not exist.`)
}

export async function pageEndpointDeliveries (db: Db, id: string, query: DeliveryListQuery) {
  const endpoint = await endpointOrThrow(db, id)
  const window = pageWindow(query)
  const { rows, total } = await pageDeliveries(db, endpoint.id, query.status, window.offset, window.limit)
  return toPage(rows, total, window, toDelivery)
}

/** Queues a delivery again at once (any status), on a fresh schedule; its endpoint must be ACTIVE. */
export async function retryDelivery (db: Db, id: string): Promise<WebhookDelivery> {
  const delivery = await findDelivery(db, id)
  if (!delivery || delivery.endpoint_deleted) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND', `Webhook delivery ${id} does not exist.`)
  if (delivery.endpoint_status === 'DISABLED') {
    throw new ApiError('WEBHOOK_ENDPOINT_DISABLED', `The endpoint of delivery ${id} is disabled; enable it (PATCH status ACTIVE) before retrying.`)
  }
  const row = await requeueDelivery(db, delivery.id)
  if (!row) throw new ApiError('WEBHOOK_DELIVERY_NOT_FOUND', `Webhook delivery ${id} does not exist.`)
  return toDelivery(row)
}
