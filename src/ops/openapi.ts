import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ErrorEnvelope, ProblemSchema } from '../http/schemas.js'
import pkg from '../../package.json' with { type: 'json' }

const EmptyQuery = Type.Object({}, { additionalProperties: false })
const CREDENTIALS = [{ bearerAuth: [] }, { apiKeyAuth: [] }]

/**
 * The OpenAPI 3.1 document is generated from the route schemas that validate requests, so the two
 * cannot drift. Every route also gets, from one place: the error envelope for its 4xx/5xx answers,
 * the security its access rule implies, and (under /api) a query schema that refuses unknown
 * parameters when the route declares none.
 */
export async function registerOpenApi (app: FastifyInstance): Promise<void> {
  app.addSchema(ProblemSchema)
  app.addSchema(ErrorEnvelope)

  app.addHook('onRoute', (route) => {
    const schema = { ...(route.schema ?? {}) } as Record<string, unknown>
    const response = { ...(schema.response as Record<string, unknown> ?? {}) }
    response['4xx'] ??= Type.Ref('ErrorEnvelope')
    response['5xx'] ??= Type.Ref('ErrorEnvelope')
    schema.response = response
    if (route.url.startsWith('/api/') && schema.querystring === undefined) schema.querystring = EmptyQuery
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
        description: 'Orders, stock reservation, payments and fulfilment. Every /api response is an envelope `{success, data, error}`; errors are `application/problem+json`.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from /api/v1/auth/login or /refresh (15 minutes)' },
          apiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'API key secret from /api/v1/members/me/api-keys' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `schema${i}`) },
  })
}
