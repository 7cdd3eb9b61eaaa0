import { readFile, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { sql } from 'kysely'
import { Type } from 'typebox'
import { COMMIT_ID } from '../config.js'
import type { Identity } from '../auth/identity.js'
import type { CounterStore } from '../auth/limits.js'
import type { DatabaseHandle } from '../db/database.js'
import type { OidcProviders } from '../auth/oidc-providers.js'
import type { BrokerSink } from '../events/broker.js'
import { serviceUnavailable } from '../db/errors.js'
import { isAdmin } from '../http/access.js'
import { Envelope, ok } from '../http/schemas.js'

type Status = 'UP' | 'DOWN'

interface Component {
  status: Status
  details?: Record<string, unknown>
}

/** How long a check may take before its component counts as DOWN (a hung dependency must not hang the probe). */
export const CHECK_TIMEOUT_MS = 2_000

/** Settles with `promise`, or rejects with a timeout error after `ms`. */
function within<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new CheckTimeout()), ms)
  })
  promise.catch(() => {}) // a late failure after the timeout is not an unhandled rejection
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

class CheckTimeout extends Error {}

/** Why a check failed, in words of our own: never a driver message or SQL text (CONTRACT §2). */
const failure = (what: string, error: unknown) => error instanceof CheckTimeout
  ? `${what} did not answer within ${CHECK_TIMEOUT_MS} ms.`
  : `${what} could not be reached.`

const DATABASE_NAMES = { postgres: 'PostgreSQL', pglite: 'PGlite' } as const

async function checkDatabase (database: DatabaseHandle): Promise<Component> {
  const details = { database: DATABASE_NAMES[database.kind], validationQuery: 'select 1' }
  try {
    await within(sql`select 1`.execute(database.db), CHECK_TIMEOUT_MS)
    return { status: 'UP', details }
  } catch (error) {
    return { status: 'DOWN', details: { ...details, error: failure('The database', error) } }
  }
}

/** Checks Redis (through the rate-limit counter store's connection) when REDIS_URL is set. */
function redisCheck (url: string | undefined, counters: CounterStore): (() => Promise<Component>) | undefined {
  if (!url) return undefined
  return async () => {
    try {
      if (!(await within(counters.ping(), CHECK_TIMEOUT_MS))) throw new Error('no answer')
      return { status: 'UP' }
    } catch (error) {
      return { status: 'DOWN', details: { error: failure('Redis', error) } }
    }
  }
}

/** Where package.json, .git and this module live. */
const MODULE_FILE = fileURLToPath(import.meta.url)
const ROOT = join(dirname(MODULE_FILE), '..', '..') // src/ops or dist/ops → project root

interface Info {
  app: { name: string, version: string }
  build: { time: string }
  git?: { commit: string }
}

/** The checked-out commit: GIT_COMMIT, else .git/HEAD (a detached id, or a ref file or packed ref); undefined when unknown. */
async function gitCommit (): Promise<string | undefined> {
  const fromEnv = process.env.GIT_COMMIT?.trim()
  if (fromEnv && COMMIT_ID.test(fromEnv)) return fromEnv.toLowerCase()
  try {
    const head = (await readFile(join(ROOT, '.git', 'HEAD'), 'utf8')).trim()
    if (COMMIT_ID.test(head)) return head.toLowerCase()
    const ref = /^ref: (refs\/[\w./-]+)$/.exec(head)?.[1]
    if (!ref || ref.includes('..')) return undefined
    const loose = await readFile(join(ROOT, '.git', ref), 'utf8').then(text => text.trim(), () => undefined)
    if (loose && COMMIT_ID.test(loose)) return loose.toLowerCase()
    const packed = await readFile(join(ROOT, '.git', 'packed-refs'), 'utf8').catch(() => '')
    const line = packed.split('\n').find(entry => entry.endsWith(` ${ref}`))
    const id = line?.split(' ')[0]
    return id && COMMIT_ID.test(id) ? id.toLowerCase() : undefined
  } catch {
    return undefined
  }
}

async function loadInfo (): Promise<Info> {
  const pkg = await readFile(join(ROOT, 'package.json'), 'utf8')
    .then(text => JSON.parse(text) as { name?: unknown, version?: unknown }, () => ({} as { name?: unknown, version?: unknown }))
  // Build time: when this module's file was written. Under dist/ that is when `npm run build`
  // compiled it; run from source (tsx) it is when the source last changed. If the file cannot be
  // read, the process start stands in.
  const built = await stat(MODULE_FILE).then(s => s.mtime, () => new Date(Date.now() - process.uptime() * 1000))
  const commit = await gitCommit()
  return {
    app: {
      name: typeof pkg.name === 'string' ? pkg.name : 'order-service',
      version: typeof pkg.version === 'string' ? pkg.version : '0.0.0',
    },
    build: { time: built.toISOString() },
    ...(commit ? { git: { commit } } : {}),
  }
}

const ROUTE = { config: { access: 'public' as const }, schema: { hide: true } }

/** Health answers describe this moment: never cached by a client or a proxy. */
function send (reply: FastifyReply, status: number, body: unknown) {
  return reply.code(status).header('Cache-Control', 'no-store').type('application/json; charset=utf-8').send(body)
}

/**
 * Actuator health and info (CONTRACT §8, §10), outside `/api` and so not enveloped:
 * - `/actuator/health`: `{status}`; ADMIN callers also get `components` (db, and redis when
 *   REDIS_URL is set, broker when AMQP_URL is set) with details. 200 when UP, 503 when DOWN. The
 *   overall status follows the database: with Redis down the rate limits fail open, and with the
 *   broker down events wait to be published, so either shows as a DOWN component without taking
 *   the instance out of a load balancer (CONTRACT §14 Health).
 * - `/actuator/health/liveness`: UP while the process serves requests (no dependency checked).
 * - `/actuator/health/readiness`: UP when the database answers, else 503 DOWN.
 * - `/actuator/info`: `{app: {name, version}, build: {time}, git?: {commit}}`.
 * - `/api/v1/health`, for clients: readiness in the envelope, 200 `{status: "UP"}` or 503
 *   SERVICE_UNAVAILABLE with `Retry-After` (CONTRACT §11 Wire).
 * No query schema: unknown query parameters are ignored here (the rule that rejects them covers `/api` only).
 */
export const healthRoutes: FastifyPluginAsync<{ database: DatabaseHandle, identity: Identity, broker?: BrokerSink, providers?: OidcProviders }> = async (app, { database, identity, broker, providers }) => {
  const checkRedis = redisCheck(app.config.redisUrl, identity.counters)
  const info = await loadInfo()

  app.get('/actuator/health', ROUTE, async (request, reply) => {
    const [db, redisComponent] = await Promise.all([checkDatabase(database), checkRedis?.()])
    const status = db.status
    const body = request.principal && isAdmin(request.principal)
      ? {
          status,
          components: {
            db,
            ...(redisComponent ? { redis: redisComponent } : {}),
            ...(broker ? { broker: broker.health() } : {}),
            ...(providers && providers.ids().length > 0 ? { oidc: providers.health() } : {}),
          },
        }
      : { status }
    return send(reply, status === 'UP' ? 200 : 503, body)
  })

  app.get('/actuator/health/liveness', ROUTE, async (_request, reply) => send(reply, 200, { status: 'UP' }))

  app.get('/actuator/health/readiness', ROUTE, async (_request, reply) => {
    const { status } = await checkDatabase(database)
    return send(reply, status === 'UP' ? 200 : 503, { status })
  })

  app.get('/actuator/info', ROUTE, async (_request, reply) => send(reply, 200, info))

  app.get('/api/v1/health', {
    config: { access: 'public' },
    schema: {
      tags: ['operations'],
      operationId: 'getHealth',
      summary: 'Can the service serve requests now',
      description: 'Answers as readiness does: 200 `{status: "UP"}` when the database answers, else 503 SERVICE_UNAVAILABLE with Retry-After.',
      response: { 200: Envelope(Type.Object({ status: Type.Literal('UP') })) },
    },
  }, async () => {
    const { status } = await checkDatabase(database)
    if (status !== 'UP') throw serviceUnavailable()
    return ok({ status: 'UP' as const })
  })
}
