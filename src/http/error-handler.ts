import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { translateDbError } from '../db/errors.js'
import { ApiError, errorSlug } from '../errors.js'
import { securityHeaders } from './security-headers.js'

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

/** The path of a request target, without its query: an error's `instance`. */
export const pathOf = (url: string): string => {
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

/**
 * The error envelope for `error` at `instance` (CONTRACT §2): the one builder of every error body,
 * whether Fastify sends it (`sendError`) or the socket is written directly (`clientErrorHandler`).
 */
export function problem (config: Config, error: ApiError, instance: string) {
  return {
    success: false as const,
    data: null,
    error: {
      type: `${config.errorTypeBase}/errors/${errorSlug(error.code)}`,
      title: error.title,
      status: error.status,
      detail: error.message,
      instance,
      code: error.code,
      timestamp: new Date().toISOString(),
      ...(error.invalidParams ? { invalidParams: error.invalidParams } : {}),
    },
  }
}

/** Sends the error envelope for `error` (CONTRACT §2). */
export function sendError (config: Config, request: FastifyRequest, reply: FastifyReply, error: ApiError) {
  const body = problem(config, error, pathOf(request.url))
  return reply.code(error.status).headers(error.headers).type('application/problem+json').send(body)
}

/**
 * A request body cut short because the client went away (it reset the connection or closed it
 * mid-upload): Node destroys the request stream with its own "aborted" error, and Fastify's body
 * reader hands that very error to the error handler. It is the client's doing, not a server error:
 * a 400 that nobody receives, logged and counted as a client error (CONTRACT §11 Wire).
 */
function clientAbort (error: unknown, request: FastifyRequest): ApiError | undefined {
  if (error === null || error === undefined || request.raw.errored !== error) return undefined
  return new ApiError('MALFORMED_REQUEST', 'The request body was not received in full: the client closed the connection.')
}

/** No route at `path`: 404, with its own code for the reserved /api/v2. */
export function notFound (path: string): ApiError {
  return /^\/api\/v2(\/|$)/.test(path)
    ? new ApiError('API_VERSION_NOT_AVAILABLE', 'API version 2 is reserved and not available; use /api/v1.')
    : new ApiError('RESOURCE_NOT_FOUND', `No resource at ${path}.`)
}

/** The one error handler and the 404 handler: every error response is built here. */
export function registerErrorHandling (app: FastifyInstance, config: Config): void {
  app.setErrorHandler((error, request, reply) => {
    const apiError = clientAbort(error, request) ?? toApiError(error)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    return sendError(config, request, reply, apiError)
  })

  app.setNotFoundHandler((request, reply) => sendError(config, request, reply, notFound(pathOf(request.url))))
}

/**
 * Answers what Fastify's router refuses before any route or hook runs (a path that is not valid
 * percent-encoding): the same error envelope, with the headers the `onRequest` hook would have set.
 * No hook runs for such a request, so `completed` (the access log line, the metrics) is called here,
 * and `Cache-Control` is set here.
 */
export function frameworkErrorHandler (
  config: Config, headers: Record<string, string>, completed: (request: FastifyRequest, reply: FastifyReply) => void
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.raw.once('finish', () => completed(request, reply))
    reply.headers(headers).header('x-request-id', request.id)
    // No onSend hook runs for these either: an error under /api is never stored (CONTRACT §11).
    if (/^\/api(\/|$)/.test(pathOf(request.url))) reply.header('cache-control', 'no-store')
    const apiError = error.code === 'FST_ERR_BAD_URL'
      ? new ApiError('MALFORMED_REQUEST', 'The request path is not valid percent-encoded UTF-8.')
      : toApiError(error)
    if (apiError.status >= 500) request.log.error({ err: error }, 'request failed')
    return sendError(config, request, reply, apiError)
  }
}

/** What the parser's error codes (llhttp's `HPE_*`) mean, in words a client can act on. */
const PARSER_DETAILS: Record<string, string> = {
  HPE_INVALID_METHOD: 'The request method is not a valid HTTP method.',
  HPE_INVALID_URL: 'The request target is not a valid URL path.',
  HPE_INVALID_VERSION: 'The request line does not name HTTP/1.0 or HTTP/1.1.',
  HPE_INVALID_HEADER_TOKEN: 'A request header is not valid HTTP: its name or value has a character HTTP does not allow.',
  HPE_INVALID_CONTENT_LENGTH: 'The Content-Length header is not a valid length.',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'The request has both Content-Length and Transfer-Encoding; send one.',
  HPE_INVALID_TRANSFER_ENCODING: 'The Transfer-Encoding header is not valid: only chunked is accepted, and not together with Content-Length.',
  HPE_INVALID_CHUNK_SIZE: 'The chunked request body has an invalid chunk size.',
  HPE_INVALID_EOF_STATE: 'The connection ended before the request was complete.',
  HPE_LF_EXPECTED: 'A line of the request does not end with CRLF.',
  HPE_CR_EXPECTED: 'A line of the request does not end with CRLF.',
}

/** The catalogue error for what Node's HTTP server refused before any route could see the request. */
function clientErrorOf (code: string | undefined): ApiError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new ApiError('REQUEST_HEADER_FIELDS_TOO_LARGE',
      `The request line and headers are larger than the ${http.maxHeaderSize} bytes this service accepts.`)
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError('REQUEST_TIMEOUT', 'The request did not arrive in time; the connection is closed.')
  }
  return new ApiError('MALFORMED_REQUEST', (code && PARSER_DETAILS[code]) ?? 'The request is not valid HTTP/1.1 and could not be read.')
}

/** A request line at the start of the bytes the parser refused: `METHOD /path[?query] HTTP/1.x`. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ (\/[\x21-\x3e\x40-\x7e]*)(?:\?[\x21-\x7e]*)? HTTP\/1\.[01]\r?\n/

/** The path of the refused request when its request line can be read, else `/` (CONTRACT §11 Wire). */
function instanceOf (rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '/'
  return REQUEST_LINE.exec(rawPacket.subarray(0, 8192).toString('latin1'))?.[1] ?? '/'
}

/** How long a refused connection is still read (and its bytes dropped) after the answer, before it is closed. */
const LINGER_MS = 1_000

/**
 * Fastify's `clientErrorHandler`: answers a request that Node's HTTP parser refused (bad framing, a
 * malformed request line or header, headers over Node's limit, a request that did not arrive in
 * time) with the error envelope, instead of Fastify's own body. No route, hook or request object
 * exists for it, so the answer is written to the socket here, built by `problem` like every other
 * error, with the security headers, `Cache-Control: no-store`, a fresh `X-Request-Id` (the parser
 * has not given us the caller's) and `Connection: close`. Nothing is written when the client is
 * gone or when a response on that connection has already begun (the bytes would land inside it).
 * The write side is closed at once; the read side drains for a moment, so that a client still
 * sending is not answered with a reset that could discard the answer before it is read.
 */
export function clientErrorHandler (config: Config) {
  const security = securityHeaders()
  const answered = new WeakSet<Socket>()
  // A function, not an arrow: Fastify calls it with the instance as `this`, whose logger it uses.
  return function (this: FastifyInstance, error: Error & { code?: string, rawPacket?: unknown }, socket: Socket): void {
    // The parser reports every later chunk of a refused connection again: it has been answered.
    if (answered.has(socket)) return
    const response = (socket as { _httpMessage?: http.ServerResponse })._httpMessage
    if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable || response?.headersSent) {
      socket.destroy()
      return
    }
    answered.add(socket)
    const apiError = clientErrorOf(error.code)
    const requestId = randomUUID()
    const body = JSON.stringify(problem(config, apiError, instanceOf(error.rawPacket)))
    const headers: Record<string, string | number> = {
      ...security,
      'cache-control': 'no-store',
      'x-request-id': requestId,
      'content-type': 'application/problem+json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    }
    const head = [`HTTP/1.1 ${apiError.status} ${http.STATUS_CODES[apiError.status]}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)].join('\r\n')
    socket.end(`${head}\r\n\r\n${body}`)
    setTimeout(() => socket.destroy(), LINGER_MS).unref()
    this.log.info({ requestId, statusCode: apiError.status, parserError: error.code }, 'request refused by the HTTP parser')
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
