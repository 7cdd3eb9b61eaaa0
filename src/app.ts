import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { createIdentity } from './auth/identity.js'
import { registerAuthRateLimit } from './auth/limits.js'
import { authRoutes } from './auth/routes.js'
import { purgeExpiredSignIns } from './auth/oidc-repository.js'
import { OidcProviders, type OidcOptions } from './auth/oidc-providers.js'
import { oidcRoutes } from './auth/oidc-routes.js'
import { purgeExpiredSessions } from './auth/service.js'
import { adminProductRoutes } from './catalog/admin-routes.js'
import { productRoutes } from './catalog/routes.js'
import type { Config } from './config.js'
import { migrate, openDatabase, type DatabaseHandle } from './db/database.js'
import type { Db } from './db/schema.js'
import { registerAccessRules } from './http/access.js'
import { clientErrorHandler, collectRoutes, frameworkErrorHandler, registerErrorHandling, registerMethodNotAllowed } from './http/error-handler.js'
import { requestLogger, type LevelledLogger } from './http/request-logger.js'
import { securityHeaders } from './http/security-headers.js'
import { schemaErrorFormatter, validatorCompiler } from './http/validation.js'
import { registerCors, registerWireRules } from './http/wire.js'
import { purgeExpiredKeys } from './idempotency/repository.js'
import { purgeExpiredMemberTokens } from './members/repository.js'
import { adminMemberRoutes } from './members/admin-routes.js'
import { memberRoutes } from './members/routes.js'
import { bootstrapAdmin } from './members/service.js'
import { docsRoutes } from './ops/docs.js'
import { healthRoutes } from './ops/health.js'
import { registerMetrics, timeRequest } from './ops/metrics.js'
import { registerOpenApi } from './ops/openapi.js'
import { opsRoutes } from './ops/routes.js'
import { createBrokerSink } from './events/broker.js'
import { editRoutes } from './edits/routes.js'
import { eventRoutes } from './events/routes.js'
import { fulfillmentRoutes } from './fulfillments/routes.js'
import { returnRoutes } from './returns/routes.js'
import { purgeOldEvents } from './events/repository.js'
import { adminOrderRoutes } from './orders/admin-routes.js'
import { expireLapsedReservations } from './orders/lifecycle.js'
import { orderRoutes } from './orders/routes.js'
import { simulatedProvider, type PaymentProvider } from './payments/provider.js'
import { paymentRoutes } from './payments/routes.js'
import { DISPATCHER_CONNECTIONS, dispatcherDatabaseUrl, startDispatcher, type Dispatcher } from './webhooks/dispatcher.js'
import { webhookRoutes } from './webhooks/routes.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    /** Which database `db` is: some statements are written for one (the export's COPY). */
    databaseKind: DatabaseHandle['kind']
    config: Config
    /** The webhook dispatcher, to wake after a change commits (it claims only while an endpoint is active). */
    webhooks?: Dispatcher
  }
}

export interface BuildOptions {
  /** An already open database (tests share one across apps); the app then leaves it open on close. */
  database?: DatabaseHandle
  /** `false` for no logs, or pino options merged over the defaults (JSON at `LOG_LEVEL`, credentials redacted). */
  logger?: false | Record<string, unknown>
  /** How often to look for sessions revoked and members suspended by other instances (default 1 s). */
  revocationPollMs?: number
  /** Who moves the money; default the built-in simulated provider (docs/payments.md). */
  paymentProvider?: PaymentProvider
  /** How often to expire orders whose stock reservation ran out (default 15 s: within a minute, CONTRACT §11). */
  reservationSweepMs?: number
  /** How often the webhook dispatcher looks for active endpoints and due deliveries without being woken (default 1 s). */
  webhookPollMs?: number
  /** Timings of the RabbitMQ sink when AMQP_URL is set (src/events/broker.ts); tests shorten them. */
  broker?: { pollMs?: number, retryMinMs?: number, retryMaxMs?: number, standbyMs?: number }
  /** OpenID sign-in timings (src/auth/oidc-providers.ts); tests shorten the key-set cooldown. */
  oidc?: OidcOptions
}

/** Credentials never reach the logs, whatever a serializer or a log call includes (top level or one deep). */
const SECRET_FIELDS = ['password', 'currentPassword', 'newPassword', 'refreshToken', 'accessToken', 'secret', 'token']
const REDACT = [
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie',
  ...SECRET_FIELDS, ...SECRET_FIELDS.map(field => `*.${field}`),
]

/** A caller's `X-Request-Id` is kept only when it is a plain token; anything else could forge log lines. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,200}$/

/** The request id: the caller's `X-Request-Id` when sane, else a fresh UUID. */
function requestId (req: IncomingMessage): string {
  const given = req.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/**
 * One access-log line per request at info, when it completes (Fastify's default writes two, which costs
 * throughput), labelled `requestId`. The URL is logged without its query string, which may carry tokens.
 * At debug and below, the incoming request is logged as well.
 */
class AccessLog extends LogController {
  constructor () {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: request.url.split('?', 1)[0], remoteAddress: request.ip }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Nothing would be written at this level: the line is not built (the null logger of `logger: false` cannot say).
    if ((reply.log as Partial<LevelledLogger>).isLevelEnabled?.(error ? 'error' : 'info') === false) return
    const line = {
      method: request.method,
      url: request.url.split('?', 1)[0],
      statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime * 100) / 100,
    }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

/**
 * Socket limits against slow or idle clients (milliseconds). The whole request (headers and body) must
 * arrive within 30 s, its headers within 10 s; an idle keep-alive connection closes after 72 s (longer
 * than the usual load-balancer idle timeout of 60 s, so the balancer closes first); a socket silent for
 * 120 s mid-response is dropped. Node checks the header and request limits every 5 s.
 */
const TIMEOUTS = { request: 30_000, headers: 10_000, keepAlive: 72_000, connection: 120_000, check: 5_000 }

/** How often expired rows (idempotency keys, refresh and mailed tokens) are purged. */
const PURGE_INTERVAL_MS = 10 * 60 * 1000
const RESERVATION_SWEEP_MS = 15_000
/** Where `GET /` leads: the reference page. */
const HOME = '/docs/index.html'

/**
 * Assembles the service: database (migrated), wire rules, access rules, features, error handling.
 * Tests call it and use `inject`; `server.ts` calls it and listens.
 */
export async function buildApp (config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const security = securityHeaders()
  const accessLog = new AccessLog()
  const app = Fastify({
    logger: options.logger === false ? false : { level: config.logLevel, redact: REDACT, ...options.logger },
    logController: accessLog,
    // Without a logger, Fastify's own factory hands every request the app's (null) logger.
    ...(options.logger === false ? {} : { childLoggerFactory: requestLogger }),
    // Fastify would take any X-Request-Id as is; genReqId checks it first (see requestId).
    requestIdHeader: false,
    genReqId: requestId,
    requestTimeout: TIMEOUTS.request,
    keepAliveTimeout: TIMEOUTS.keepAlive,
    connectionTimeout: TIMEOUTS.connection,
    http: { headersTimeout: TIMEOUTS.headers, connectionsCheckingInterval: TIMEOUTS.check },
    // While shutting down, requests that still arrive on open keep-alive connections are served
    // (with Connection: close) rather than refused with a bare 503: the listener is already closed.
    return503OnClosing: false,
    // true, a hop count, or proxy addresses: the client address then comes from X-Forwarded-For.
    // Fastify's types take no hop count (its runtime does), so a count becomes the function form.
    trustProxy: typeof config.trustProxy === 'number'
      ? (_address: string, hop: number) => hop < (config.trustProxy as number)
      : config.trustProxy,
    bodyLimit: config.bodyLimit,
    schemaErrorFormatter,
    frameworkErrors: frameworkErrorHandler(config, security, (request, reply) => {
      accessLog.requestCompleted(null, request, reply)
      timeRequest(request, reply)
    }),
    // What Node's HTTP parser refuses is answered with the error envelope too (CONTRACT §11 Wire).
    clientErrorHandler: clientErrorHandler(config),
    ajv: { customOptions: { removeAdditional: false } },
    // Path parameters of any length reach validation (a 101-digit id is a 400 naming `id`, not a 414).
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 16_384 },
  }).withTypeProvider<TypeBoxTypeProvider>()
  // Every response, errors included, carries the security headers and the request id (so a caller can quote it).
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(security)
    reply.header('x-request-id', request.id)
    done()
  })
  app.setValidatorCompiler(validatorCompiler)

  const database = options.database ?? await openDatabase(config)
  if (!options.database) app.addHook('onClose', () => database.close())
  await migrate(database.db)
  app.decorate('db', database.db)
  app.decorate('databaseKind', database.kind)
  app.decorate('config', config)

  const identity = await createIdentity(database.db, config, app.log, { revocationPollMs: options.revocationPollMs })
  app.addHook('onClose', () => identity.close())
  const admin = await bootstrapAdmin(database.db, config)
  if (admin === 'created') app.log.info({ email: config.adminEmail }, 'created the first admin')

  // Webhooks: delivered promptly after each change commits (a change answers after its commit): the
  // instance that made the change wakes its own dispatcher; others poll. Stopped before the pool closes.
  // On PostgreSQL the dispatcher has two connections of its own: its claims and records must not
  // queue behind the API's transactions, nor the API's behind them (bench/RESULTS.md, "Events");
  // they plan each statement for its values (dispatcherDatabaseUrl).
  const dispatcherDatabase = config.databaseUrl
    ? await openDatabase({ ...config, databaseUrl: dispatcherDatabaseUrl(config.databaseUrl), databasePoolSize: DISPATCHER_CONNECTIONS })
    : undefined
  if (dispatcherDatabase) app.addHook('onClose', () => dispatcherDatabase.close())
  const webhooks = startDispatcher({
    db: dispatcherDatabase?.db ?? database.db,
    config,
    log: app.log,
    pollMs: options.webhookPollMs,
  })
  app.decorate('webhooks', webhooks)
  app.addHook('onResponse', (request, _reply, done) => {
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') webhooks.wake()
    done()
  })
  app.addHook('preClose', () => webhooks.close())

  // Request bodies are JSON only: text/plain and everything else is 415.
  app.removeContentTypeParser('text/plain')
  registerErrorHandling(app, config)
  // CORS first: its preflights are answered before the trailing-slash 404, the rate limit and the
  // access rules, and its headers are on every later error.
  await registerCors(app, config)
  registerWireRules(app, config)
  const routes = collectRoutes(app)
  registerAuthRateLimit(app, identity.counters, config.authRateLimit)
  registerAccessRules(app, identity.authenticate)
  await registerOpenApi(app)
  await registerMetrics(app, { database })

  await app.register(opsRoutes)
  // With AMQP_URL, events are also published to RabbitMQ, from when the app is ready until it closes
  // (closed before the database, as onClose hooks run last-registered first).
  const broker = config.amqpUrl
    ? createBrokerSink({ db: database.db, kind: database.kind, url: config.amqpUrl, log: app.log, ...options.broker })
    : undefined
  if (broker) {
    app.addHook('onReady', async () => broker.start())
    app.addHook('onClose', () => broker.close())
  }
  const providers = new OidcProviders(config, app.log, options.oidc)
  await app.register(healthRoutes, { database, identity, broker, providers })
  await app.register(docsRoutes)
  await app.register(memberRoutes, { identity })
  await app.register(authRoutes, { identity })
  await app.register(oidcRoutes, { identity, providers })
  const paymentProvider = options.paymentProvider ?? simulatedProvider()
  await app.register(productRoutes)
  await app.register(adminProductRoutes)
  await app.register(orderRoutes, { paymentProvider })
  await app.register(adminOrderRoutes, { paymentProvider })
  await app.register(fulfillmentRoutes, { mailer: identity.mailer })
  await app.register(returnRoutes, { paymentProvider })
  await app.register(editRoutes, { paymentProvider })
  await app.register(paymentRoutes, { paymentProvider })
  await app.register(eventRoutes)
  await app.register(webhookRoutes)
  await app.register(adminMemberRoutes)
  // `/` sends a person who opens the service's address to the docs (to the back office, once one is served).
  app.get('/', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) => reply.redirect(HOME))
  registerMethodNotAllowed(app, routes)

  // Housekeeping: rows whose lifetime has ended are deleted in the background, so tables do not grow forever.
  const purges: Array<[string, (db: Db) => Promise<number>]> = [
    ['idempotency keys', purgeExpiredKeys],
    ['refresh tokens and sessions', purgeExpiredSessions],
    ['mailed tokens', purgeExpiredMemberTokens],
    ['sign-in flows and login codes', purgeExpiredSignIns],
    ['events', db => purgeOldEvents(db, config.eventRetentionMs)],
  ]
  const purge = setInterval(() => {
    for (const [what, run] of purges) {
      run(database.db).catch(error => app.log.warn({ err: error }, `purge of expired ${what} failed`))
    }
  }, Math.min(PURGE_INTERVAL_MS, config.idempotencyTtlMs))
  purge.unref()
  app.addHook('onClose', async () => clearInterval(purge))

  // Unconfirmed orders give their stock back when their reservation runs out, on whichever instance sweeps first.
  const sweep = setInterval(() => {
    expireLapsedReservations(database.db)
      .then(expired => { if (expired > 0) webhooks.wake() }) // their order.cancelled events
      .catch(error => app.log.warn({ err: error }, 'expiry of lapsed reservations failed'))
  }, options.reservationSweepMs ?? RESERVATION_SWEEP_MS)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))

  return app
}
