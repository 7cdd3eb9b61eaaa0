import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import { notFound, pathOf } from './error-handler.js'
import { cacheControl, variesByCredential } from './security-headers.js'

/** The request headers a catalogue answer varies by: the two ways to send a credential. */
const CREDENTIAL_HEADERS = 'Authorization, X-API-Key'

/** `value` added to a `Vary` header that may already name others (CORS adds `Origin`). */
function withVary (current: unknown, value: string): string {
  const names = String(current ?? '').split(',').map(name => name.trim()).filter(Boolean)
  for (const name of value.split(', ')) {
    if (!names.some(other => other.toLowerCase() === name.toLowerCase())) names.push(name)
  }
  return names.join(', ')
}

/**
 * Wire rules that hold for every route (CONTRACT §11 Wire). Register them right after the error
 * handling and before the access rules: the trailing-slash 404 outranks 405 and 401 (CONTRACT §10).
 * - A path under /api that ends in `/` names no resource: 404 RESOURCE_NOT_FOUND (without this,
 *   `/api/v1/orders/` would reach `/api/v1/orders/{id}` with an empty id and fail validation).
 * - Every /api answer, errors included, carries `Cache-Control` (see `cacheControl`).
 * - `TRUST_PROXY=true` is warned about once at start-up.
 */
export function registerWireRules (app: FastifyInstance, config: Config): void {
  if (config.trustProxy === true) {
    app.log.warn({ setting: 'TRUST_PROXY' },
      'TRUST_PROXY=true believes X-Forwarded-For from any client, so a client can pick its own address and rate-limit ' +
      'budget; set TRUST_PROXY to the number of proxies in front of the service or to their addresses instead')
  }

  app.addHook('onRequest', async (request) => {
    const path = pathOf(request.url)
    if (path.startsWith('/api/') && path.endsWith('/')) throw notFound(path)
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const path = pathOf(request.url)
    if (path !== '/api' && !path.startsWith('/api/')) return payload
    const credentialSent = request.headers.authorization !== undefined || request.headers['x-api-key'] !== undefined
    reply.header('cache-control', cacheControl(request.method, path, reply.statusCode, credentialSent))
    if (variesByCredential(request.method, path)) reply.header('vary', withVary(reply.getHeader('vary'), CREDENTIAL_HEADERS))
    return payload
  })
}
