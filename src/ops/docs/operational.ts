import type { ErrorCode } from '../../errors.js'

/**
 * The operational and docs endpoints as the OpenAPI document shows them (CONTRACT §11: documented,
 * tagged `operations`, in their own non-envelope shapes). Their routes (ops/health.ts, ops/metrics.ts,
 * ops/docs.ts, ops/routes.ts) carry no response schema, so that nothing about how they answer
 * changes; this table documents them instead, and test/ops/openapi.test.ts checks each entry
 * against a real route and real answers.
 */
export interface OperationalEndpoint {
  /** The path as the document writes it. */
  path: string
  /** The error codes it can answer (as the error envelope), besides INTERNAL_ERROR. */
  errors: ErrorCode[]
  /** The OpenAPI operation without its error responses (added like every other operation's). */
  operation: Record<string, unknown> & { responses: Record<string, Record<string, unknown>> }
}

const tags = ['operations']
const json = (ref: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } })
const html = { 'text/html': { schema: { type: 'string', description: 'An HTML page' } } }
const redirect = (target: string) => ({ description: `Found: a redirect to ${target} (in Location)` })

/** The shapes of the operational answers, under components.schemas. */
export const OPERATIONAL_SCHEMAS: Record<string, Record<string, unknown>> = {
  HealthStatus: {
    type: 'string',
    enum: ['UP', 'DOWN'],
    description: 'UP when the database answers; DOWN otherwise (the only dependency that decides it)',
  },
  HealthComponent: {
    type: 'object',
    required: ['status'],
    properties: {
      status: { type: 'string', description: 'UP, DOWN or UNKNOWN' },
      details: { type: 'object', additionalProperties: true },
      components: { type: 'object', additionalProperties: { $ref: '#/components/schemas/HealthComponent' } },
    },
  },
  Health: {
    type: 'object',
    required: ['status'],
    properties: {
      status: { $ref: '#/components/schemas/HealthStatus' },
      components: {
        type: 'object',
        description: 'ADMIN callers only: db, and redis, broker and oidc when configured. Only db decides `status`.',
        additionalProperties: { $ref: '#/components/schemas/HealthComponent' },
      },
    },
  },
  Probe: {
    type: 'object',
    required: ['status'],
    properties: { status: { $ref: '#/components/schemas/HealthStatus' } },
  },
  BuildInfo: {
    type: 'object',
    required: ['app', 'build'],
    properties: {
      app: { type: 'object', required: ['name', 'version'], properties: { name: { type: 'string' }, version: { type: 'string' } } },
      build: { type: 'object', required: ['time'], properties: { time: { type: 'string', format: 'date-time' } } },
      git: { type: 'object', required: ['commit'], properties: { commit: { type: 'string' } } },
    },
  },
  MetricNames: {
    type: 'object',
    required: ['names'],
    properties: { names: { type: 'array', items: { type: 'string' } } },
  },
  Metric: {
    type: 'object',
    required: ['name', 'description', 'measurements', 'availableTags'],
    properties: {
      name: { type: 'string' },
      description: { type: 'string' },
      baseUnit: { type: 'string' },
      measurements: {
        type: 'array',
        items: {
          type: 'object',
          required: ['statistic', 'value'],
          properties: { statistic: { type: 'string', enum: ['COUNT', 'TOTAL', 'TOTAL_TIME', 'MAX', 'VALUE'] }, value: { type: 'number' } },
        },
      },
      availableTags: {
        type: 'array',
        items: {
          type: 'object',
          required: ['tag', 'values'],
          properties: { tag: { type: 'string' }, values: { type: 'array', items: { type: 'string' } } },
        },
      },
    },
  },
}

const health = {
  200: { description: 'UP', content: json('Health') },
  503: { description: 'DOWN: the database cannot be reached (not an envelope)', content: json('Health') },
}
const probe = (what: string) => ({
  200: { description: `UP: ${what}`, content: json('Probe') },
})

/** Keyed by the route's method and URL as Fastify has it. */
export const OPERATIONAL: Record<string, OperationalEndpoint> = {
  'GET /actuator/health': {
    path: '/actuator/health',
    errors: [],
    operation: {
      tags,
      operationId: 'getActuatorHealth',
      summary: 'Health of the instance',
      description: '`{status}`; ADMIN callers (a credential is optional) also get `components` with details. 200 when UP, 503 when DOWN; never cached. Unknown query parameters are ignored.',
      security: [{}, { bearerAuth: [] }, { apiKeyAuth: [] }],
      responses: health,
    },
  },
  'GET /actuator/health/liveness': {
    path: '/actuator/health/liveness',
    errors: [],
    operation: {
      tags,
      operationId: 'getLiveness',
      summary: 'Liveness: the process serves requests',
      description: 'Always 200 UP while the process answers; no dependency is checked.',
      security: [],
      responses: probe('the process answers'),
    },
  },
  'GET /actuator/health/readiness': {
    path: '/actuator/health/readiness',
    errors: [],
    operation: {
      tags,
      operationId: 'getReadiness',
      summary: 'Readiness: the instance can serve requests',
      description: '200 UP when the database answers, else 503 DOWN (take the instance out of the load balancer).',
      security: [],
      responses: { ...probe('the database answers'), 503: { description: 'DOWN (not an envelope)', content: json('Probe') } },
    },
  },
  'GET /actuator/info': {
    path: '/actuator/info',
    errors: [],
    operation: {
      tags,
      operationId: 'getBuildInfo',
      summary: 'Name, version, build time and commit',
      description: '`git` is present when the commit is known (GIT_COMMIT or the checkout).',
      security: [],
      responses: { 200: { description: 'OK', content: json('BuildInfo') } },
    },
  },
  'GET /actuator/prometheus': {
    path: '/actuator/prometheus',
    errors: [],
    operation: {
      tags,
      operationId: 'getPrometheusMetrics',
      summary: 'Every metric in the Prometheus text format',
      description: 'For a Prometheus scrape (docs: the metrics catalogue).',
      security: [],
      responses: { 200: { description: 'OK', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } } } },
    },
  },
  'GET /actuator/metrics': {
    path: '/actuator/metrics',
    errors: [],
    operation: {
      tags,
      operationId: 'listMetricNames',
      summary: 'The names of the metrics',
      description: 'Each name can be read at /actuator/metrics/{name}.',
      security: [],
      responses: { 200: { description: 'OK', content: json('MetricNames') } },
    },
  },
  'GET /actuator/metrics/:name': {
    path: '/actuator/metrics/{name}',
    errors: ['VALIDATION_FAILED', 'RESOURCE_NOT_FOUND'],
    operation: {
      tags,
      operationId: 'getMetric',
      summary: 'One metric, optionally narrowed by tags',
      description: 'Repeat `tag=key:value` to narrow to the series with those labels; a tag matching no series is 404, one not written key:value is 400.',
      security: [],
      parameters: [
        { in: 'path', name: 'name', required: true, schema: { type: 'string' }, description: 'A name from /actuator/metrics' },
        {
          in: 'query',
          name: 'tag',
          required: false,
          schema: { type: 'array', items: { type: 'string', pattern: '^[^:]+:' } },
          style: 'form',
          explode: true,
          description: 'key:value, repeatable',
        },
      ],
      responses: { 200: { description: 'OK', content: json('Metric') } },
    },
  },
  'GET /v3/api-docs': {
    path: '/v3/api-docs',
    errors: [],
    operation: {
      tags,
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      description: 'The document every generated client and the reference pages are built from.',
      security: [],
      responses: { 200: { description: 'OK', content: { 'application/json': { schema: { type: 'object', description: 'An OpenAPI 3.1 document' } } } } },
    },
  },
  'GET /docs/index.html': {
    path: '/docs/index.html',
    errors: [],
    operation: {
      tags,
      operationId: 'getReferencePage',
      summary: 'The API reference page',
      description: 'One self-contained HTML page built from this document.',
      security: [],
      responses: { 200: { description: 'OK', content: html } },
    },
  },
  // `/docs/` redirects the same way; it is left out of the document, whose paths do not end in `/`.
  'GET /docs': {
    path: '/docs',
    errors: [],
    operation: {
      tags,
      operationId: 'redirectToReferencePage',
      summary: 'Redirects to /docs/index.html',
      description: '`/docs/` redirects there too.',
      security: [],
      responses: { 302: redirect('/docs/index.html') },
    },
  },
  'GET /swagger-ui.html': {
    path: '/swagger-ui.html',
    errors: [],
    operation: {
      tags,
      operationId: 'redirectToSwaggerUi',
      summary: 'Redirects to Swagger UI at /swagger-ui/',
      description: 'Swagger UI reads this document from /v3/api-docs; its files are served by the service (no CDN).',
      security: [],
      responses: { 302: redirect('/swagger-ui/') },
    },
  },
}
