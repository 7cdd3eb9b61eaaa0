import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from '../errors.js'

/** Fixed-window counters: how many hits a key has had in its current window, and when it ends. */
export interface CounterStore {
  /** Counts a hit; null when nothing could be counted (the store is down: limits fail open). */
  increment (key: string, windowMs: number): Promise<Counter | null>
  reset (key: string): Promise<void>
  /** Whether the backing store answers (memory: always); for the health check. */
  ping (): Promise<boolean>
  close (): Promise<void>
}

export interface Counter {
  count: number
  resetInMs: number
}

/** One process's counters; entries are dropped when their window ends. */
export class MemoryCounterStore implements CounterStore {
  readonly #counters = new Map<string, { count: number, resetAt: number }>()
  readonly #sweeper = setInterval(() => {
    const now = Date.now()
    for (const [key, counter] of this.#counters) if (counter.resetAt <= now) this.#counters.delete(key)
  }, 60_000).unref()

  async increment (key: string, windowMs: number): Promise<Counter> {
    const now = Date.now()
    let counter = this.#counters.get(key)
    if (!counter || counter.resetAt <= now) {
      counter = { count: 0, resetAt: now + windowMs }
      this.#counters.set(key, counter)
    }
    counter.count++
    return { count: counter.count, resetInMs: counter.resetAt - now }
  }

  async reset (key: string): Promise<void> {
    this.#counters.delete(key)
  }

  async ping (): Promise<boolean> {
    return true
  }

  async close (): Promise<void> {
    clearInterval(this.#sweeper)
  }
}

// INCR and start the window on the first hit, atomically; answers [count, ms left].
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('PTTL', KEYS[1])}`

/** Our keys in a Redis that other applications may share. */
const KEY_PREFIX = 'order-service:'

type CountingRedis = Redis & { countHit (key: string, windowMs: number): Promise<[number, number]> }

/**
 * Counters in Redis, shared by every instance. If Redis cannot be reached the limits fail open
 * (requests go through, a warning is logged once per outage): an outage of the limiter must not
 * lock everyone out. ioredis keeps reconnecting in the background.
 */
export class RedisCounterStore implements CounterStore {
  readonly #redis: CountingRedis
  #down = false

  constructor (url: string, private readonly log: FastifyBaseLogger) {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    // Sent as EVALSHA, falling back to EVAL once per connection.
    redis.defineCommand('countHit', { numberOfKeys: 1, lua: INCREMENT })
    redis.on('error', (error) => {
      if (this.#down) return
      this.#down = true
      this.log.warn({ err: error }, 'redis unavailable: rate limits are not enforced until it is back')
    })
    redis.on('ready', () => {
      if (this.#down) this.log.info('redis reachable again: rate limits are enforced')
      this.#down = false
    })
    this.#redis = redis as CountingRedis
  }

  /** Connects, so that limits hold from the first request; a Redis that is down does not stop start-up. */
  async connect (): Promise<void> {
    await this.#redis.connect().catch(() => {})
  }

  async increment (key: string, windowMs: number): Promise<Counter | null> {
    try {
      const [count, ttl] = await this.#redis.countHit(KEY_PREFIX + key, windowMs)
      return { count, resetInMs: Math.max(ttl, 0) }
    } catch {
      return null
    }
  }

  async reset (key: string): Promise<void> {
    await this.#redis.del(KEY_PREFIX + key).catch(() => {})
  }

  async ping (): Promise<boolean> {
    return this.#redis.ping().then(answer => answer === 'PONG', () => false)
  }

  async close (): Promise<void> {
    this.#redis.disconnect()
  }
}

/** Redis when REDIS_URL is set (every instance shares the counters), otherwise process memory. */
export async function createCounterStore (config: Pick<Config, 'redisUrl'>, log: FastifyBaseLogger): Promise<CounterStore> {
  if (!config.redisUrl) return new MemoryCounterStore()
  const store = new RedisCounterStore(config.redisUrl, log)
  await store.connect()
  return store
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

/** The IETF RateLimit fields of a counter against `limit`. */
function rateLimitHeaders (limit: number, { count, resetInMs }: Counter): Record<string, string> {
  return {
    'RateLimit-Limit': String(limit),
    'RateLimit-Remaining': String(Math.max(0, limit - count)),
    'RateLimit-Reset': String(seconds(resetInMs)),
  }
}

/** 429 for a counter over its limit, with Retry-After and the RateLimit fields of that same limit. */
function tooMany (detail: string, limit: number, counter: Counter): ApiError {
  return new ApiError('TOO_MANY_REQUESTS', detail, {
    headers: { ...rateLimitHeaders(limit, counter), 'Retry-After': String(seconds(counter.resetInMs)) },
  })
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Counts against AUTH_RATE_LIMIT per client address (auth, register, password reset). */
    authRateLimited?: boolean
  }
}

const MINUTE = 60_000

/**
 * AUTH_RATE_LIMIT requests per minute per client address on the routes that declare
 * `authRateLimited`; answers carry RateLimit-* headers (none while the store is down and nothing
 * is counted), and the one over the limit is 429.
 */
export function registerAuthRateLimit (app: FastifyInstance, store: CounterStore, limit: number): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404 || !request.routeOptions.config.authRateLimited) return
    const counter = await store.increment(`auth-rate:${request.ip}`, MINUTE)
    if (!counter) return // not counted: no limit to report
    if (counter.count > limit) throw tooMany('Too many requests from this address; retry after the time in Retry-After.', limit, counter)
    reply.headers(rateLimitHeaders(limit, counter))
  })
}

const LOGIN_WINDOW_MS = 15 * MINUTE

/**
 * LOGIN_FAILURE_LIMIT failed logins per email (lower-cased, whether or not an account has it) per
 * 15 minutes. Once reached, every login for that email is 429 until the window ends, even with
 * the right password; a successful login clears the count.
 *
 * The attempt is counted atomically *before* the password is checked, and a success takes it back
 * (by clearing the count). Counting only after a failed check would let parallel guesses all pass
 * the check of the counter while their passwords are being verified.
 */
export class LoginFailures {
  constructor (private readonly store: CounterStore, private readonly limit: number) {}

  /** Counts an attempt for `email`; 429 when the attempts before it already used up the limit. */
  async begin (email: string): Promise<void> {
    const counter = await this.store.increment(this.#key(email), LOGIN_WINDOW_MS)
    if (counter && counter.count > this.limit) {
      throw tooMany('Too many failed logins for this email; retry after the time in Retry-After.', this.limit, counter)
    }
  }

  /** The attempt succeeded: earlier failures no longer count. */
  async succeeded (email: string): Promise<void> {
    await this.store.reset(this.#key(email))
  }

  #key (email: string): string {
    return `login-failures:${email.trim().toLowerCase()}`
  }
}
