import assert from 'node:assert/strict'
import { availableParallelism } from 'node:os'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.js'

describe('configuration', () => {
  it('has the contract defaults when nothing is set', () => {
    assert.deepEqual({ ...loadConfig({}) }, {
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      databasePoolSize: 10,
      databasePreparedStatements: true,
      dataDir: './data',
      adminEmail: undefined,
      adminPassword: undefined,
      jwtSecret: undefined,
      idempotencyTtlMs: 24 * 3600 * 1000,
      orderReservationTtlMs: 60 * 60 * 1000,
      maxUnpaidOrders: 10,
      returnWindowMs: 30 * 24 * 3600 * 1000,
      eventRetentionMs: 30 * 24 * 3600 * 1000,
      errorTypeBase: 'https://api.example.com',
      currency: 'USD',
      bodyLimit: 1024 * 1024,
      logLevel: 'info',
      smtpUrl: undefined,
      mailFrom: 'Order service <no-reply@localhost>',
      redisUrl: undefined,
      amqpUrl: undefined,
      authRateLimit: 60,
      loginFailureLimit: 5,
      trustProxy: false,
      workers: 1,
      webhookTimeoutMs: 10_000,
      webhookRetrySchedule: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      webhookAllowPrivate: false,
      oidcProviders: [],
      publicUrl: undefined,
      oidcRedirectAllowlist: [],
      corsOrigins: [],
    })
  })

  it('is frozen', () => {
    assert.ok(Object.isFrozen(loadConfig({})))
  })

  it('reads durations, sizes and URLs', () => {
    const config = loadConfig({
      IDEMPOTENCY_TTL: '90s', BODY_LIMIT: '512kb', DATABASE_URL: 'postgres://u@h:5432/db', ERROR_TYPE_BASE: 'https://errors.example.org/', PORT: '3000',
    })
    assert.equal(config.idempotencyTtlMs, 90_000)
    assert.equal(config.bodyLimit, 512 * 1024)
    assert.equal(config.databaseUrl, 'postgres://u@h:5432/db')
    assert.equal(config.errorTypeBase, 'https://errors.example.org')
    assert.equal(config.port, 3000)
    assert.equal(loadConfig({ IDEMPOTENCY_TTL: '15m' }).idempotencyTtlMs, 900_000)
    assert.equal(loadConfig({ ORDER_RESERVATION_TTL: '45m' }).orderReservationTtlMs, 2_700_000)
    assert.equal(loadConfig({ ORDER_RESERVATION_TTL: '0' }).orderReservationTtlMs, 0)
    assert.equal(loadConfig({}).maxUnpaidOrders, 10)
    assert.equal(loadConfig({ RETURN_WINDOW: '14d' }).returnWindowMs, 14 * 24 * 3600 * 1000)
    assert.equal(loadConfig({ RETURN_WINDOW: '90s' }).returnWindowMs, 90_000)
    assert.equal(loadConfig({ RETURN_WINDOW: '0' }).returnWindowMs, 0)
    assert.equal(loadConfig({ RETURN_WINDOW: '3650d' }).returnWindowMs, 3650 * 24 * 3600 * 1000)
    assert.equal(loadConfig({ MAX_UNPAID_ORDERS: '0' }).maxUnpaidOrders, 0)
    assert.equal(loadConfig({ MAX_UNPAID_ORDERS: '3' }).maxUnpaidOrders, 3)
    assert.equal(loadConfig({ BODY_LIMIT: '2048' }).bodyLimit, 2048)
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2)
    assert.equal(loadConfig({ TRUST_PROXY: '10.0.0.1, 10.0.0.0/8' }).trustProxy, '10.0.0.1, 10.0.0.0/8')
    assert.equal(loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525' }).smtpUrl, 'smtp://127.0.0.1:2525')
    assert.equal(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redisUrl, 'redis://127.0.0.1:6379')
    assert.equal(loadConfig({}).amqpUrl, undefined)
    assert.equal(loadConfig({ AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672' }).amqpUrl, 'amqp://guest:guest@127.0.0.1:5672')
    assert.equal(loadConfig({ AMQP_URL: 'amqps://mq.internal/orders' }).amqpUrl, 'amqps://mq.internal/orders')
    assert.equal(loadConfig({ AUTH_RATE_LIMIT: '5', LOGIN_FAILURE_LIMIT: '3' }).loginFailureLimit, 3)
  })

  it('reads the webhook settings: timeout 1s–60s, a schedule of 1–20 steps, private hosts off by default', () => {
    const defaults = loadConfig({})
    assert.equal(defaults.webhookTimeoutMs, 10_000)
    assert.deepEqual(defaults.webhookRetrySchedule, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000])
    assert.equal(defaults.webhookAllowPrivate, false)
    assert.equal(loadConfig({ WEBHOOK_TIMEOUT: '1s' }).webhookTimeoutMs, 1000)
    assert.equal(loadConfig({ WEBHOOK_TIMEOUT: '60s' }).webhookTimeoutMs, 60_000)
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '100ms, 200ms' }).webhookRetrySchedule, [100, 200])
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: Array(20).fill('1s').join(',') }).webhookRetrySchedule.length, 20)
    assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true)
    for (const [env, message] of [
      [{ WEBHOOK_TIMEOUT: '500ms' }, /^Invalid WEBHOOK_TIMEOUT="500ms": expected a duration from 1s to 60s$/],
      [{ WEBHOOK_TIMEOUT: '61s' }, /^Invalid WEBHOOK_TIMEOUT="61s": expected a positive duration up to 60s, such as 10s$/],
      [{ WEBHOOK_TIMEOUT: '10' }, /^Invalid WEBHOOK_TIMEOUT="10"/],
      [{ WEBHOOK_RETRY_SCHEDULE: '' }, undefined],
      [{ WEBHOOK_RETRY_SCHEDULE: '5s,,5m' }, /^Invalid WEBHOOK_RETRY_SCHEDULE="5s,,5m": expected 1 to 20 comma-separated positive durations up to 7d/],
      [{ WEBHOOK_RETRY_SCHEDULE: '0s' }, /^Invalid WEBHOOK_RETRY_SCHEDULE="0s"/],
      [{ WEBHOOK_RETRY_SCHEDULE: '8d' }, /^Invalid WEBHOOK_RETRY_SCHEDULE="8d"/],
      [{ WEBHOOK_RETRY_SCHEDULE: Array(21).fill('1s').join(',') }, /^Invalid WEBHOOK_RETRY_SCHEDULE=/],
      [{ WEBHOOK_ALLOW_PRIVATE: 'yes' }, /^Invalid WEBHOOK_ALLOW_PRIVATE="yes": expected one of true, false$/],
      [{ EVENT_RETENTION: '1h', WEBHOOK_RETRY_SCHEDULE: '30m,31m' }, /^EVENT_RETENTION=1h is shorter than WEBHOOK_RETRY_SCHEDULE's total length \(3660s\)/],
    ] as Array<[Record<string, string>, RegExp | undefined]>) {
      if (message === undefined) assert.doesNotThrow(() => loadConfig(env))
      else assert.throws(() => loadConfig(env), (error: Error) => error instanceof ConfigError && message.test(error.message), JSON.stringify(env))
    }
  })

  it('reads CORS_ORIGINS: off when unset, * for any origin, or a list of origins as browsers send them', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, [])
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '  ' }).corsOrigins, [])
    assert.equal(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, '*')
    assert.equal(loadConfig({ CORS_ORIGINS: ' * ' }).corsOrigins, '*')
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://shop.example' }).corsOrigins, ['https://shop.example'])
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://shop.example, http://localhost:3000,http://127.0.0.1:8080, http://[::1]:5173, https://shop.example' }).corsOrigins,
      ['https://shop.example', 'http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:5173'])
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://xn--bcher-kva.example:8443' }).corsOrigins, ['https://xn--bcher-kva.example:8443'])
    assert.ok(Object.isFrozen(loadConfig({ CORS_ORIGINS: 'https://shop.example' }).corsOrigins))
  })

  it('refuses a CORS_ORIGINS entry that is not an origin, naming the variable and the entry', () => {
    const refusals: Array<[string, RegExp]> = [
      ['https://shop.example/', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example\/": an origin is scheme:\/\/host\[:port\] as a browser sends it \(here "https:\/\/shop\.example"\): no path or trailing slash/],
      ['https://shop.example/app', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example\/app": an origin is/],
      ['https://shop.example?x=1', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example\?x=1"/],
      ['https://shop.example#top', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example#top"/],
      ['https://Shop.Example', /^Invalid CORS_ORIGINS entry "https:\/\/Shop\.Example": .*\(here "https:\/\/shop\.example"\)/],
      ['https://shop.example:443', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example:443": .*no default port/],
      ['https://bücher.example', /\(here "https:\/\/xn--bcher-kva\.example"\)/],
      ['shop.example', /^Invalid CORS_ORIGINS entry "shop\.example": not an http:\/\/ or https:\/\/ origin; expected \* or comma-separated origins such as https:\/\/shop\.example,http:\/\/localhost:3000$/],
      ['localhost:3000', /^Invalid CORS_ORIGINS entry "localhost:3000": not an http:\/\/ or https:\/\/ origin/],
      ['/app', /^Invalid CORS_ORIGINS entry "\/app": not an http/],
      ['null', /^Invalid CORS_ORIGINS entry "null": not an http/],
      ['file://', /^Invalid CORS_ORIGINS entry "file:\/\/": not an http/],
      ['https://*.shop.example', /^Invalid CORS_ORIGINS entry "https:\/\/\*\.shop\.example": not a host name or address/],
      ['https://shop.example.', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example\.": not a host name or address/],
      ['https://shop.example,*', /^Invalid CORS_ORIGINS entry "\*": \* stands alone/],
      ['https://shop.example,,http://localhost:3000', /^Invalid CORS_ORIGINS entry "": an empty entry/],
      ['https://shop.example,', /^Invalid CORS_ORIGINS entry "": an empty entry/],
      ['https://shop.example http://localhost:3000', /^Invalid CORS_ORIGINS entry "https:\/\/shop\.example http:\/\/localhost:3000"/],
    ]
    for (const [value, message] of refusals) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: value }), (error: unknown) =>
        error instanceof ConfigError && error.variable === 'CORS_ORIGINS' && message.test(error.message), value)
    }
    // Credentials are refused without repeating them (the message goes to the logs).
    assert.throws(() => loadConfig({ CORS_ORIGINS: 'https://app:S3cretPw@shop.example' }), (error: unknown) =>
      error instanceof ConfigError && /^Invalid CORS_ORIGINS: an entry holds credentials/.test(error.message) && !error.message.includes('S3cretPw'))
  })

  it('reads WORKERS: a count up to 64, or auto for one per CPU; more than 1 needs DATABASE_URL', () => {
    const DATABASE_URL = 'postgres://u@h:5432/db'
    assert.equal(loadConfig({ WORKERS: '1' }).workers, 1)
    assert.equal(loadConfig({ WORKERS: '4', DATABASE_URL }).workers, 4)
    assert.equal(loadConfig({ WORKERS: '64', DATABASE_URL }).workers, 64)
    assert.equal(loadConfig({ WORKERS: 'auto', DATABASE_URL }).workers, availableParallelism())
    if (availableParallelism() === 1) assert.equal(loadConfig({ WORKERS: 'auto' }).workers, 1)
  })

  it('refuses WORKERS > 1 on the embedded database, saying why', () => {
    const message = /^WORKERS > 1 needs DATABASE_URL: the embedded database serves one process/
    assert.throws(() => loadConfig({ WORKERS: '2' }), (error: unknown) => error instanceof ConfigError && message.test(error.message))
    assert.throws(() => loadConfig({ WORKERS: '2', DATA_DIR: 'memory' }), (error: unknown) => error instanceof ConfigError && message.test(error.message))
    if (availableParallelism() > 1) {
      assert.throws(() => loadConfig({ WORKERS: 'auto' }), (error: unknown) => error instanceof ConfigError && /WORKERS=auto is \d+ here/.test(error.message))
    }
  })

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /^Invalid PORT="abc": expected an integer from 0 to 65535$/],
    [{ PORT: '70000' }, /^Invalid PORT="70000"/],
    [{ DATABASE_POOL_SIZE: '0' }, /^Invalid DATABASE_POOL_SIZE="0"/],
    [{ DATABASE_PREPARED_STATEMENTS: 'yes' }, /^Invalid DATABASE_PREPARED_STATEMENTS="yes": expected one of true, false$/],
    [{ IDEMPOTENCY_TTL: '10' }, /^Invalid IDEMPOTENCY_TTL="10": expected a positive duration up to 365d, such as 10s, 90s, 15m, 24h, 7d$/],
    [{ IDEMPOTENCY_TTL: '366d' }, /^Invalid IDEMPOTENCY_TTL="366d": expected a positive duration up to 365d/],
    [{ IDEMPOTENCY_TTL: '0' }, /^Invalid IDEMPOTENCY_TTL="0": expected a positive duration/],
    [{ ORDER_RESERVATION_TTL: '60' }, /^Invalid ORDER_RESERVATION_TTL="60": expected 0 or a positive duration up to 365d, such as 10s, 90s, 15m, 24h, 7d$/],
    [{ ORDER_RESERVATION_TTL: '-5m' }, /^Invalid ORDER_RESERVATION_TTL="-5m": expected 0 or a positive duration/],
    [{ RETURN_WINDOW: '30' }, /^Invalid RETURN_WINDOW="30": expected 0 or a positive duration up to 3650d, such as 10s, 90s, 15m, 24h, 7d$/],
    [{ RETURN_WINDOW: '3651d' }, /^Invalid RETURN_WINDOW="3651d": expected 0 or a positive duration up to 3650d/],
    [{ RETURN_WINDOW: '-1d' }, /^Invalid RETURN_WINDOW="-1d": expected 0 or a positive duration/],
    [{ RETURN_WINDOW: '0s' }, /^Invalid RETURN_WINDOW="0s": expected 0 or a positive duration/],
    [{ EVENT_RETENTION: '0' }, /^Invalid EVENT_RETENTION="0": expected a positive duration up to 3650d/],
    [{ GIT_COMMIT: 'release-42' }, /^Invalid GIT_COMMIT="release-42": expected a commit id of 7 to 40 hexadecimal digits$/],
    [{ CURRENCY: 'usd' }, /^Invalid CURRENCY="usd": expected an ISO 4217 code/],
    [{ DATABASE_URL: 'mysql://x' }, /^Invalid DATABASE_URL="mysql:\/\/x": expected a URL starting with postgres:\/\/ or postgresql:\/\/$/],
    [{ ERROR_TYPE_BASE: 'not a url' }, /^Invalid ERROR_TYPE_BASE/],
    [{ LOG_LEVEL: 'loud' }, /^Invalid LOG_LEVEL="loud": expected one of fatal, error, warn, info, debug, trace, silent$/],
    [{ JWT_SECRET: 'short' }, /^Invalid JWT_SECRET="<hidden>": expected a secret of at least 32 bytes$/],
    [{ ADMIN_EMAIL: 'admin@example.com' }, /^Invalid ADMIN_PASSWORD/],
    [{ ADMIN_PASSWORD: 'long enough' }, /^Invalid ADMIN_EMAIL/],
    [{ ADMIN_EMAIL: 'nobody', ADMIN_PASSWORD: 'long enough' }, /^Invalid ADMIN_EMAIL="nobody"/],
    [{ ADMIN_EMAIL: 'a@b.c', ADMIN_PASSWORD: 'short' }, /^Invalid ADMIN_PASSWORD="<hidden>"/],
    [{ BODY_LIMIT: 'big' }, /^Invalid BODY_LIMIT="big"/],
    [{ SMTP_URL: 'http://mail' }, /^Invalid SMTP_URL="http:\/\/mail": expected a URL starting with smtp:\/\/ or smtps:\/\/$/],
    [{ REDIS_URL: 'localhost:6379' }, /^Invalid REDIS_URL/],
    [{ AMQP_URL: 'http://mq:5672' }, /^Invalid AMQP_URL="http:\/\/mq:5672": expected a URL starting with amqp:\/\/ or amqps:\/\/$/],
    [{ AMQP_URL: 'localhost:5672' }, /^Invalid AMQP_URL/],
    [{ AUTH_RATE_LIMIT: '0' }, /^Invalid AUTH_RATE_LIMIT="0"/],
    [{ LOGIN_FAILURE_LIMIT: 'many' }, /^Invalid LOGIN_FAILURE_LIMIT="many"/],
    [{ MAX_UNPAID_ORDERS: '-1' }, /^Invalid MAX_UNPAID_ORDERS="-1": expected an integer from 0 to 1000000$/],
    [{ MAX_UNPAID_ORDERS: 'ten' }, /^Invalid MAX_UNPAID_ORDERS="ten"/],
    [{ TRUST_PROXY: 'yes please' }, /^Invalid TRUST_PROXY="yes please"/],
    [{ WORKERS: '0', DATABASE_URL: 'postgres://h/db' }, /^Invalid WORKERS="0": expected auto or an integer from 1 to 64$/],
    [{ WORKERS: '65', DATABASE_URL: 'postgres://h/db' }, /^Invalid WORKERS="65"/],
    [{ WORKERS: '-2', DATABASE_URL: 'postgres://h/db' }, /^Invalid WORKERS="-2"/],
    [{ WORKERS: '1.5', DATABASE_URL: 'postgres://h/db' }, /^Invalid WORKERS="1.5"/],
    [{ WORKERS: 'all', DATABASE_URL: 'postgres://h/db' }, /^Invalid WORKERS="all"/],
  ]
  for (const [env, message] of bad) {
    it(`refuses ${JSON.stringify(env)} with a message naming the variable`, () => {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && message.test(error.message))
    })
  }

  it('never echoes a secret in its message, a password inside a URL setting included', () => {
    assert.throws(() => loadConfig({ JWT_SECRET: 'hunter2' }), (error: Error) => !error.message.includes('hunter2'))
    const urls: Array<[string, string]> = [
      ['DATABASE_URL', 'postgress://app:S3cretPw@db.internal/orders'],
      ['SMTP_URL', 'smtpx://mailer:MailPw@mail.internal:587'],
      ['REDIS_URL', 'redi://:RedisPw@cache.internal:6379'],
      ['AMQP_URL', 'amqpx://app:MqPw@mq.internal:5672'],
    ]
    for (const [name, value] of urls) {
      assert.throws(() => loadConfig({ [name]: value }), (error: Error) =>
        error.message.startsWith(`Invalid ${name}="`) && error.message.includes(':<hidden>@') && !/S3cretPw|MailPw|RedisPw|MqPw/.test(error.message))
    }
  })
})

describe('configuration: OpenID sign-in', () => {
  const google = {
    PUBLIC_URL: 'https://shop.example.com/',
    OIDC_GOOGLE_ISSUER: 'https://accounts.google.com',
    OIDC_GOOGLE_CLIENT_ID: 'client-1',
    OIDC_GOOGLE_CLIENT_SECRET: 's3cret',
  }
  const refusal = (env: Record<string, string>, variable: string) =>
    assert.throws(() => loadConfig(env), (error: unknown) =>
      error instanceof ConfigError && error.variable === variable && error.message.includes(variable))

  it('has no providers, no PUBLIC_URL and an empty allowlist by default', () => {
    const config = loadConfig({})
    assert.deepEqual([config.oidcProviders, config.publicUrl, config.oidcRedirectAllowlist], [[], undefined, []])
  })

  it('reads a provider group, its id lower-cased with - for _, and the allowlist', () => {
    const config = loadConfig({
      ...google,
      OIDC_MY_ENTRA_ISSUER: 'http://127.0.0.1:9000/realms/x',
      OIDC_MY_ENTRA_CLIENT_ID: 'c2',
      OIDC_MY_ENTRA_CLIENT_SECRET: 's2',
      OIDC_REDIRECT_ALLOWLIST: 'https://app.example.com/cb, http://localhost:5173',
    })
    assert.deepEqual(config.oidcProviders.map(p => ({ ...p })), [
      { id: 'google', issuer: 'https://accounts.google.com', clientId: 'client-1', clientSecret: 's3cret' },
      { id: 'my-entra', issuer: 'http://127.0.0.1:9000/realms/x', clientId: 'c2', clientSecret: 's2' },
    ].sort((a, b) => a.id.localeCompare(b.id)))
    assert.equal(config.publicUrl, 'https://shop.example.com')
    assert.deepEqual(config.oidcRedirectAllowlist, ['https://app.example.com/cb', 'http://localhost:5173'])
  })

  it('stops on an incomplete group, naming the missing variable', () => {
    refusal({ PUBLIC_URL: 'https://x.example', OIDC_GOOGLE_ISSUER: 'https://accounts.google.com', OIDC_GOOGLE_CLIENT_ID: 'c' }, 'OIDC_GOOGLE_CLIENT_SECRET')
    refusal({ PUBLIC_URL: 'https://x.example', OIDC_GOOGLE_CLIENT_SECRET: 's' }, 'OIDC_GOOGLE_ISSUER')
  })

  it('needs PUBLIC_URL once any OIDC_* is set', () => {
    refusal({ ...google, PUBLIC_URL: '' }, 'PUBLIC_URL')
    refusal({ OIDC_REDIRECT_ALLOWLIST: 'https://app.example.com' }, 'PUBLIC_URL')
    refusal({ ...google, PUBLIC_URL: 'ftp://x.example' }, 'PUBLIC_URL')
  })

  it('allows an http:// issuer only on localhost and 127.0.0.0/8', () => {
    assert.equal(loadConfig({ ...google, OIDC_GOOGLE_ISSUER: 'http://localhost:8080' }).oidcProviders[0]!.issuer, 'http://localhost:8080')
    assert.equal(loadConfig({ ...google, OIDC_GOOGLE_ISSUER: 'http://127.1.2.3' }).oidcProviders[0]!.issuer, 'http://127.1.2.3')
    refusal({ ...google, OIDC_GOOGLE_ISSUER: 'http://accounts.example.com' }, 'OIDC_GOOGLE_ISSUER')
    refusal({ ...google, OIDC_GOOGLE_ISSUER: 'http://10.0.0.1' }, 'OIDC_GOOGLE_ISSUER')
    refusal({ ...google, OIDC_GOOGLE_ISSUER: 'not a url' }, 'OIDC_GOOGLE_ISSUER')
    refusal({ ...google, OIDC_GOOGLE_ISSUER: 'https://accounts.google.com?x=1' }, 'OIDC_GOOGLE_ISSUER')
  })

  it('refuses an unknown OIDC_ variable and a bad allowlist entry', () => {
    refusal({ ...google, OIDC_GOOGLE_SCOPE: 'x' }, 'OIDC_GOOGLE_SCOPE')
    refusal({ ...google, OIDC_REDIRECT_ALLOWLIST: 'https://ok.example, /relative' }, 'OIDC_REDIRECT_ALLOWLIST')
    refusal({ ...google, OIDC_REDIRECT_ALLOWLIST: 'https://ok.example/cb?x=1' }, 'OIDC_REDIRECT_ALLOWLIST')
  })
})
