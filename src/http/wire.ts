import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { notFound, pathOf } from './error-handler.js'
import { cacheControl, variesByCredential } from './security-headers.js'

/** The request headers a catalogue answer varies by: the two ways to send a credential. */
const CREDENTIAL_HEADERS = 'Authorization, X-API-Key'

/** `value` added to a `Vary` header that may already name others (CORS adds `Origin`). */
export function withVary (current: unknown, value: string): string {
  const names = String(current ?? '').split(',').map(name => name.trim()).filter(Boolean)
  for (const name of value.split(', ')) {
    if (!names.some(other => other.toLowerCase() === name.toLowerCase())) names.push(name)
  }
  return names.join(', ')
}

const isApiPath = (path: string) => path === '/api' || path.startsWith('/api/')

/** What a cross-origin caller may send and read (CONTRACT §11 Wire). */
export const CORS_METHODS = ['GET', 'POST', 'PUT', 'PATCH'] as const
export const CORS_ALLOWED_HEADERS = [
  'Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match', 'X-API-Key', 'X-Request-Id',
] as const
export const CORS_EXPOSED_HEADERS = [
  'ETag', 'Location', 'Idempotent-Replayed', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-Request-Id',
] as const
/**
 * How long a browser may reuse a preflight's answer (seconds): 10 minutes. The lists above change
 * only with a release, so longer would do for them; but a browser does not ask again while its
 * cached preflight lasts, so this is also how long an origin taken off `CORS_ORIGINS` may still
 * *send* a PATCH to a URL it preflighted before (it cannot read the answer: that one lacks
 * `Access-Control-Allow-Origin`). Browsers cap it anyway (Chromium at 7200, Firefox at 86400).
 */
export const CORS_MAX_AGE = 600

/** CORS takes no part: the answer is what it would be with CORS off. */
const CORS_OFF: FastifyCorsOptions = Object.freeze({ origin: false })

/**
 * CORS for `/api/**` when `CORS_ORIGINS` is set (CONTRACT §11 Wire), through `@fastify/cors`,
 * whose `onRequest` hook must run before the rate limit and the access rules: register this
 * before them. Per request:
 * - outside `/api`, with no `Origin`, or from an origin not listed: no CORS header at all, and the
 *   request goes on as with CORS off (an OPTIONS is the 405 or 404 it always was). Answers under
 *   `/api` still carry `Vary: Origin`, since what they say depends on it;
 * - a preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) from a listed origin,
 *   to any `/api` path, known or not: 204, no body, answered in the hook, so it needs no credential
 *   and counts toward no rate limit. The lists are fixed: the browser compares its method and
 *   headers with them. An unknown path is not refused here: the request itself then gets a 404
 *   envelope the page can read, which a failed preflight would hide;
 * - any other request from a listed origin, errors included: `Access-Control-Allow-Origin` (the
 *   origin, or `*`) and `Access-Control-Expose-Headers`, so the page can read every answer.
 * Never `Access-Control-Allow-Credentials`: credentials are headers, not cookies.
 */
export async function registerCors (app: FastifyInstance, config: Config): Promise<void> {
  const allowed = config.corsOrigins
  if (allowed !== '*' && allowed.length === 0) return

  const common = {
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE,
    credentials: false,
  }
  // Per origin, the options for a preflight and for any other request, built once.
  const optionsFor = (origin: string) => ({
    preflight: Object.freeze({ ...common, origin, preflight: true }),
    other: Object.freeze({ ...common, origin, preflight: false }),
  })
  const any = allowed === '*' ? optionsFor('*') : undefined
  const listed = new Map(allowed === '*' ? [] : allowed.map(origin => [origin, optionsFor(origin)]))

  const delegator = (request: FastifyRequest, callback: (error: Error | null, options: FastifyCorsOptions) => void): void => {
    const origin = request.headers.origin
    const options = origin === undefined || !isApiPath(pathOf(request.url)) ? undefined : any ?? listed.get(origin)
    if (options === undefined) return callback(null, CORS_OFF)
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined
    callback(null, preflight ? options.preflight : options.other)
  }

  // The plugin adds a catch-all OPTIONS route for preflights to paths that have no OPTIONS route of
  // their own. An OPTIONS that it does not answer reaches that route's handler, which hands it to
  // the 404 handler: the route is public so that this is a 404, not a 401.
  app.addHook('onRoute', (route) => {
    if (route.url === '*' && route.method === 'OPTIONS') route.config = { ...route.config, access: 'public' }
  })
  await app.register(cors, { hook: 'onRequest', delegator })
}

/** Takes `Origin` back out of `Vary`: the plugin names it on every answer, but outside /api none depends on it. */
function withoutOriginVary (reply: FastifyReply): void {
  const vary = reply.getHeader('vary')
  if (vary === undefined) return
  const names = String(vary).split(',').map(name => name.trim()).filter(name => name !== '' && name.toLowerCase() !== 'origin')
  if (names.length === 0) reply.removeHeader('vary')
  else reply.header('vary', names.join(', '))
}

/**
 * One member of an `If-None-Match` list: `"…"` or `W/"…"` (RFC 9110 §8.8.3), between commas. A
 * tag may itself hold a comma, so the list is not split on commas; a member that is not a tag
 * (`w/"1"`, `1`) matches nothing.
 */
const LIST_TAG = /(?:^|,)[ \t]*((?:W\/)?"[^"]*")[ \t]*(?=,|$)/g

/** The tag without its weakness: weak comparison (RFC 9110 §8.8.3.2) compares only this. */
const opaqueTag = (tag: string) => tag.startsWith('W/') ? tag.slice(2) : tag

/**
 * Whether `If-None-Match` matches the current `etag` (RFC 9110 §13.1.2): `*` matches any current
 * representation; otherwise any tag of the list that equals it under weak comparison. A field that
 * holds no well-formed tag matches nothing, so the full answer is sent.
 */
export function ifNoneMatchMatches (condition: string, etag: string): boolean {
  if (condition.trim() === '*') return true
  const current = opaqueTag(etag.trim())
  for (const [, tag] of condition.matchAll(LIST_TAG)) if (opaqueTag(tag!) === current) return true
  return false
}

/**
 * Conditional reads (CONTRACT §11 Wire, §14): a GET or HEAD about to be answered 200 with an `ETag`,
 * whose `If-None-Match` matches it, is answered 304 instead. Decided here, as the answer leaves, so
 * that every route that sets an `ETag` gets it without doing anything. Errors are never turned into
 * 304, nor are answers to other methods (If-None-Match on a PATCH is ignored).
 */
function notModified (request: FastifyRequest, reply: FastifyReply): boolean {
  if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return false
  const condition = request.headers['if-none-match']
  const etag = reply.getHeader('etag')
  return condition !== undefined && typeof etag === 'string' && ifNoneMatchMatches(condition, etag)
}

/**
 * Turns the answer into a 304 with no body (RFC 9110 §15.4.5): it keeps the headers the 200 would
 * have had — `ETag`, `Cache-Control` (set below, as for the 200), `Vary`, the CORS, security and
 * request-id headers — but not the body's own metadata. A GET's body is dropped (a stream closed
 * unread), so no `Content-Length` is sent. A HEAD's is left for Fastify's HEAD handling, which runs
 * next, sends no body and gives the 200's `Content-Length`, as RFC 9110 §8.6 allows on a 304.
 */
function answerNotModified (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  reply.code(304)
  for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-disposition']) reply.removeHeader(name)
  if (request.method === 'HEAD') return payload
  const stream = payload as { destroy?: () => void } | null
  if (typeof stream?.destroy === 'function') stream.destroy()
  return null
}

/**
 * Wire rules that hold for every route (CONTRACT §11 Wire). Register them right after the error
 * handling and before the access rules: the trailing-slash 404 outranks 405 and 401 (CONTRACT §10).
 * - A path under /api that ends in `/` names no resource: 404 RESOURCE_NOT_FOUND (without this,
 *   `/api/v1/orders/` would reach `/api/v1/orders/{id}` with an empty id and fail validation).
 * - Every /api answer, errors included, carries `Cache-Control` (see `cacheControl`).
 * - A GET or HEAD whose `If-None-Match` matches the answer's `ETag` is answered 304 (`notModified`).
 * - `TRUST_PROXY=true` is warned about once at start-up.
 */
export function registerWireRules (app: FastifyInstance, config: Config): void {
  const corsOn = config.corsOrigins === '*' || config.corsOrigins.length > 0
  if (config.trustProxy === true) {
    app.log.warn({ setting: 'TRUST_PROXY' },
      'TRUST_PROXY=true believes X-Forwarded-For from any client, so a client can pick its own address and rate-limit ' +
      'budget; set TRUST_PROXY to the number of proxies in front of the service or to their addresses instead')
  }

  // Callback hooks, not async ones: neither waits for anything, and a promise per hook would cost
  // every request a turn of the microtask queue (bench/RESULTS.md, issue 22).
  app.addHook('onRequest', (request, _reply, done) => {
    const path = pathOf(request.url)
    done(path.startsWith('/api/') && path.endsWith('/') ? notFound(path) : undefined)
  })

  app.addHook('onSend', (request, reply, payload, done) => {
    if (notModified(request, reply)) payload = answerNotModified(request, reply, payload)
    const path = pathOf(request.url)
    if (!isApiPath(path)) {
      if (corsOn) withoutOriginVary(reply)
      return done(null, payload)
    }
    const credentialSent = request.headers.authorization !== undefined || request.headers['x-api-key'] !== undefined
    reply.header('cache-control', cacheControl(request.method, path, reply.statusCode, credentialSent))
    if (variesByCredential(request.method, path)) reply.header('vary', withVary(reply.getHeader('vary'), CREDENTIAL_HEADERS))
    done(null, payload)
  })
}
