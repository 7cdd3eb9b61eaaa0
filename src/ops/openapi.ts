import swagger from '@fastify/swagger'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { ErrorEnvelope, ProblemSchema } from '../http/schemas.js'
import pkg from '../../package.json' with { type: 'json' }

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
}

/** Errors are `application/problem+json` whose body is the error envelope (CONTRACT §1, §2). */
const errorResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: Type.Ref('ErrorEnvelope') } },
})

/** A route whose body may be left out (`x-optional-body: true` in its schema), e.g. a full refund. */
const OPTIONAL_BODY = 'x-optional-body'
const CREDENTIALS = [{ bearerAuth: [] }, { apiKeyAuth: [] }]

/**
 * The OpenAPI 3.1 document is generated from the route schemas that validate requests, so the two
 * cannot drift. Every route also gets, from one place: the error envelope for its 4xx/5xx answers,
 * the security its access rule implies, and (under /api) a query schema that refuses unknown
 * parameters when the route declares none, and for a POST, PUT or PATCH that declares no body, an
 * optional empty one that refuses any field (CONTRACT §1: unknown body fields are rejected).
 */
export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  app.addSchema(ProblemSchema)
  app.addSchema(ErrorEnvelope)

  app.addHook('onRoute', (route) => {
    const schema = { ...(route.schema ?? {}) } as Record<string, unknown>
    const response = { ...(schema.response as Record<string, Record<string, unknown>> ?? {}) }
    for (const [status, answer] of Object.entries(response)) {
      if (answer.description === undefined && SUCCESS[status]) response[status] = { ...answer, description: SUCCESS[status] }
    }
    response['4xx'] ??= errorResponse('A client error, as the error envelope; `error.code` says which (see the error catalogue)')
    response['5xx'] ??= errorResponse('A server error, as the error envelope: INTERNAL_ERROR, or SERVICE_UNAVAILABLE with Retry-After')
    schema.response = response
    if (route.url.startsWith('/api/') && schema.querystring === undefined) schema.querystring = EmptyQuery
    // A route that declares no body takes none: a field sent anyway is refused like any unknown field.
    const takesBody = [route.method].flat().some(method => BODY_METHODS.has(method))
    if (route.url.startsWith('/api/') && takesBody && schema.body === undefined && schema.hide !== true) {
      schema.body = EmptyBody
      schema[OPTIONAL_BODY] = true
    }
    if (schema[OPTIONAL_BODY] === true) route.preValidation = [absentBodyIsEmpty, ...[route.preValidation ?? []].flat()]
    if (schema.security === undefined) {
      // Either credential will do: a bearer access token or an API key.
      schema.security = route.config?.access === 'public' ? [] : CREDENTIALS
    }
    route.schema = schema
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Order service API',
        version: pkg.version,
        description: 'Orders, stock reservation, payments and fulfilment. Every /api response is an envelope `{success, data, error}`; errors are `application/problem+json`. The reference page is at /docs/index.html.',
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
        { name: 'webhooks', description: 'Webhook endpoints, their signing secrets and delivery log (ADMIN role)' },
        { name: 'operations', description: 'Service health' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from /api/v1/auth/login or /refresh (15 minutes)' },
          apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'API key secret from /api/v1/members/me/api-keys' },
        },
      },
    },
    transformObject: (document) => {
      const openapiObject = (document as { openapiObject: { paths?: Record<string, unknown> } }).openapiObject
      for (const item of Object.values(openapiObject.paths ?? {})) {
        for (const operation of Object.values(item as Record<string, Record<string, unknown>>)) {
          if (operation[OPTIONAL_BODY] === true && operation.requestBody) {
            (operation.requestBody as { required: boolean }).required = false
          }
          delete operation[OPTIONAL_BODY]
        }
      }
      return openapiObject as never
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `schema${i}`) },
  })
}
