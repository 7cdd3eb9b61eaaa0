import http from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { translateDbError } from '../db/errors.js'
import { ApiError, errorSlug } from '../errors.js'

const FASTIFY_ERRORS: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as application/json.'),
  FST_ERR_CTP_INVALID_TYPE: () =>
    new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be sent as application/json.'),
  FST_ERR_CTP_BODY_TOO_LARGE: () =>
    new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than this service accepts.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    new ApiError('MALFORMED_REQUEST', 'The request body is empty; send a JSON object.'),
  FST_ERR_CTP_INVALID_JSON_BODY: () =>
    new ApiError('MALFORMED_REQUEST', 'The request body is not valid JSON.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError('MALFORMED_REQUEST', 'The Content-Length header does not match the body.'),
}

/** Maps anything thrown while serving a request to a catalogue error; unknown failures become 500. */
export function toApiError (error: unknown): ApiError {
  if (error instanceof ApiError) return error
  const fastifyError = error as Partial<FastifyError>
  const known = fastifyError.code !== undefined ? FASTIFY_ERRORS[fastifyError.code] : undefined
  if (known) return known()
  // JSON.parse failures, and secure-json-parse refusing __proto__ / constructor keys.
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return new ApiError('MALFORMED_REQUEST', 'The request body is not valid JSON.')
  }
  const fromDatabase = translateDbError(error)
  if (fromDatabase) return fromDatabase
  if (fastifyError.statusCode === 400) return new ApiError('MALFORMED_REQUEST', 'The request could not be read.')
  return new ApiError('INTERNAL_ERROR', 'An unexpected error occurred. It has been logged; please try again later.')
}

/** Sends the error envelope for `error` (CONTRACT §2). */
export function sendError (config: Config, request: FastifyRequest, reply: FastifyReply, error: ApiError) {
  const body = {
    success: false,
    data: null,
    error: {
      type: `${config.errorTypeBase}/errors/${errorSlug(error.code)}`,
      title: error.title,
      status: error.status,
      detail: error.message,
      instance: request.url.split('?', 1)[0],
      code: error.code,
      timestamp: new Date().toISOString(),
      ...(error.invalidParams ? { invalidParams: error.invalidParams } : {}),
    },
  }
  return reply.code(error.status).headers(error.headers).type('application/problem+json').send(body)
}

/** The one error handler and the 404 handler: every error response is built here. */
export function registerErrorHandling (app: FastifyInstance, config: Config): void {
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    return sendError(config, request, reply, apiError)
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!
    const error = /^\/api\/v2(\/|$)/.test(path)
      ? new ApiError('API_VERSION_NOT_AVAILABLE', 'API version 2 is reserved and not available; use /api/v1.')
      : new ApiError('RESOURCE_NOT_FOUND', `No resource at ${path}.`)
    return sendError(config, request, reply, error)
  })
}

/**
 * Answers what Fastify's router refuses before any route or hook runs (a path that is not valid
 * percent-encoding): the same error envelope, with the headers the `onRequest` hook would have set.
 * No hook runs for such a request, so `completed` (the access log line, the metrics) is called here.
 */
export function frameworkErrorHandler (
  config: Config, headers: Record<string, string>, completed: (request: FastifyRequest, reply: FastifyReply) => void
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.raw.once('finish', () => completed(request, reply))
    reply.headers(headers).header('x-request-id', request.id)
    const apiError = error.code === 'FST_ERR_BAD_URL'
      ? new ApiError('MALFORMED_REQUEST', 'The request path is not valid percent-encoded UTF-8.')
      : toApiError(error)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    return sendError(config, request, reply, apiError)
  }
}

/** The methods a known path answers with 405 when it does not support them. */
const METHODS = http.METHODS.filter(method => method !== 'CONNECT')

/**
 * Collects every route as it is registered, so that `registerMethodNotAllowed` can answer a known
 * path with the wrong method (DELETE included) with 405 and an `Allow` header instead of 404.
 */
export function collectRoutes (app: FastifyInstance): Map<string, Set<string>> {
  const routes = new Map<string, Set<string>>()
  app.addHook('onRoute', (route) => {
    const methods = routes.get(route.url) ?? new Set<string>()
    for (const method of [route.method].flat()) methods.add(method)
    routes.set(route.url, methods)
  })
  return routes
}

export function registerMethodNotAllowed (app: FastifyInstance, routes: Map<string, Set<string>>): void {
  // Every method Node's parser accepts, so that PROPFIND or TRACE on a known path is a 405 too
  // (CONNECT never reaches a route: Node hands it to the server's 'connect' event).
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  }
  for (const [url, methods] of [...routes]) {
    const missing = METHODS.filter(method => !methods.has(method))
    if (missing.length === 0) continue
    const allow = [...methods].sort().join(', ')
    app.route({
      method: missing,
      url,
      config: { access: 'public' },
      schema: { hide: true },
      // Answered before body parsing and authentication: 405 outranks 401, 413 and 415 (CONTRACT §10).
      onRequest: async () => {
        throw new ApiError('METHOD_NOT_ALLOWED', `This path does not support that method; it supports ${allow}.`, {
          headers: { Allow: allow },
        })
      },
      handler: async () => { throw new Error('unreachable') },
    })
  }
}
