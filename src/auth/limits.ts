import { createHmac } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from '../errors.js'

/** Fixed-window counters: how many hits a key has had in its current window, and when it ends. */
export interface CounterStore {
  /** Counts a hit; null when nothing could be counted (the store is down: limits fail open). */
  increment (key: string, windowMs: number): Promise<Counter | null>
  /**
   * Counts a hit on every budget at once, atomically, unless one of them has already reached its
   * limit: then nothing is counted (`taken: false`). `counters` are in the budgets' order (a budget
   * with no hits yet: count 0). Null when the store is down (limits fail open).
   */
  take (budgets: readonly Budget[]): Promise<Taken | null>
  reset (...keys: string[]): Promise<void>
  /** Takes one hit back from a counter in its window (never below 0); the window's end stays. */
  giveBack (key: string): Promise<void>
  /** Sets a flag that lapses after `ttlMs` (set again: its time starts again). */
  mark (key: string, ttlMs: number): Promise<void>
  /** Whether a flag is set; false when the store is down. */
  isMarked (key: string): Promise<boolean>
  /** Whether the backing store answers (memory: always); for the health check. */
  ping (): Promise<boolean>
  close (): Promise<void>
}

export interface Counter {
  count: number
  resetInMs: number
}

export interface Budget {
  key: string
  limit: number
  windowMs: number
}

export interface Taken {
  taken: boolean
  counters: Counter[]
}

/** One process's counters; entries are dropped when their window ends. */
export class MemoryCounterStore implements CounterStore {
  readonly #counters = new Map<string, { count: number, resetAt: number }>()
  /** Flags, by key: when each lapses. */
  readonly #marks = new Map<string, number>()
  readonly #sweeper = setInterval(() => {
    const now = Date.now()
    for (const [key, counter] of this.#counters) if (counter.resetAt <= now) this.#counters.delete(key)
    for (const [key, lapsesAt] of this.#marks) if (lapsesAt <= now) this.#marks.delete(key)
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

  async take (budgets: readonly Budget[]): Promise<Taken> {
    const now = Date.now()
    const current = budgets.map(({ key }) => {
      const counter = this.#counters.get(key)
      return counter && counter.resetAt > now ? { count: counter.count, resetInMs: counter.resetAt - now } : { count: 0, resetInMs: 0 }
    })
    if (budgets.some((budget, i) => current[i]!.count >= budget.limit)) return { taken: false, counters: current }
    return { taken: true, counters: await Promise.all(budgets.map(budget => this.increment(budget.key, budget.windowMs))) }
  }

  async reset (...keys: string[]): Promise<void> {
    for (const key of keys) this.#counters.delete(key)
  }

  async giveBack (key: string): Promise<void> {
    const counter = this.#counters.get(key)
    if (counter && counter.resetAt > Date.now() && counter.count > 0) counter.count--
  }

  async mark (key: string, ttlMs: number): Promise<void> {
    this.#marks.set(key, Date.now() + ttlMs)
  }

  async isMarked (key: string): Promise<boolean> {
    return (this.#marks.get(key) ?? 0) > Date.now()
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

// Counts a hit on every key unless one of them is at its limit (ARGV: limit, window ms, per key);
// answers [1 if counted else 0, then count and ms left for each key].
const TAKE = `
local answer = {1}
for i = 1, #KEYS do
  if tonumber(redis.call('GET', KEYS[i]) or '0') >= tonumber(ARGV[2 * i - 1]) then answer[1] = 0 end
end
for i = 1, #KEYS do
  local count
  if answer[1] == 1 then
    count = redis.call('INCR', KEYS[i])
    if count == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[2 * i]) end
  else
    count = tonumber(redis.call('GET', KEYS[i]) or '0')
  end
  table.insert(answer, count)
  table.insert(answer, redis.call('PTTL', KEYS[i]))
end
return answer`

// DECR a counter that is above 0 (its expiry stays); a counter that has lapsed is left alone.
const GIVE_BACK = `
if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 0`

/** Our keys in a Redis that other applications may share. */
const KEY_PREFIX = 'order-service:'

type CountingRedis = Redis & {
  countHit (key: string, windowMs: number): Promise<[number, number]>
  takeBudgets (keyCount: number, ...keysThenArgs: Array<string | number>): Promise<number[]>
  giveBack (key: string): Promise<number>
}

/**
 * Counters in Redis, shared by every instance. If Redis cannot be reached the limits fail open
 * (requests go through, a warning is logged once per outage): an outage of the limiter must not
 * lock everyone out. ioredis keeps reconnecting in the background.
 */
export class RedisCounterStore implements CounterStore {
  readonly #redis: CountingRedis
  #down = false

  /** `RedisClient`: ioredis's Redis, which createCounterStore loads only when REDIS_URL is set. */
  constructor (RedisClient: typeof Redis, url: string, private readonly log: FastifyBaseLogger) {
    const redis = new RedisClient(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    // Sent as EVALSHA, falling back to EVAL once per connection.
    redis.defineCommand('countHit', { numberOfKeys: 1, lua: INCREMENT })
    redis.defineCommand('takeBudgets', { lua: TAKE }) // the number of keys comes first
    redis.defineCommand('giveBack', { numberOfKeys: 1, lua: GIVE_BACK })
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

  async take (budgets: readonly Budget[]): Promise<Taken | null> {
    try {
      const answer = await this.#redis.takeBudgets(budgets.length, ...budgets.map(budget => KEY_PREFIX + budget.key),
        ...budgets.flatMap(budget => [budget.limit, budget.windowMs]))
      return {
        taken: answer[0] === 1,
        counters: budgets.map((_, i) => ({ count: answer[1 + 2 * i]!, resetInMs: Math.max(answer[2 + 2 * i]!, 0) })),
      }
    } catch {
      return null
    }
  }

  async reset (...keys: string[]): Promise<void> {
    await this.#redis.del(...keys.map(key => KEY_PREFIX + key)).catch(() => {})
  }

  async giveBack (key: string): Promise<void> {
    await this.#redis.giveBack(KEY_PREFIX + key).catch(() => {})
  }

  async mark (key: string, ttlMs: number): Promise<void> {
    await this.#redis.set(KEY_PREFIX + key, '1', 'PX', ttlMs).catch(() => {})
  }

  async isMarked (key: string): Promise<boolean> {
    return this.#redis.exists(KEY_PREFIX + key).then(found => found === 1, () => false)
  }

  async ping (): Promise<boolean> {
    return this.#redis.ping().then(answer => answer === 'PONG', () => false)
  }

  async close (): Promise<void> {
    this.#redis.disconnect()
  }
}

/**
 * Redis when REDIS_URL is set (every instance shares the counters), otherwise process memory.
 * ioredis is loaded only then: without REDIS_URL it would cost ~2 MB of heap for nothing (issue 22).
 */
export async function createCounterStore (config: Pick<Config, 'redisUrl'>, log: FastifyBaseLogger): Promise<CounterStore> {
  if (!config.redisUrl) return new MemoryCounterStore()
  const { Redis } = await import('ioredis')
  const store = new RedisCounterStore(Redis, config.redisUrl, log)
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
/** The wider budget of one email across every address, as a multiple of LOGIN_FAILURE_LIMIT. */
export const EMAIL_BUDGET_FACTOR = 10
/** How long a password login makes its client address "known" for the email (CONTRACT §18). */
export const KNOWN_ADDRESS_MS = 30 * 24 * 60 * MINUTE
const LOGIN_LOCKED = 'Too many failed logins for this email; retry after the time in Retry-After.'

/**
 * Failed logins, in two budgets of 15 minutes (CONTRACT §11 Credentials, §18 Distributed lockout):
 * - per (lower-cased email, client address), LOGIN_FAILURE_LIMIT: a guesser locks only their own
 *   address out, never the member at theirs;
 * - per email across all addresses, 10 × LOGIN_FAILURE_LIMIT: slows guessing spread over many
 *   addresses; once spent, every address gets 429 for that email, except the addresses the email
 *   logged in from with its password in the last 30 days ("known"): there only the pair's budget
 *   applies (and attempts there do not count toward the email's), so an attacker with many
 *   addresses cannot lock the member out of the places they normally sign in from.
 * Counted whether or not an account has the email. While a budget that applies is spent the attempt
 * is 429, even with the right password, and counts toward neither; both 429s look the same (one
 * detail, the pair's RateLimit-Limit, Remaining 0, and Reset = Retry-After = when this caller may try
 * again), so a 429 tells neither which budget was spent nor whether the account exists. A password
 * login clears the pair only (the email's budget runs out with its window) and makes the address
 * known; other proofs of the password or of the mailbox (`succeeded`) clear both.
 *
 * A known address is stored as a flag whose key is an HMAC of the email and the address (keyed with
 * a key derived from the service's signing key): the store holds no list of a member's addresses,
 * and a key cannot be tried against guessed addresses without the secret.
 *
 * The attempt is counted atomically *before* the password is checked, and a success takes it back
 * (by clearing the counts). Counting only after a failed check would let parallel guesses all pass
 * the check of the counter while their passwords are being verified.
 */
export class LoginFailures {
  readonly #knownKey: Buffer

  /** `secret`: the service's signing key, from which the known-address key is derived. */
  constructor (private readonly store: CounterStore, private readonly limit: number, secret: Uint8Array) {
    this.#knownKey = createHmac('sha256', secret).update('order-service known login address').digest()
  }

  /**
   * Counts an attempt for `email` from `address`; 429 when a budget that applies is already spent
   * (at a known address, the pair's only).
   */
  async begin (email: string, address: string): Promise<void> {
    const [pair, wide] = this.#budgets(email, address)
    const budgets = await this.store.isMarked(this.#known(email, address)) ? [pair] : [pair, wide]
    const answer = await this.store.take(budgets)
    if (!answer || answer.taken) return
    const retryInMs = Math.max(...answer.counters.filter((counter, i) => counter.count >= budgets[i]!.limit).map(counter => counter.resetInMs))
    throw tooMany(LOGIN_LOCKED, this.limit, { count: this.limit, resetInMs: retryInMs })
  }

  /**
   * A password login succeeded: the pair's failures no longer count, and the address is known for
   * the email for 30 days from now. The email's wider budget keeps its failures until its window
   * ends; only this attempt, counted there by `begin` if the address was not known yet, is taken back.
   */
  async loggedIn (email: string, address: string): Promise<void> {
    const [pair, wide] = this.#budgets(email, address)
    const known = this.#known(email, address)
    if (!(await this.store.isMarked(known))) await this.store.giveBack(wide.key)
    await Promise.all([this.store.reset(pair.key), this.store.mark(known, KNOWN_ADDRESS_MS)])
  }

  /** The member proved the password or the mailbox otherwise (change, reset): earlier failures no longer count. */
  async succeeded (email: string, address: string): Promise<void> {
    await this.store.reset(...this.#budgets(email, address).map(budget => budget.key))
  }

  #known (email: string, address: string): string {
    const mac = createHmac('sha256', this.#knownKey).update(JSON.stringify([normalise(email), address])).digest('base64url')
    return `login-known:${mac}`
  }

  #budgets (email: string, address: string): [Budget, Budget] {
    const normalised = normalise(email)
    return [
      { key: `login-failures:${JSON.stringify([normalised, address])}`, limit: this.limit, windowMs: LOGIN_WINDOW_MS },
      { key: `login-failures:${JSON.stringify([normalised])}`, limit: EMAIL_BUDGET_FACTOR * this.limit, windowMs: LOGIN_WINDOW_MS },
    ]
  }
}

const normalise = (email: string) => email.trim().toLowerCase()
