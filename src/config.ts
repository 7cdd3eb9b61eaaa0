import { availableParallelism } from 'node:os'

/**
 * Configuration comes from environment variables only (CONTRACT §9). Every variable is optional;
 * a bad value stops start-up with a message naming the variable and what it accepts.
 */
export interface Config {
  readonly port: number
  readonly host: string
  /** `postgres://…` → PostgreSQL server; undefined → embedded PGlite. */
  readonly databaseUrl: string | undefined
  readonly databasePoolSize: number
  /** Run parameterised statements as named prepared statements (src/db/prepared.ts). */
  readonly databasePreparedStatements: boolean
  /** Embedded database directory, or `memory`. */
  readonly dataDir: string
  readonly adminEmail: string | undefined
  readonly adminPassword: string | undefined
  readonly jwtSecret: string | undefined
  readonly idempotencyTtlMs: number
  /** How long an order holds its stock until its first payment is captured before it is expired; 0 = for ever. */
  readonly orderReservationTtlMs: number
  /** Orders a member may hold that reserve stock with nothing captured (CONTRACT §18); 0 = no limit. */
  readonly maxUnpaidOrders: number
  /** How long after an order's latest delivery its owner may ask for a return (CONTRACT §15.4); 0 = owners cannot. */
  readonly returnWindowMs: number
  /** How long events are kept in the feed. */
  readonly eventRetentionMs: number
  readonly errorTypeBase: string
  readonly currency: string
  readonly bodyLimit: number
  readonly logLevel: string
  /** `smtp://host:port` for outgoing mail; undefined → mail is written to the log. */
  readonly smtpUrl: string | undefined
  readonly mailFrom: string
  /** Redis for shared rate-limit counters; undefined → counters in process memory. */
  readonly redisUrl: string | undefined
  /** Requests per minute per client address on /auth/**, register and password reset. */
  readonly authRateLimit: number
  /** Failed logins per email per 15 minutes before 429. */
  readonly loginFailureLimit: number
  /** RabbitMQ (`amqp://`, `amqps://`) that every event is also published to; undefined → no broker sink. */
  readonly amqpUrl: string | undefined
  /** Fastify's trustProxy: false, true, a hop count, or a comma-separated list of addresses. */
  readonly trustProxy: boolean | number | string
  /** Server processes (node:cluster) sharing the port; more than 1 needs DATABASE_URL. */
  readonly workers: number
  /** How long a webhook receiver has to answer (1 s – 60 s). */
  readonly webhookTimeoutMs: number
  /** The delays between webhook attempts (1–20 steps). */
  readonly webhookRetrySchedule: readonly number[]
  /** Webhooks may reach private hosts and use http:// (development and tests). */
  readonly webhookAllowPrivate: boolean
  /** OpenID Connect providers for sign-in (CONTRACT §13), from `OIDC_<ID>_ISSUER|CLIENT_ID|CLIENT_SECRET`. */
  readonly oidcProviders: readonly OidcProviderConfig[]
  /** The service's own public base URL (no trailing slash); required once any OIDC_* is set. */
  readonly publicUrl: string | undefined
  /** URL prefixes a sign-in's `redirect_uri` must start with (scheme, host and port exactly; path by segments). */
  readonly oidcRedirectAllowlist: readonly string[]
  /**
   * Browser origins that may call /api/** cross-origin (CORS, CONTRACT §11): `'*'` for any, else the
   * listed origins exactly as a browser sends them (`https://shop.example`); empty → CORS is off.
   */
  readonly corsOrigins: '*' | readonly string[]
}

export interface OidcProviderConfig {
  /** The registration id as it appears in paths: lower-case `[a-z0-9-]+`. */
  readonly id: string
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
}

export class ConfigError extends Error {
  constructor (readonly variable: string, accepts: string, value: string, message?: string) {
    super(message ?? `Invalid ${variable}=${JSON.stringify(value)}: expected ${accepts}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

/** A git commit id, full or abbreviated. */
export const COMMIT_ID = /^[0-9a-f]{7,40}$/i

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }

/** Reads and validates the configuration, e.g. `loadConfig({ PORT: '3000' }).port === 3000`. */
export function loadConfig (env: Env = process.env): Config {
  const read = (name: string): string | undefined => {
    const value = env[name]
    return value === undefined || value.trim() === '' ? undefined : value.trim()
  }

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name)
    if (raw === undefined) return fallback
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      throw new ConfigError(name, `an integer from ${min} to ${max}`, raw)
    }
    return value
  }

  const duration = (name: string, fallback: string, max: string, zero = false): number => {
    const raw = read(name) ?? fallback
    if (zero && raw === '0') return 0
    const of = (text: string) => {
      const match = /^(\d+)(ms|s|m|h|d)$/.exec(text)
      return match ? Number(match[1]) * DURATION_UNITS[match[2]!]! : 0
    }
    // Examples the setting itself would take: a limit of 60s is not told "such as 15m".
    const examplesUpTo = (limit: number) => ['10s', '90s', '15m', '24h', '7d'].filter(example => of(example) <= limit).join(', ')
    const value = of(raw)
    if (value <= 0 || value > of(max)) {
      throw new ConfigError(name, `${zero ? '0 or ' : ''}a positive duration up to ${max}, such as ${examplesUpTo(of(max))}`, raw)
    }
    return value
  }

  const size = (name: string, fallback: string): number => {
    const raw = (read(name) ?? fallback).toLowerCase()
    const match = /^(\d+)(b|kb|mb|gb)?$/.exec(raw)
    const value = match ? Number(match[1]) * SIZE_UNITS[match[2] ?? 'b']! : 0
    if (value <= 0) throw new ConfigError(name, 'a positive size such as 1048576, 512kb or 1mb', raw)
    return value
  }

  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = read(name)
    if (raw === undefined) return undefined
    let parsed: URL | undefined
    try { parsed = new URL(raw) } catch { parsed = undefined }
    if (!parsed || !protocols.includes(parsed.protocol)) {
      // The message goes to the logs: a password in the URL is not repeated there.
      const shown = raw.replace(/^([^:/]*:\/\/[^:/@]*):[^@/]*@/, '$1:<hidden>@')
      throw new ConfigError(name, `a URL starting with ${protocols.map(p => `${p}//`).join(' or ')}`, shown)
    }
    return raw
  }

  const oneOf = (name: string, fallback: string, choices: string[]): string => {
    const raw = read(name) ?? fallback
    if (!choices.includes(raw)) throw new ConfigError(name, `one of ${choices.join(', ')}`, raw)
    return raw
  }

  const adminEmail = read('ADMIN_EMAIL')
  const adminPassword = env.ADMIN_PASSWORD === '' ? undefined : env.ADMIN_PASSWORD
  if (adminEmail !== undefined && !/^[^\s@]+@[^\s@]+$/.test(adminEmail)) {
    throw new ConfigError('ADMIN_EMAIL', 'an email address', adminEmail)
  }
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    const missing = adminEmail === undefined ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD'
    throw new ConfigError(missing, 'to be set together with ' + (missing === 'ADMIN_EMAIL' ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL'), '')
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || adminPassword.length > 128)) {
    throw new ConfigError('ADMIN_PASSWORD', 'a password of 8 to 128 characters', '<hidden>')
  }

  const jwtSecret = env.JWT_SECRET === '' ? undefined : env.JWT_SECRET
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('JWT_SECRET', 'a secret of at least 32 bytes', '<hidden>')
  }

  const currency = read('CURRENCY') ?? 'USD'
  if (!/^[A-Z]{3}$/.test(currency)) throw new ConfigError('CURRENCY', 'an ISO 4217 code such as USD or EUR', currency)

  const errorTypeBase = url('ERROR_TYPE_BASE', ['http:', 'https:']) ?? 'https://api.example.com'

  const trustProxy = (): boolean | number | string => {
    const raw = read('TRUST_PROXY') ?? 'false'
    if (raw === 'true' || raw === 'false') return raw === 'true'
    if (/^\d+$/.test(raw)) return Number(raw)
    if (/^[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*$/.test(raw)) return raw
    throw new ConfigError('TRUST_PROXY', 'true, false, a hop count, or comma-separated proxy addresses', raw)
  }

  const databaseUrl = url('DATABASE_URL', ['postgres:', 'postgresql:'])

  // Read by /actuator/info (src/ops/health.ts); checked here so that a bad one stops start-up.
  const gitCommit = read('GIT_COMMIT')
  if (gitCommit !== undefined && !COMMIT_ID.test(gitCommit)) {
    throw new ConfigError('GIT_COMMIT', 'a commit id of 7 to 40 hexadecimal digits', gitCommit)
  }

  const workers = (): number => {
    const raw = read('WORKERS') ?? '1'
    const count = raw === 'auto' ? availableParallelism() : /^\d+$/.test(raw) ? Number(raw) : 0
    if (count < 1 || count > 64) throw new ConfigError('WORKERS', 'auto or an integer from 1 to 64', raw)
    // Each PGlite instance owns its data directory: two processes would corrupt it (or, in memory, not share it).
    if (count > 1 && databaseUrl === undefined) {
      throw new ConfigError('WORKERS', '', raw,
        `WORKERS > 1 needs DATABASE_URL: the embedded database serves one process (WORKERS=${raw}${raw === 'auto' ? ` is ${count} here` : ''})`)
    }
    return count
  }

  const webhookTimeoutMs = duration('WEBHOOK_TIMEOUT', '10s', '60s')
  if (webhookTimeoutMs < 1000) throw new ConfigError('WEBHOOK_TIMEOUT', 'a duration from 1s to 60s', read('WEBHOOK_TIMEOUT')!)
  const webhookRetrySchedule = (): number[] => {
    const raw = read('WEBHOOK_RETRY_SCHEDULE') ?? '5s,5m,30m,2h,5h,10h,10h'
    const steps = raw.split(',').map(step => /^(\d+)(ms|s|m|h|d)$/.exec(step.trim()))
    const delays = steps.map(match => match ? Number(match[1]) * DURATION_UNITS[match[2]!]! : 0)
    if (delays.length > 20 || delays.some(delay => delay <= 0 || delay > DURATION_UNITS.d! * 7)) {
      throw new ConfigError('WEBHOOK_RETRY_SCHEDULE', '1 to 20 comma-separated positive durations up to 7d, such as 5s,5m,30m,2h', raw)
    }
    return delays
  }
  const retrySchedule = webhookRetrySchedule()
  const eventRetentionMs = duration('EVENT_RETENTION', '30d', '3650d')
  // A delivery's event must outlive its retries (events with PENDING deliveries are not purged anyway).
  const scheduleMs = retrySchedule.reduce((sum, delay) => sum + delay, 0)
  if (eventRetentionMs < scheduleMs) {
    throw new ConfigError('EVENT_RETENTION', '', read('EVENT_RETENTION') ?? '30d',
      `EVENT_RETENTION=${read('EVENT_RETENTION') ?? '30d'} is shorter than WEBHOOK_RETRY_SCHEDULE's total length (${Math.ceil(scheduleMs / 1000)}s): events must outlive their retries`)
  }

  const oidc = readOidc(env, read)
  const corsOrigins = readCorsOrigins(read('CORS_ORIGINS'))

  return Object.freeze({
    port: integer('PORT', 8080, 0, 65535),
    host: read('HOST') ?? '0.0.0.0',
    databaseUrl,
    databasePoolSize: integer('DATABASE_POOL_SIZE', 10, 1, 1000),
    databasePreparedStatements: oneOf('DATABASE_PREPARED_STATEMENTS', 'true', ['true', 'false']) === 'true',
    dataDir: read('DATA_DIR') ?? './data',
    adminEmail,
    adminPassword,
    jwtSecret,
    idempotencyTtlMs: duration('IDEMPOTENCY_TTL', '24h', '365d'),
    orderReservationTtlMs: duration('ORDER_RESERVATION_TTL', '60m', '365d', true),
    maxUnpaidOrders: integer('MAX_UNPAID_ORDERS', 10, 0, 1_000_000),
    returnWindowMs: duration('RETURN_WINDOW', '30d', '3650d', true),
    eventRetentionMs,
    errorTypeBase: errorTypeBase.replace(/\/+$/, ''),
    currency,
    bodyLimit: size('BODY_LIMIT', '1mb'),
    logLevel: oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    smtpUrl: url('SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: read('MAIL_FROM') ?? 'Order service <no-reply@localhost>',
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    amqpUrl: url('AMQP_URL', ['amqp:', 'amqps:']),
    authRateLimit: integer('AUTH_RATE_LIMIT', 60, 1, 1_000_000),
    loginFailureLimit: integer('LOGIN_FAILURE_LIMIT', 5, 1, 1_000_000),
    trustProxy: trustProxy(),
    workers: workers(),
    webhookTimeoutMs,
    webhookRetrySchedule: Object.freeze(retrySchedule),
    webhookAllowPrivate: oneOf('WEBHOOK_ALLOW_PRIVATE', 'false', ['true', 'false']) === 'true',
    ...oidc,
    corsOrigins,
  })
}

const CORS_ACCEPTS = '* or comma-separated origins such as https://shop.example,http://localhost:3000'

/**
 * `CORS_ORIGINS`: `*` alone, or origins as a browser sends them in `Origin` — `http://` or `https://`,
 * a lower-case host name, IPv4 or [IPv6] address (punycode for international names), a port only
 * when it is not the scheme's default, and nothing after it: no path (not even `/`), query,
 * fragment or credentials. The `Origin` header is compared with each entry exactly, so an entry
 * written any other way could never match; it stops start-up instead of being silently useless.
 */
function readCorsOrigins (raw: string | undefined): '*' | readonly string[] {
  if (raw === undefined) return Object.freeze([])
  if (raw === '*') return '*'
  const origins = raw.split(',').map(entry => entry.trim())
  for (const entry of origins) {
    const refuse = (why: string) =>
      new ConfigError('CORS_ORIGINS', CORS_ACCEPTS, raw, `Invalid CORS_ORIGINS entry ${JSON.stringify(entry)}: ${why}; expected ${CORS_ACCEPTS}`)
    if (entry === '') throw refuse('an empty entry')
    if (entry === '*') throw refuse('* stands alone (any origin), it cannot be listed with others')
    const parsed = parseUrl(entry)
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw refuse('not an http:// or https:// origin')
    if (parsed.username !== '' || parsed.password !== '') {
      // Not repeated in the message, which goes to the logs: it may hold a password.
      throw new ConfigError('CORS_ORIGINS', CORS_ACCEPTS, '', `Invalid CORS_ORIGINS: an entry holds credentials (user@), which an origin never has; expected ${CORS_ACCEPTS}`)
    }
    if (!/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(parsed.hostname)) throw refuse('not a host name or address')
    if (parsed.origin !== entry) {
      throw refuse(`an origin is scheme://host[:port] as a browser sends it (here ${JSON.stringify(parsed.origin)}): no path or trailing slash, no query, lower case, no default port`)
    }
  }
  return Object.freeze([...new Set(origins)])
}

const OIDC_PART = /^OIDC_([A-Z0-9_]+)_(ISSUER|CLIENT_ID|CLIENT_SECRET)$/
const OIDC_PARTS = ['ISSUER', 'CLIENT_ID', 'CLIENT_SECRET'] as const

/** A loopback host, where an `http://` issuer is allowed (a provider on the same machine, in development). */
function isLoopbackHost (hostname: string): boolean {
  return hostname === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
}

function parseUrl (raw: string): URL | undefined {
  try { return new URL(raw) } catch { return undefined }
}

/**
 * The OpenID sign-in settings: every `OIDC_<ID>_*` group complete (all three parts or none), issuers
 * `https://` (or `http://` on a loopback host), `PUBLIC_URL` once any `OIDC_*` is set, and the
 * redirect allowlist as absolute http(s) URL prefixes.
 */
function readOidc (env: Env, read: (name: string) => string | undefined): Pick<Config, 'oidcProviders' | 'publicUrl' | 'oidcRedirectAllowlist'> {
  const groups = new Map<string, Partial<Record<typeof OIDC_PARTS[number], string>>>()
  const anySet = Object.keys(env).some(name => name.startsWith('OIDC_') && read(name) !== undefined)
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('OIDC_') || name === 'OIDC_REDIRECT_ALLOWLIST' || read(name) === undefined) continue
    const match = OIDC_PART.exec(name)
    if (!match || /^_|_$|__/.test(match[1]!)) {
      throw new ConfigError(name, '', '', `Unknown variable ${name}: expected OIDC_<ID>_ISSUER, OIDC_<ID>_CLIENT_ID, OIDC_<ID>_CLIENT_SECRET (<ID> of A-Z, 0-9 and single _) or OIDC_REDIRECT_ALLOWLIST`)
    }
    const group = groups.get(match[1]!) ?? {}
    group[match[2] as typeof OIDC_PARTS[number]] = read(name)
    groups.set(match[1]!, group)
  }
  const providers: OidcProviderConfig[] = []
  for (const [id, group] of groups) {
    for (const part of OIDC_PARTS) {
      if (group[part] === undefined) {
        const given = OIDC_PARTS.filter(p => group[p] !== undefined).map(p => `OIDC_${id}_${p}`).join(', ')
        throw new ConfigError(`OIDC_${id}_${part}`, '', '', `Missing OIDC_${id}_${part}: it is needed with ${given} (all three or none)`)
      }
    }
    const name = `OIDC_${id}_ISSUER`
    const issuer = parseUrl(group.ISSUER!)
    const secure = issuer?.protocol === 'https:' || (issuer?.protocol === 'http:' && isLoopbackHost(issuer.hostname))
    if (!issuer || !secure || issuer.search !== '' || issuer.hash !== '' || issuer.username !== '' || issuer.password !== '') {
      throw new ConfigError(name, 'an https:// issuer URL without query or fragment (http:// only on localhost or 127.0.0.0/8)', group.ISSUER!)
    }
    providers.push(Object.freeze({
      id: id.toLowerCase().replaceAll('_', '-'),
      issuer: group.ISSUER!,
      clientId: group.CLIENT_ID!,
      clientSecret: group.CLIENT_SECRET!,
    }))
  }

  const rawPublic = read('PUBLIC_URL')
  let publicUrl: string | undefined
  if (rawPublic !== undefined) {
    const parsed = parseUrl(rawPublic)
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '') {
      throw new ConfigError('PUBLIC_URL', 'the service\'s public http:// or https:// base URL, without query or fragment', rawPublic)
    }
    publicUrl = rawPublic.replace(/\/+$/, '')
  } else if (anySet) {
    throw new ConfigError('PUBLIC_URL', '', '', 'Missing PUBLIC_URL: it is required once any OIDC_* variable is set (the callback is {PUBLIC_URL}/login/oauth2/code/{id})')
  }

  const rawAllow = read('OIDC_REDIRECT_ALLOWLIST')
  const allowlist = rawAllow === undefined ? [] : rawAllow.split(',').map(prefix => prefix.trim())
  for (const prefix of allowlist) {
    const parsed = parseUrl(prefix)
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
      throw new ConfigError('OIDC_REDIRECT_ALLOWLIST', 'comma-separated absolute http:// or https:// URL prefixes without query or fragment', rawAllow!)
    }
  }
  return { oidcProviders: Object.freeze(providers), publicUrl, oidcRedirectAllowlist: Object.freeze(allowlist) }
}
