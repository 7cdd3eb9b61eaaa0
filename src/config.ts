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
  /** How long a PLACED order holds its stock unconfirmed before it is expired; 0 = for ever. */
  readonly orderReservationTtlMs: number
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
  /** Fastify's trustProxy: false, true, a hop count, or a comma-separated list of addresses. */
  readonly trustProxy: boolean | number | string
  /** Server processes (node:cluster) sharing the port; more than 1 needs DATABASE_URL. */
  readonly workers: number
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
    const value = of(raw)
    if (value <= 0 || value > of(max)) {
      throw new ConfigError(name, `${zero ? '0 or ' : ''}a positive duration up to ${max}, such as 90s, 15m, 24h or 7d`, raw)
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
    eventRetentionMs: duration('EVENT_RETENTION', '30d', '3650d'),
    errorTypeBase: errorTypeBase.replace(/\/+$/, ''),
    currency,
    bodyLimit: size('BODY_LIMIT', '1mb'),
    logLevel: oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    smtpUrl: url('SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: read('MAIL_FROM') ?? 'Order service <no-reply@localhost>',
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    authRateLimit: integer('AUTH_RATE_LIMIT', 60, 1, 1_000_000),
    loginFailureLimit: integer('LOGIN_FAILURE_LIMIT', 5, 1, 1_000_000),
    trustProxy: trustProxy(),
    workers: workers(),
  })
}
