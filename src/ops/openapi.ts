import { STATUS_CODES } from 'node:http'
import swagger from '@fastify/swagger'
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { Type } from 'typebox'
import { ERRORS, type ErrorCode } from '../errors.js'
import { components, DOCUMENT_AS } from '../http/schemas.js'
import { COMPONENT_EXAMPLES, REQUEST_EXAMPLES, RESPONSE_EXAMPLES } from './docs/examples.js'
import { OPERATIONAL, OPERATIONAL_SCHEMAS, type OperationalEndpoint } from './docs/operational.js'
import { webhooks } from './docs/webhooks.js'
import pkg from '../../package.json' with { type: 'json' }

/** Response headers the document declares (components.headers), by name. */
export type ResponseHeader = 'Location' | 'ETag' | 'Content-Disposition'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The error codes this route answers besides those its shape implies (`impliedErrors`): its own
     * use case's codes, e.g. `['ORDER_NOT_FOUND', 'INVALID_ORDER_STATUS']`.
     */
    errors?: readonly ErrorCode[]
    /** Headers its success answers carry besides X-Request-Id, Cache-Control and those implied (RateLimit-*, Idempotent-Replayed). */
    sends?: readonly ResponseHeader[]
    /** Set when the route is registered: what the document lists for it (`undocumentedAnswer` checks answers against it). */
    documented?: DocumentedAnswers
  }
}

/** The statuses the document lists for an operation, and the error codes of each error status. */
export interface DocumentedAnswers {
  statuses: readonly number[]
  errors: Readonly<Record<number, readonly ErrorCode[]>>
}

const EmptyQuery = Type.Object({}, { additionalProperties: false })
const EmptyBody = Type.Object({}, { additionalProperties: false, description: 'No fields: send no body, or `{}`' })
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

/** An optional body left out is validated as `{}` (a JSON `null` is still a malformed body). */
const absentBodyIsEmpty = async (request: FastifyRequest) => {
  if (request.body === undefined) request.body = {}
}

/** The description of each success status, for routes that do not give their own. */
const SUCCESS: Record<string, string> = {
  200: 'OK: the envelope with the result in `data`',
  201: 'Created: the envelope with the new resource in `data`',
  302: 'Found: a redirect; the target is in Location',
}

/** A route whose body may be left out (`x-optional-body: true` in its schema), e.g. a full refund. */
const OPTIONAL_BODY = 'x-optional-body'
/** What the document lists for an operation, passed from the route to `transformObject`. */
const ANSWERS = 'x-answers'
const CREDENTIALS = [{ bearerAuth: [] }, { apiKeyAuth: [] }]
/** No licence is stated anywhere in the repository, so `info.license` claims none (docs/decisions.md). */
const LICENSE_NOTE = {
  'x-license-note': 'No licence is declared: the repository has no LICENSE file and package.json names none (it is private). Ask the maintainers before reusing this API description or the code.',
}

/** The route's method list, upper case. */
const methodsOf = (route: Pick<RouteOptions, 'method'>) => [route.method].flat().map(method => String(method).toUpperCase())

interface RouteShape {
  url: string
  methods: string[]
  schema: Record<string, unknown>
  config: RouteOptions['config']
}

const headerNames = (schema: Record<string, unknown>) =>
  Object.keys((schema.headers as { properties?: object } | undefined)?.properties ?? {})

/**
 * The error codes a route's shape implies, from the same rules the service applies: its access
 * rule (http/access.ts), its schemas (validation, body parsing), the idempotency and If-Match headers,
 * the auth rate limit, the wire rules, and the failures any route can meet. The route adds its own
 * (`config.errors`).
 */
export function impliedErrors ({ url, methods, schema, config }: RouteShape): ErrorCode[] {
  const codes: ErrorCode[] = []
  const access = config?.access
  if (access !== 'public') codes.push('UNAUTHORIZED')
  if (access === 'owner' || access === 'admin') codes.push('ACCESS_DENIED')
  if (schema.params || schema.querystring || schema.body || schema.headers) codes.push('VALIDATION_FAILED')
  if (schema.body && methods.some(method => BODY_METHODS.has(method))) {
    codes.push('MALFORMED_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
  }
  const headers = headerNames(schema)
  if (headers.includes('idempotency-key')) codes.push('IDEMPOTENCY_KEY_IN_FLIGHT', 'IDEMPOTENCY_KEY_REUSED')
  if (headers.includes('if-match')) codes.push('PRECONDITION_FAILED')
  if (config?.authRateLimited) codes.push('TOO_MANY_REQUESTS')
  // The wire rule (http/wire.ts): `/api/v1/orders/` reaches `/api/v1/orders/:id` and is answered 404.
  if (url.startsWith('/api/') && /\/:[^/]+$/.test(url)) codes.push('RESOURCE_NOT_FOUND')
  codes.push('INTERNAL_ERROR', 'SERVICE_UNAVAILABLE')
  return codes
}

/** The codes grouped by status, each list in catalogue order. */
function byStatus (codes: Iterable<ErrorCode>): Record<number, ErrorCode[]> {
  const set = new Set(codes)
  const grouped: Record<number, ErrorCode[]> = {}
  for (const code of Object.keys(ERRORS) as ErrorCode[]) {
    if (set.has(code)) (grouped[ERRORS[code].status] ??= []).push(code)
  }
  return grouped
}

/** A GET (and its HEAD) that answers with an ETag honours If-None-Match with 304 (CONTRACT §11 Wire, §14). */
const conditional = (methods: string[], config: RouteOptions['config']) =>
  (methods.includes('GET') || methods.includes('HEAD')) && (config?.sends ?? []).includes('ETag')

/**
 * Whether an answer is one the document lists for the route: its status, and for an error
 * envelope its `error.code` under that status. Undefined when it is (or the route is not in the
 * document); otherwise a line saying what is missing. Tests run it on every answer (test/helper.ts).
 */
export function undocumentedAnswer (request: FastifyRequest, statusCode: number, payload: unknown): string | undefined {
  const documented = request.routeOptions.config?.documented
  if (!documented) return undefined
  const where = `${request.method} ${request.routeOptions.url ?? request.url}`
  if (!documented.statuses.includes(statusCode)) return `${where} answered ${statusCode}, which its document does not list`
  if (statusCode < 400 || typeof payload !== 'string') return undefined
  let code: unknown
  try {
    code = (JSON.parse(payload) as { error?: { code?: unknown } } | null)?.error?.code
  } catch {
    return undefined
  }
  if (typeof code !== 'string') return undefined
  const listed = documented.errors[statusCode] ?? []
  return listed.includes(code as ErrorCode) ? undefined : `${where} answered ${statusCode} ${code}, which its document does not list`
}

/**
 * Response headers, declared once under components.headers. `required` marks those sent on every
 * answer they are listed on: X-Request-Id on all, Location on a 201 (and a POST's replay) or 302,
 * ETag wherever an order is answered.
 */
const HEADERS: Record<string, { description: string, required?: true, schema: Record<string, unknown> }> = {
  'X-Request-Id': { description: 'The request id: the caller’s X-Request-Id when it is a plain token (`[A-Za-z0-9._:-]{1,200}`), else a new UUID. Quote it when reporting a problem.', required: true, schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store` on every /api answer, except `public, max-age=60` on the catalog’s 200 answers to anonymous callers.', schema: { type: 'string' } },
  Location: { description: 'The path of the resource created (or of the redirect target).', required: true, schema: { type: 'string', format: 'uri-reference' } },
  ETag: { description: 'The version of the order shown (or, for a verb, the order’s new version): send it as If-Match to change the order, or as If-None-Match to read it only when it changed.', required: true, schema: { type: 'string' } },
  'Idempotent-Replayed': { description: '`true` when this is the stored answer to an earlier request with the same idempotency key.', schema: { type: 'string', enum: ['true'] } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Limit': { description: 'Requests allowed per window from this client address on the rate-limited routes.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Requests left in the current window (0 on a 429).', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer', minimum: 0 } },
  'WWW-Authenticate': { description: '`Bearer realm="order-service"`, with `error="invalid_token"` when a credential was sent and refused.', schema: { type: 'string' } },
  'Content-Disposition': { description: '`attachment; filename="orders-<time>.csv"`.', schema: { type: 'string' } },
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** What `transformObject` needs to write an operation's responses. */
interface Answers {
  api: boolean
  errors: Record<number, ErrorCode[]>
  sends: ResponseHeader[]
  rateLimited: boolean
  idempotent: boolean
  conditional: boolean
  constraints: Constraint[]
  unknownQueryRefused: boolean
}

const NO_ANSWERS: Answers = {
  api: false, errors: {}, sends: [], rateLimited: false, idempotent: false, conditional: false, constraints: [], unknownQueryRefused: false,
}

/** A rule relating two inputs, which JSON Schema cannot state (CONTRACT §14 OpenAPI): `x-constraints`. */
interface Constraint {
  rule: 'at-most' | 'before' | 'not-both'
  parameters: [string, string]
  description: string
}

/** The two-input query rules the service applies (http/paging.ts, http/ranges.ts), found by parameter names. */
function constraintsOf (query: unknown): Constraint[] {
  const names = Object.keys((query as { properties?: object } | undefined)?.properties ?? {})
  const has = (...wanted: string[]) => wanted.every(name => names.includes(name))
  const found: Constraint[] = []
  for (const [low, high] of [['minPrice', 'maxPrice'], ['minTotal', 'maxTotal']] as const) {
    if (has(low, high)) found.push({ rule: 'at-most', parameters: [low, high], description: `${low} must not be above ${high} (else 400 naming ${high})` })
  }
  if (has('createdFrom', 'createdTo')) {
    found.push({ rule: 'before', parameters: ['createdFrom', 'createdTo'], description: 'createdFrom must be before createdTo (else 400 naming createdTo)' })
  }
  if (has('cursor', 'page')) {
    found.push({ rule: 'not-both', parameters: ['cursor', 'page'], description: 'cursor and page cannot be sent together (else 400 naming cursor)' })
  }
  return found
}

/**
 * `schema` as the document shows it: each schema marked `x-document-as` (http/schemas.ts) replaced
 * by what it is shown as, at any depth. The route's own schema is left as it is.
 */
function documented (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(documented)
  if (schema === null || typeof schema !== 'object') return schema
  const shown = (schema as Record<string, unknown>)[DOCUMENT_AS]
  if (shown !== undefined) return documented(shown)
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, documented(value)]))
}

/** The part of an error response that narrows `error.code` to the codes of one status. */
const errorSchema = (codes: readonly ErrorCode[]) => ({
  allOf: [
    { $ref: '#/components/schemas/ErrorEnvelope' },
    {
      type: 'object',
      properties: { error: { type: 'object', properties: { code: { type: 'string', enum: [...codes] } } } },
    },
  ],
})

/** The headers of a response: the request id always; the others where the service sends them. */
function headersOf (answers: Answers, status: number): Record<string, unknown> {
  const names = ['X-Request-Id']
  if (answers.api) names.push('Cache-Control')
  // A replay (200) carries the first answer's Location too (CONTRACT §3).
  if ((status === 201 || (status === 200 && answers.idempotent)) && answers.sends.includes('Location')) names.push('Location')
  if (status === 302) names.push('Location')
  if ((status === 200 || status === 201 || status === 304) && answers.sends.includes('ETag')) names.push('ETag')
  if (status === 200 && answers.sends.includes('Content-Disposition')) names.push('Content-Disposition')
  if (status === 200 && answers.idempotent) names.push('Idempotent-Replayed')
  if (status === 401) names.push('WWW-Authenticate')
  if (status === 429 || status === 503) names.push('Retry-After')
  if (answers.rateLimited) names.push('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset')
  return Object.fromEntries(names.map(name => [name, headerRef(name)]))
}

type Media = Record<string, unknown> & { schema?: { $ref?: string, properties?: object, oneOf?: unknown } }

type OpenApiOperation = Record<string, unknown> & {
  description?: string
  parameters?: Array<Record<string, unknown>>
  requestBody?: { required: boolean, description?: string, content?: Record<string, Media> }
  responses?: Record<string, Record<string, unknown> & { content?: Record<string, Media> }>
}

/**
 * The example of an answer whose schema is a named component (ops/docs/examples.ts): `XEnvelope`
 * around the example of `X`, `XSlice`, `XPage` and `XList` around one element, `EmptyEnvelope`
 * around null. Undefined when there is none (the examples test names what is missing).
 */
function exampleOf (name: string): unknown {
  if (name === 'Empty') return null
  if (name in COMPONENT_EXAMPLES) return COMPONENT_EXAMPLES[name]
  const [, item, shape] = /^(\w+?)(Envelope|Slice|Page|List)$/.exec(name) ?? []
  const element = item === undefined ? undefined : exampleOf(item)
  if (element === undefined) return undefined
  switch (shape) {
    case 'Envelope': return { success: true, data: element, error: null }
    case 'Slice': return { content: [element], size: 20, hasNext: true, nextCursor: 'eyJjIjoiMjAyNi0xMS0yMlQwOTozMDowMC4wMDBaIiwiaSI6NDJ9' }
    case 'Page': return { content: [element], page: 0, size: 20, totalElements: 1, totalPages: 1, first: true, last: true }
    default: return [element]
  }
}

/**
 * Puts the examples on an operation (`method path`): its request body's, and each 2xx answer's at
 * the media type (so Swagger UI and generated clients show them). A body that takes no fields gets `{}`.
 */
function addExamples (key: string, operation: OpenApiOperation): void {
  const body = operation.requestBody?.content?.['application/json']
  if (body) {
    const empty = body.schema?.oneOf === undefined && Object.keys(body.schema?.properties ?? {}).length === 0
    Object.assign(body, REQUEST_EXAMPLES[key] ?? (empty ? { example: {} } : {}))
  }
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (!status.startsWith('2')) continue
    for (const media of Object.values(response.content ?? {})) {
      const ref = media.schema?.$ref?.replace('#/components/schemas/', '')
      const example = RESPONSE_EXAMPLES[`${key} ${status}`] ?? (ref === undefined ? undefined : exampleOf(ref))
      if (example !== undefined) media.example = example
    }
  }
}

/** Writes an operation's responses, headers and rules from what its route declared (`Answers`). */
/**
 * Error responses are written once each, under components.responses, named by status, codes and
 * headers (`Error404_ORDER_NOT_FOUND_RESOURCE_NOT_FOUND`); operations refer to them.
 */
type SharedResponses = Map<string, { name: string, response: Record<string, unknown> }>

function shared (responses: SharedResponses, base: string, response: Record<string, unknown>): { $ref: string } {
  const key = JSON.stringify(response)
  let entry = responses.get(key)
  if (!entry) {
    const taken = new Set([...responses.values()].map(other => other.name))
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
    entry = { name, response }
    responses.set(key, entry)
  }
  return { $ref: `#/components/responses/${entry.name}` }
}

function completeOperation (operation: OpenApiOperation, answers: Answers, errorResponses: SharedResponses): void {
  const responses = operation.responses ?? {}
  for (const [status, response] of Object.entries(responses)) {
    response.headers = { ...headersOf(answers, Number(status)), ...(response.headers as object | undefined) }
  }
  if (answers.conditional) {
    responses['304'] = { description: 'Not Modified: the If-None-Match sent names the current version; no body', headers: headersOf(answers, 304) }
    operation.parameters = [...(operation.parameters ?? []), {
      in: 'header',
      name: 'if-none-match',
      required: false,
      description: 'The ETag of the version the client holds: when it is still current, the answer is 304 without a body',
      schema: { type: 'string' },
    }]
  }
  for (const [status, codes] of Object.entries(answers.errors)) {
    responses[status] = shared(errorResponses, `Error${status}_${codes.join('_')}`, {
      description: `${STATUS_CODES[Number(status)] ?? 'Error'}: ${codes.map(code => `${code} (${ERRORS[code].title})`).join(', ')}`,
      headers: headersOf(answers, Number(status)),
      content: { 'application/problem+json': { schema: errorSchema(codes) } },
    })
  }
  operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
  const rules: string[] = []
  if (answers.unknownQueryRefused) {
    operation['x-additional-query-parameters'] = false
    rules.push('Unknown query parameters are refused: 400 VALIDATION_FAILED naming each (at most the first 20; `detail` gives the total).')
  }
  if (answers.constraints.length > 0) {
    operation['x-constraints'] = answers.constraints
    rules.push(...answers.constraints.map(constraint => `${constraint.description[0]!.toUpperCase()}${constraint.description.slice(1)}.`))
  }
  if (rules.length > 0) operation.description = [operation.description, ...rules].filter(Boolean).join(' ')
}

/**
 * The OpenAPI 3.1 document is generated from the route schemas that validate requests, so the two
 * cannot drift. Every route also gets, from one place: the error statuses it can answer with their
 * codes, from its shape and its own `config.errors` (recorded in `config.documented`, which tests
 * check every answer against); the headers it sends; the security its access rule implies; and
 * (under /api) a query schema that refuses unknown parameters when the route declares none, and for
 * a POST, PUT or PATCH that declares no body, an optional empty one that refuses any field (CONTRACT
 * §1: unknown body fields are rejected). The named components (http/schemas.ts) are added as shared
 * schemas: responses serialise through `$ref`s to them and the document lists them once.
 */
export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  // Before any route's scope exists: a scope created later inherits them with the validator compiler.
  for (const component of components()) app.addSchema(component)
  /** The operational endpoints this app serves, with their error codes by status. */
  const shownOperational = new Map<OperationalEndpoint, Record<number, ErrorCode[]>>()

  app.addHook('onRoute', (route) => {
    const schema = { ...(route.schema ?? {}) } as Record<string, unknown>
    const response = { ...(schema.response as Record<string, Record<string, unknown>> ?? {}) }
    for (const [status, answer] of Object.entries(response)) {
      if (answer.description === undefined && SUCCESS[status]) response[status] = { ...answer, description: SUCCESS[status] }
    }
    schema.response = response
    const api = route.url.startsWith('/api/')
    if (api && schema.querystring === undefined) schema.querystring = EmptyQuery
    // A route that declares no body takes none: a field sent anyway is refused like any unknown field.
    const methods = methodsOf(route)
    const takesBody = methods.some(method => BODY_METHODS.has(method))
    if (api && takesBody && schema.body === undefined && schema.hide !== true) {
      schema.body = EmptyBody
      schema[OPTIONAL_BODY] = true
    }
    if (schema[OPTIONAL_BODY] === true) route.preValidation = [absentBodyIsEmpty, ...[route.preValidation ?? []].flat()]
    if (schema.security === undefined) {
      // Either credential will do: a bearer access token or an API key.
      schema.security = route.config?.access === 'public' ? [] : CREDENTIALS
    }
    route.schema = schema

    const operational = OPERATIONAL[`${methods[0]} ${route.url}`]
    if (operational) {
      // Documented from its table entry (ops/docs/operational.ts), not from its route schema.
      const errors = byStatus(['INTERNAL_ERROR', ...operational.errors])
      const statuses = [...Object.keys(operational.operation.responses).map(Number), ...Object.keys(errors).map(Number)]
      route.config = { ...route.config, documented: { statuses, errors } }
      shownOperational.set(operational, errors)
      return
    }
    if (schema.hide === true) return
    const shape = { url: route.url, methods, schema, config: route.config }
    const errors = byStatus([...impliedErrors(shape), ...(route.config?.errors ?? [])])
    const successes = Object.keys(response).filter(status => /^\d+$/.test(status)).map(Number)
    const statuses = [...successes, ...(conditional(methods, route.config) ? [304] : []), ...Object.keys(errors).map(Number)]
    route.config = { ...route.config, documented: { statuses, errors } }
    const answers: Answers = {
      api,
      errors,
      sends: [...(route.config.sends ?? [])],
      rateLimited: route.config.authRateLimited === true,
      idempotent: headerNames(schema).includes('idempotency-key'),
      conditional: conditional(methods, route.config),
      constraints: constraintsOf(schema.querystring),
      unknownQueryRefused: api && (schema.querystring as { additionalProperties?: unknown }).additionalProperties === false,
    }
    schema[ANSWERS] = answers
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Order service API',
        version: pkg.version,
        description: 'Orders, stock reservation, payments and fulfilment. Every /api response is an envelope `{success, data, error}`; errors are `application/problem+json`, and each operation lists the statuses it can answer with the `error.code`s of each. Every answer carries `X-Request-Id`. A known path called with a method it does not support answers 405 METHOD_NOT_ALLOWED with `Allow` listing the methods it does support; a path ending in `/` under /api is 404 RESOURCE_NOT_FOUND, and /api/v2 is 404 API_VERSION_NOT_AVAILABLE. The reference page is at /docs/index.html.',
        contact: { name: 'Order service maintainers' },
      },
      servers: [{ url: '/' }],
      tags: [
        { name: 'auth', description: 'Log in, refresh and log out (bearer tokens)' },
        { name: 'members', description: 'Registration, the caller’s account, passwords, email verification, API keys' },
        { name: 'products', description: 'The public catalog: products and categories' },
        { name: 'orders', description: 'The caller’s orders: place, read, change, confirm, cancel, delete' },
        { name: 'payments', description: 'Paying for confirmed orders, and refunds' },
        { name: 'admin', description: 'The back office: members, products and every order (ADMIN role)' },
        { name: 'events', description: 'Every announced change of an order or its payment, as committed: the event feed (ADMIN role)' },
        { name: 'webhooks', description: 'Webhook endpoints, their signing secrets and delivery log (ADMIN role); what the service sends to an endpoint is in the document’s `webhooks`, one entry per event type' },
        { name: 'operations', description: 'Health, readiness and liveness, build information, metrics, and the documentation itself (not envelopes)' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from /api/v1/auth/login or /refresh (15 minutes)' },
          apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'API key secret from /api/v1/members/me/api-keys' },
        },
      },
    },
    // The document's view of a route: every schema marked `x-document-as` is shown as it says.
    transform: ({ schema, url }) => {
      if (!schema || (schema as { hide?: boolean }).hide) return { schema, url }
      const shown = { ...schema } as Record<string, unknown>
      for (const part of ['params', 'querystring', 'headers', 'body']) {
        if (shown[part] !== undefined) shown[part] = documented(shown[part])
      }
      return { schema: shown as never, url }
    },
    transformObject: (document) => {
      const openapiObject = (document as { openapiObject: { info: object, paths?: Record<string, unknown>, components: Record<string, Record<string, unknown>> } }).openapiObject
      const errorResponses: SharedResponses = new Map()
      for (const [path, item] of Object.entries(openapiObject.paths ?? {})) {
        for (const [method, operation] of Object.entries(item as Record<string, OpenApiOperation>)) {
          if (operation[OPTIONAL_BODY] === true && operation.requestBody) {
            operation.requestBody.required = false
            operation.requestBody.description = 'Optional: send no body at all (and no Content-Type), or a JSON object. An empty body sent with `Content-Type: application/json` is 400 MALFORMED_REQUEST.'
          }
          delete operation[OPTIONAL_BODY]
          const answers = operation[ANSWERS] as Answers | undefined
          delete operation[ANSWERS]
          if (answers) completeOperation(operation, answers, errorResponses)
          addExamples(`${method} ${path}`, operation)
        }
      }
      for (const [endpoint, errors] of shownOperational) {
        const operation = structuredClone(endpoint.operation) as OpenApiOperation
        completeOperation(operation, { ...NO_ANSWERS, errors }, errorResponses)
        addExamples(`get ${endpoint.path}`, operation)
        const paths = openapiObject.paths ??= {}
        paths[endpoint.path] = { ...(paths[endpoint.path] as object | undefined), get: operation }
      }
      Object.assign(openapiObject, { webhooks: webhooks() })
      Object.assign(openapiObject.info, LICENSE_NOTE)
      openapiObject.components.headers = HEADERS
      openapiObject.components.responses = Object.fromEntries([...errorResponses.values()]
        .sort((a, b) => a.name.localeCompare(b.name)).map(({ name, response }) => [name, response]))
      Object.assign(openapiObject.components.schemas ??= {}, OPERATIONAL_SCHEMAS)
      return openapiObject as never
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `schema${i}`) },
  })
}
