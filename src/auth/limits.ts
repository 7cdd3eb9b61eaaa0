import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from '../http/errors.js'

/** Fixed-window counters: how many hits a key has had in its current window, and when it ends. */
export interface CounterStore {
  increment (key: string, windowMs: number): Promise<Counter>
  peek (key: string): Promise<Counter>
  reset (key: string): Promise<void>
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

  async peek (key: string): Promise<Counter> {
    const now = Date.now()
    const counter = this.#counters.get(key)
    return counter && counter.resetAt > now ? { count: counter.count, resetInMs: counter.resetAt - now } : { count: 0, resetInMs: 0 }
  }

  async reset (key: string): Promise<void> {
    this.#counters.delete(key)
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

/**
 * Counters in Redis, shared by every instance. If Redis cannot be reached the limits fail open
 * (requests go through, a warning is logged): an outage of the limiter must not lock everyone out.
 */
export class RedisCounterStore implements CounterStore {
  readonly #redis: Redis

  constructor (url: string, private readonly log: FastifyBaseLogger, private readonly prefix = 'order-service:') {
    this.#redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    this.#redis.on('error', (error) => this.log.warn({ err: error }, 'redis unavailable: rate limits are not enforced'))
  }

  async increment (key: string, windowMs: number): Promise<Counter> {
    try {
      const [count, ttl] = await this.#redis.eval(INCREMENT, 1, this.prefix + key, windowMs) as [number, number]
      return { count, resetInMs: Math.max(ttl, 0) }
    } catch {
      return { count: 0, resetInMs: 0 }
    }
  }

  async peek (key: string): Promise<Counter> {
    try {
      const [count, ttl] = await this.#redis.multi().get(this.prefix + key).pttl(this.prefix + key).exec() ?? []
      return { count: Number(count?.[1] ?? 0), resetInMs: Math.max(Number(ttl?.[1] ?? 0), 0) }
    } catch {
      return { count: 0, resetInMs: 0 }
    }
  }

  async reset (key: string): Promise<void> {
    await this.#redis.del(this.prefix + key).catch(() => {})
  }

  async close (): Promise<void> {
    this.#redis.disconnect()
  }
}

export function createCounterStore (config: Pick<Config, 'redisUrl'>, log: FastifyBaseLogger): CounterStore {
  return config.redisUrl ? new RedisCounterStore(config.redisUrl, log) : new MemoryCounterStore()
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

function tooMany (detail: string, resetInMs: number): ApiError {
  return new ApiError('TOO_MANY_REQUESTS', detail, { headers: { 'Retry-After': String(seconds(resetInMs)) } })
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
 * `authRateLimited`; answers carry RateLimit-* headers, and the one over the limit is 429.
 */
export function registerAuthRateLimit (app: FastifyInstance, store: CounterStore, limit: number): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404 || !request.routeOptions.config.authRateLimited) return
    const { count, resetInMs } = await store.increment(`auth-rate:${request.ip}`, MINUTE)
    const headers = {
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, limit - count)),
      'RateLimit-Reset': String(seconds(resetInMs)),
    }
    if (count > limit) {
      throw new ApiError('TOO_MANY_REQUESTS', 'Too many requests from this address; retry after the time in Retry-After.', {
        headers: { ...headers, 'Retry-After': String(seconds(resetInMs)) },
      })
    }
    reply.headers(headers)
  })
}

const LOGIN_WINDOW_MS = 15 * MINUTE

/**
 * LOGIN_FAILURE_LIMIT failed logins per email (lower-cased, whether or not an account has it) per
 * 15 minutes. Once reached, every login for that email is 429 until the window ends, even with
 * the right password; a successful login clears the count.
 */
export class LoginFailures {
  constructor (private readonly store: CounterStore, private readonly limit: number) {}

  async assertNotLocked (email: string): Promise<void> {
    const { count, resetInMs } = await this.store.peek(this.#key(email))
    if (count >= this.limit) throw tooMany('Too many failed logins for this email; retry after the time in Retry-After.', resetInMs)
  }

  async record (email: string): Promise<void> {
    await this.store.increment(this.#key(email), LOGIN_WINDOW_MS)
  }

  async clear (email: string): Promise<void> {
    await this.store.reset(this.#key(email))
  }

  #key (email: string): string {
    return `login-failures:${email.trim().toLowerCase()}`
  }
}
