import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type MetricObjectWithValues, type MetricValue } from 'prom-client'
import { observeQueries, type DatabaseHandle, type PoolStats, type QueryKind } from '../db/database.js'
import { ApiError, invalidParam } from '../errors.js'

/*
 * Prometheus metrics and the actuator metrics endpoints (CONTRACT §8, §10).
 *
 * Every metric lives in one registry per process, created when this module is first imported:
 * several apps built in one process (the tests) share it, so counters are process-wide and
 * registering an app never registers a metric twice.
 *
 * Exposed (Prometheus names; /actuator/metrics uses the dotted form, see `actuatorName`):
 * - http_server_requests_seconds{method,uri,status,outcome} histogram: every answered request,
 *   the actuator endpoints included (as Spring does). `uri` is the route template with `{param}`
 *   placeholders, `NOT_FOUND` when no route matched (never the raw path); `outcome` is Spring's
 *   INFORMATIONAL | SUCCESS | REDIRECTION | CLIENT_ERROR | SERVER_ERROR.
 * - db_query_seconds{kind,outcome} histogram: every statement run through Kysely (kind =
 *   select | insert | update | delete | other, where other includes begin/commit and DDL;
 *   outcome = success | error).
 * - db_pool_connections{pool}, db_pool_connections_{active,idle,pending,max}{pool} gauges: the
 *   PostgreSQL pool (pool="postgres"); absent on PGlite, which is one embedded session.
 * - orders_placed_total: orders created (an idempotent replay creates nothing and is not counted).
 * - orders_cancelled_total: orders that became CANCELLED (by the owner or an admin).
 * - orders_expired_total: unconfirmed orders the service cancelled when their reservation ran out.
 * - payments_processed_total{outcome}: charges sent to the payment provider; outcome = approved
 *   (payment COMPLETED), declined (payment FAILED, 402), error (provider failed or unreachable,
 *   503, nothing recorded). Replays and re-processing a COMPLETED payment reach no provider.
 * - webhook_deliveries_total{outcome}: delivery attempts, outcome = success | failure;
 *   webhook_delivery_seconds histogram: how long each attempt took; events_undelivered gauge:
 *   PENDING deliveries, counted when scraped (src/webhooks/dispatcher.ts).
 * - Node.js process metrics from prom-client's collectDefaultMetrics (process_*, nodejs_*, event
 *   loop lag included), minus its three `nodejs_active_*_total` gauges: promtool rejects
 *   `_total` on a gauge, and the per-type `nodejs_active_{handles,requests,resources}` remain.
 */

export const registry = new Registry()

collectDefaultMetrics({ register: registry })
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
  registry.removeSingleMetric(name)
}

type Labels = Record<string, string>

/**
 * A histogram that also remembers the largest value seen per label set (since start), for the
 * actuator's MAX statistic. Each label set's labels object is built once and reused.
 */
class Timer {
  readonly series = new Map<string, { labels: Labels, max: number }>()
  constructor (readonly histogram: Histogram) {}

  /** `key` identifies the label set; `labels` builds it the first time. */
  observe (key: string, labels: () => Labels, seconds: number): void {
    let series = this.series.get(key)
    if (series === undefined) {
      series = { labels: labels(), max: 0 }
      this.series.set(key, series)
    }
    if (seconds > series.max) series.max = seconds
    this.histogram.observe(series.labels, seconds)
  }
}

const httpRequests = new Timer(new Histogram({
  name: 'http_server_requests_seconds',
  help: 'Duration of HTTP server requests',
  labelNames: ['method', 'uri', 'status', 'outcome'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
}))

const dbQueries = new Timer(new Histogram({
  name: 'db_query_seconds',
  help: 'Duration of database statements, by kind (select, insert, update, delete, other)',
  labelNames: ['kind', 'outcome'],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
}))

observeQueries((kind: QueryKind, seconds: number, failed: boolean) => {
  dbQueries.observe(failed ? `${kind} error` : kind, () => ({ kind, outcome: failed ? 'error' : 'success' }), seconds)
})

/** Orders created; incremented after the order is placed, not on an idempotent replay. */
export const ordersPlaced = new Counter({
  name: 'orders_placed_total',
  help: 'Orders placed (idempotent replays not counted)',
  registers: [registry],
})

/** Orders that became CANCELLED. */
export const ordersCancelled = new Counter({
  name: 'orders_cancelled_total',
  help: 'Orders cancelled',
  registers: [registry],
})

/** Unconfirmed orders whose stock reservation ran out (ORDER_RESERVATION_TTL), counted once committed. */
export const ordersExpired = new Counter({
  name: 'orders_expired_total',
  help: 'Unconfirmed orders cancelled by the service when their stock reservation ran out',
  registers: [registry],
})

export const fulfillmentsShipped = new Counter({
  name: 'fulfillments_shipped_total',
  help: 'Shipments recorded (CONTRACT §15.3): by POST /admin/orders/{id}/fulfillments and by the one-step deliver',
  registers: [registry],
})

export const PAYMENT_OUTCOMES = ['approved', 'declined', 'error'] as const
export type PaymentOutcome = typeof PAYMENT_OUTCOMES[number]

/** Charges sent to the payment provider, by outcome (see the list at the top). */
export const paymentsProcessed = new Counter({
  name: 'payments_processed_total',
  help: 'Payment charges sent to the provider, by outcome (approved, declined, error)',
  labelNames: ['outcome'],
  registers: [registry],
})
for (const outcome of PAYMENT_OUTCOMES) paymentsProcessed.inc({ outcome }, 0)

/** Runs a provider charge and counts its outcome in payments_processed_total. */
export async function meteredCharge<T extends { approved: boolean }> (charge: () => Promise<T>): Promise<T> {
  let result: T
  try {
    result = await charge()
  } catch (error) {
    paymentsProcessed.inc({ outcome: 'error' })
    throw error
  }
  paymentsProcessed.inc({ outcome: result.approved ? 'approved' : 'declined' })
  return result
}

/** Webhook attempts, by outcome: success (a 2xx in time) or failure (anything else). */
export const webhookDeliveries = new Counter({
  name: 'webhook_deliveries_total',
  help: 'Webhook delivery attempts, by outcome (success, failure)',
  labelNames: ['outcome'],
  registers: [registry],
})
for (const outcome of ['success', 'failure']) webhookDeliveries.inc({ outcome }, 0)

/** How long webhook receivers took to answer (or to fail). */
export const webhookDeliverySeconds = new Histogram({
  name: 'webhook_delivery_seconds',
  help: 'Duration of webhook delivery attempts',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
})

// Pool gauges: read from the pools of the databases of the apps currently registered.
const pools = new Map<DatabaseHandle, number>()
const POOL_STATES = [
  ['db_pool_connections', 'Open database connections (active + idle)', s => s.total],
  ['db_pool_connections_active', 'Database connections in use', s => s.total - s.idle],
  ['db_pool_connections_idle', 'Idle database connections', s => s.idle],
  ['db_pool_connections_pending', 'Callers waiting for a database connection', s => s.waiting],
  ['db_pool_connections_max', 'Maximum size of the database pool', s => s.max],
] as const satisfies ReadonlyArray<readonly [string, string, (stats: PoolStats) => number]>
for (const [name, help, read] of POOL_STATES) {
  registry.registerMetric(new Gauge({
    name,
    help,
    labelNames: ['pool'],
    registers: [],
    collect () {
      this.reset()
      for (const handle of pools.keys()) {
        if (handle.poolStats) this.inc({ pool: handle.kind }, read(handle.poolStats()))
      }
    },
  }))
}

// PENDING webhook deliveries, counted on scrape in the databases of the apps registered.
registry.registerMetric(new Gauge({
  name: 'events_undelivered',
  help: 'Webhook deliveries not yet made (PENDING)',
  registers: [],
  async collect () {
    const databases = new Set([...pools.keys()].map(handle => handle.db))
    let total = 0
    for (const db of databases) {
      const row = await db.selectFrom('webhook_deliveries').where('status', '=', 'PENDING')
        .select(eb => eb.fn.countAll<string>().as('n')).executeTakeFirst().catch(() => undefined)
      total += Number(row?.n ?? 0)
    }
    this.set(total)
  },
}))

// ---- HTTP timing ----

/** Fastify's `/orders/:id` → `/orders/{id}` (a regex constraint `:id(^\d+$)` is dropped); cached per route. */
const templates = new Map<string, string>()
function templateOf (url: string): string {
  let template = templates.get(url)
  if (template === undefined) {
    template = url.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}')
    templates.set(url, template)
  }
  return template
}

function outcomeOf (status: number): string {
  if (status < 200) return 'INFORMATIONAL'
  if (status < 300) return 'SUCCESS'
  if (status < 400) return 'REDIRECTION'
  if (status < 500) return 'CLIENT_ERROR'
  return 'SERVER_ERROR'
}

export function timeRequest (request: FastifyRequest, reply: FastifyReply): void {
  const method = request.method
  const url = request.is404 ? undefined : request.routeOptions.url
  const uri = url === undefined ? (request.is404 ? 'NOT_FOUND' : 'UNKNOWN') : templateOf(url)
  const status = reply.statusCode
  httpRequests.observe(`${method} ${status} ${uri}`, () => ({ method, uri, status: String(status), outcome: outcomeOf(status) }), reply.elapsedTime / 1000)
}

// ---- /actuator/metrics ----

interface Described {
  promName: string
  name: string
  type: string
  help: string
  baseUnit: string | undefined
}

const UNITS = ['seconds', 'bytes'] as const

/**
 * Spring's dotted name for a Prometheus name: a counter loses `_total`, a unit suffix becomes the
 * base unit, underscores become dots (`http_server_requests_seconds` → `http.server.requests`).
 */
function describe (promName: string, type: string, help: string): Described {
  let base = type === 'counter' ? promName.replace(/_total$/, '') : promName
  const baseUnit = UNITS.find(unit => base.endsWith(`_${unit}`))
  if (baseUnit) base = base.slice(0, -baseUnit.length - 1)
  return { promName, name: base.replaceAll('_', '.'), type, help, baseUnit }
}

/** Every metric by its actuator name; on a clash (none today) the later one keeps its Prometheus name. */
function catalogue (): Map<string, Described> {
  const byName = new Map<string, Described>()
  for (const metric of registry.getMetricsAsArray()) {
    let described = describe(metric.name, String((metric as unknown as { type: string }).type), metric.help)
    if (byName.has(described.name)) described = { ...described, name: metric.name }
    byName.set(described.name, described)
  }
  return byName
}

/** A metric by its actuator name, or else by its Prometheus name. */
function lookup (name: string): Described | undefined {
  const metrics = catalogue()
  return metrics.get(name) ?? [...metrics.values()].find(described => described.promName === name)
}

/** `?tag=key:value` (repeatable), Spring's drill-down. */
function parseTags (query: unknown): Array<[string, string]> {
  const raw = (query as { tag?: string | string[] } | undefined)?.tag
  const tags = raw === undefined ? [] : [raw].flat()
  return tags.map(tag => {
    const colon = tag.indexOf(':')
    if (colon <= 0) throw invalidParam('tag', 'must be key:value')
    return [tag.slice(0, colon), tag.slice(colon + 1)]
  })
}

const STRUCTURAL_LABELS = new Set(['le', 'quantile'])

async function measure (described: Described, tags: Array<[string, string]>) {
  const metric = registry.getSingleMetric(described.promName)!
  const data = await metric.get() as MetricObjectWithValues<MetricValue<string>>
  const matches = (labels: Record<string, string | number | undefined>) => tags.every(([key, value]) => String(labels[key]) === value)
  const values = data.values.filter(value => matches(value.labels))
  if (tags.length > 0 && values.length === 0) {
    throw new ApiError('RESOURCE_NOT_FOUND', `Metric ${described.name} has no series with ${tags.map(t => t.join(':')).join(', ')}.`)
  }

  const available = new Map<string, Set<string>>()
  const filtered = new Set(tags.map(([key]) => key))
  for (const value of values) {
    for (const [key, label] of Object.entries(value.labels)) {
      if (STRUCTURAL_LABELS.has(key) || filtered.has(key) || label === undefined) continue
      let set = available.get(key)
      if (!set) available.set(key, set = new Set())
      set.add(String(label))
    }
  }

  const sum = (suffix?: string) => values
    .filter(value => suffix === undefined || (value as { metricName?: string }).metricName === `${described.promName}${suffix}`)
    .reduce((total, value) => total + value.value, 0)

  let measurements: Array<{ statistic: string, value: number }>
  if (described.type === 'histogram' || described.type === 'summary') {
    measurements = [
      { statistic: 'COUNT', value: sum('_count') },
      { statistic: described.baseUnit === 'seconds' ? 'TOTAL_TIME' : 'TOTAL', value: sum('_sum') },
    ]
    const timer = [httpRequests, dbQueries].find(t => t.histogram === metric)
    if (timer) {
      let max = 0
      for (const series of timer.series.values()) if (matches(series.labels) && series.max > max) max = series.max
      measurements.push({ statistic: 'MAX', value: max })
    }
  } else {
    measurements = [{ statistic: described.type === 'counter' ? 'COUNT' : 'VALUE', value: sum() }]
  }

  return {
    name: described.name,
    description: described.help,
    ...(described.baseUnit ? { baseUnit: described.baseUnit } : {}),
    measurements,
    availableTags: [...available].sort(([a], [b]) => a.localeCompare(b))
      .map(([tag, set]) => ({ tag, values: [...set].sort() })),
  }
}

/** Registers the request timing hook, the pool gauges' source and the actuator metrics routes. */
export async function registerMetrics (app: FastifyInstance, options: { database: DatabaseHandle }): Promise<void> {
  const { database } = options
  pools.set(database, (pools.get(database) ?? 0) + 1)
  app.addHook('onClose', async () => {
    const left = (pools.get(database) ?? 1) - 1
    if (left > 0) pools.set(database, left)
    else pools.delete(database)
  })

  app.addHook('onResponse', (request, reply, done) => {
    timeRequest(request, reply)
    done()
  })

  const route = { config: { access: 'public' as const }, schema: { hide: true } }

  app.get('/actuator/prometheus', route, async (_request, reply) => {
    const body = await registry.metrics()
    return reply.type(registry.contentType).send(body)
  })

  app.get('/actuator/metrics', route, async () => ({ names: [...catalogue().keys()].sort() }))

  app.get<{ Params: { name: string } }>('/actuator/metrics/:name', route, async (request) => {
    const tags = parseTags(request.query)
    const described = lookup(request.params.name)
    if (!described) throw new ApiError('RESOURCE_NOT_FOUND', `No metric named ${request.params.name}.`)
    return measure(described, tags)
  })
}
