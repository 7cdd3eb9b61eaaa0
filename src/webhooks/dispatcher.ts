import { readFileSync } from 'node:fs'
import { setMaxListeners } from 'node:events'
import { isIP } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Agent, request as undiciRequest } from 'undici'
import type { Config } from '../config.js'
import type { Db } from '../db/schema.js'
import { Event } from '../events/schemas.js'
import { toEvent } from '../events/service.js'
import { webhookDeliveries, webhookDeliverySeconds } from '../ops/metrics.js'
import { guardedLookup, hostOf, isPublicAddress } from './addresses.js'
import {
  claimDueDeliveries, hasActiveEndpoint, recordAttempts, releaseClaim, updateEndpoint,
  type AttemptOutcome, type ClaimedDelivery, type RecordedAttempt,
} from './repository.js'
import { signatureHeader } from './signing.js'

/*
 * The webhook dispatcher (CONTRACT §12): claims due deliveries, POSTs each event, records the outcome.
 * Woken in-process after each change commits (`wake`), when a retry falls due, and by a slow poll,
 * which is also how an instance finds deliveries that another instance wrote and did not send (it
 * stopped, or had no room). There is no NOTIFY: PostgreSQL makes the commits of notifying
 * transactions wait for one another, and every create would have been one (migration 2026-11-24-09).
 */

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
const USER_AGENT = `order-service/${VERSION}`
/** Attempts in flight at once per instance, and to one endpoint (a slow endpoint leaves room for the others). */
const MAX_IN_FLIGHT = 256
/** Attempts whose exchange is over but whose outcome is not yet recorded count too, up to this many in all. */
const MAX_UNFINISHED = 4 * MAX_IN_FLIGHT
const MAX_IN_FLIGHT_PER_ENDPOINT = 64
/** Rows one claim takes at most: claims follow one another while attempts are in flight. */
const MAX_CLAIM = 64
/**
 * A wake-up looks for due deliveries after this long, so that the wake-ups of many changes (under
 * load, hundreds a second) share one claim; well within the 1 s an event may take to be attempted.
 */
const GATHER_MS = 20
/** Connections the dispatcher's own pool holds on PostgreSQL: one claims while the other records. */
export const DISPATCHER_CONNECTIONS = 2
/**
 * The dispatcher's own connections plan each statement for its parameters (a custom plan) rather
 * than reusing the generic plan that a prepared statement settles on after five runs. A generic
 * plan is kept until the next ANALYZE of a table it reads, and one made while there were few
 * deliveries scans the table once per due delivery to check for an earlier pending event of its
 * order: with 2,700 pending, a claim took 1.8 s and the backlog grew for as long as the load lasted
 * (bench/RESULTS.md, "Events"). Planning a claim costs far less than that, and a claim serves up to
 * 64 deliveries.
 */
export function dispatcherDatabaseUrl (databaseUrl: string): string {
  const url = new URL(databaseUrl)
  const options = url.searchParams.get('options')
  url.searchParams.set('options', `${options ? `${options} ` : ''}-c plan_cache_mode=force_custom_plan`)
  return url.toString()
}
/** Outcomes recorded by one statement at most. */
const MAX_RECORD_BATCH = 500
/** Of a receiver's answer, this much is read; this much of an error is kept. */
const MAX_ANSWER_BYTES = 4096
const MAX_ERROR_CHARS = 200

export interface Dispatcher {
  /**
   * A change has just committed: look for due deliveries now, unless no endpoint was active when
   * last seen (then the change wrote no delivery, and claiming would cost the database for nothing).
   */
  wake (): void
  /**
   * An endpoint is active, as a request here has just shown (it was registered or enabled, or one
   * of its deliveries retried): look for due deliveries now, and after every change from now on.
   */
  endpointActive (): void
  /** Stops claiming; in-flight attempts are aborted and their claims given back. */
  close (): Promise<void>
}

export interface DispatcherOptions {
  db: Db
  config: Pick<Config, 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookAllowPrivate'>
  log: FastifyBaseLogger
  /** The fallback poll (default 1 s). */
  pollMs?: number
}

/** The delay before the attempt after `failures` failed ones on the current schedule, or undefined when it is used up. */
export function retryDelay (schedule: readonly number[], failures: number, retryAfterMs: number | undefined, random = Math.random): number | undefined {
  const step = schedule[failures - 1]
  if (step === undefined) return undefined
  const base = retryAfterMs !== undefined ? Math.min(retryAfterMs, step) : step
  return Math.round(base * (1 + random() * 0.1))
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date. */
function parseRetryAfter (value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined) return undefined
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000
  const date = Date.parse(text)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** Control characters (Unicode Cc) of a receiver's answer become spaces in `lastError`. */
// eslint-disable-next-line no-control-regex -- control characters are what is matched
const CONTROL = /[\u0000-\u001F\u007F-\u009F]+/g
const clip = (text: string) => text.replace(CONTROL, ' ').trim().slice(0, MAX_ERROR_CHARS)

interface SchemaNode { properties?: Record<string, SchemaNode>, items?: SchemaNode, anyOf?: SchemaNode[] }

/**
 * `value` with its object keys in the order of `schema`'s properties: the body is then byte for
 * byte what the feed answers for the event (the snapshot's JSON keeps the database's key order).
 */
function inSchemaOrder (schema: SchemaNode, value: unknown): unknown {
  if (Array.isArray(value)) return schema.items ? value.map(item => inSchemaOrder(schema.items!, item)) : value
  if (value === null || typeof value !== 'object') return value
  const branch = schema.properties ? schema : schema.anyOf?.find(option => option.properties)
  if (!branch?.properties) return value
  const source = value as Record<string, unknown>
  const ordered: Record<string, unknown> = {}
  for (const [key, sub] of Object.entries(branch.properties)) if (key in source) ordered[key] = inSchemaOrder(sub, source[key])
  for (const key of Object.keys(source)) if (!(key in ordered)) ordered[key] = source[key]
  return ordered
}

export function startDispatcher (options: DispatcherOptions): Dispatcher {
  const { db, config, log } = options
  const timeoutMs = config.webhookTimeoutMs
  const claimMs = timeoutMs + 30_000
  const agents = new Map<string, Agent>()
  /** Attempts not yet finished, their outcome's record included (close waits for them). */
  const inFlight = new Set<Promise<void>>()
  /** HTTP exchanges in flight: what MAX_IN_FLIGHT bounds. */
  let sending = 0
  /** HTTP exchanges in flight by endpoint id. */
  const busy = new Map<number, number>()
  const stopping = new AbortController()
  let stopped = false
  let pumping = false
  let again = false
  let soonest: NodeJS.Timeout | undefined
  let soonestAt = Infinity

  /*
   * Outcomes are recorded in groups: one statement at a time records every outcome that came in
   * while the previous one ran (the first of a group waits GATHER_MS for company). Under load a statement records dozens of attempts, and the
   * deliveries do not wait on one round trip each behind the API's own statements.
   */
  const unrecorded: Array<RecordedAttempt & { done: (error?: unknown) => void }> = []
  let recording = false
  function record (delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      unrecorded.push({ delivery, outcome, done: error => error === undefined ? resolve() : reject(error) })
      if (!recording) {
        // The first outcome waits a moment for others to share its statement.
        recording = true
        setTimeout(() => { flushRecords().catch(() => {}) }, GATHER_MS)
      }
    })
  }
  async function flushRecords (): Promise<void> {
    try {
      while (unrecorded.length > 0) {
        const group = unrecorded.splice(0, MAX_RECORD_BATCH)
        try {
          await recordAttempts(db, group)
          for (const attempt of group) attempt.done()
        } catch (error) {
          for (const attempt of group) attempt.done(error)
        }
      }
    } finally {
      recording = false
    }
  }

  /**
   * The HTTP client, loaded with the first claim that finds deliveries: a service that has no
   * endpoints does not keep undici's modules in memory (issue 22, RSS).
   */
  let undici: { Agent: typeof Agent, request: typeof undiciRequest } | undefined

  /** One connection pool per endpoint origin, resolving through the address guard. */
  function agentFor (origin: string): Agent {
    let agent = agents.get(origin)
    if (!agent) {
      agent = new undici!.Agent({
        connect: { timeout: timeoutMs, ...(config.webhookAllowPrivate ? {} : { lookup: guardedLookup }) },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        keepAliveTimeout: 4_000,
      })
      agents.set(origin, agent)
    }
    return agent
  }

  /** Wakes the pump again at `at` (epoch ms) when that is sooner than the poll. */
  function wakeAt (at: number): void {
    if (stopped || at >= soonestAt) return
    if (soonest) clearTimeout(soonest)
    soonestAt = at
    soonest = setTimeout(() => { soonestAt = Infinity; soonest = undefined; claimSoon() }, Math.max(0, at - Date.now()))
    soonest.unref()
  }

  /** `delivery.url` parsed, once per URL (endpoints are few; deliveries to them many). */
  const urls = new Map<string, URL>()
  function urlOf (text: string): URL {
    let url = urls.get(text)
    if (!url) {
      if (urls.size >= 10_000) urls.clear()
      url = new URL(text)
      urls.set(text, url)
    }
    return url
  }

  /**
   * One signal for the attempts of one claim, which all start together: it aborts them
   * WEBHOOK_TIMEOUT after they started, or when the dispatcher stops. Two signals per attempt (a
   * timeout and their union) and their listeners were a visible part of an attempt's CPU in the
   * profile (bench/RESULTS.md, "Events").
   */
  function batchSignal (attempts: number): AbortSignal {
    const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), stopping.signal])
    setMaxListeners(attempts + 1, signal)
    return signal
  }

  async function send (delivery: ClaimedDelivery, signal: AbortSignal): Promise<AttemptOutcome> {
    const body = JSON.stringify(inSchemaOrder(Event as SchemaNode, toEvent({
      id: delivery.event_id,
      tx: '0',
      type: delivery.event_type,
      order_id: delivery.order_id,
      sequence: delivery.sequence,
      snapshot: delivery.snapshot,
      created_at: delivery.event_created_at,
    })))
    const id = String(delivery.event_id)
    const timestamp = Math.floor(Date.now() / 1000)
    const secrets = [delivery.secret]
    if (delivery.previous_secret && delivery.previous_secret_expires_at && delivery.previous_secret_expires_at.getTime() > Date.now()) {
      secrets.push(delivery.previous_secret)
    }
    const url = urlOf(delivery.url)
    const host = hostOf(url)
    if (!config.webhookAllowPrivate && (url.protocol !== 'https:' || (isIP(host) && !isPublicAddress(host)))) {
      return { status: 'PENDING', responseStatus: null, error: `refused: ${host} is not a public https host` }
    }
    const started = process.hrtime.bigint()
    try {
      const answer = await undici!.request(url, {
        method: 'POST',
        dispatcher: agentFor(url.origin),
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secrets, id, timestamp, body),
        },
        body,
        signal,
        maxRedirections: 0,
      })
      const status = answer.statusCode
      if (status >= 200 && status < 300) {
        // A success's body is not kept: at most 4 KiB of it is read and dropped (more closes the connection).
        await answer.body.dump({ limit: MAX_ANSWER_BYTES })
        webhookDeliverySeconds.observe(Number(process.hrtime.bigint() - started) / 1e9)
        return { status: 'SUCCEEDED', responseStatus: status, error: null }
      }
      // At most 4 KiB of the answer is read; the rest is dropped with the connection.
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of answer.body) {
        chunks.push(chunk as Buffer)
        size += (chunk as Buffer).length
        if (size >= MAX_ANSWER_BYTES) {
          answer.body.destroy()
          break
        }
      }
      webhookDeliverySeconds.observe(Number(process.hrtime.bigint() - started) / 1e9)
      const text = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8')
      const error = clip(`HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}${text ? `: ${text}` : ''}`)
      const retryAfter = status === 429 || status === 503 ? parseRetryAfter(answer.headers['retry-after']) : undefined
      return { status: status === 410 ? 'FAILED' : 'PENDING', responseStatus: status, error, ...(retryAfter !== undefined ? { retryInMs: retryAfter } : {}) }
    } catch (error) {
      webhookDeliverySeconds.observe(Number(process.hrtime.bigint() - started) / 1e9)
      if (stopping.signal.aborted) throw error
      const err = error as Error & { code?: string, cause?: Error & { code?: string } }
      const timedOut = err.name === 'TimeoutError' || err.name === 'AbortError' || /timeout/i.test(err.code ?? '')
      const message = timedOut ? `no answer within ${timeoutMs} ms` : `${err.code ?? err.cause?.code ?? err.name}: ${err.message}`
      return { status: 'PENDING', responseStatus: null, error: clip(message) }
    }
  }

  /** Sends one delivery; `sent` is called once its HTTP exchange is over, before its outcome is recorded. */
  async function attempt (delivery: ClaimedDelivery, signal: AbortSignal, sent: () => void): Promise<void> {
    let outcome: AttemptOutcome
    try {
      outcome = await send(delivery, signal)
    } catch (error) {
      // Stopping: the attempt is abandoned, and its claim given back for another instance.
      await releaseClaim(db, delivery).catch(() => {})
      return
    } finally {
      sent()
    }
    webhookDeliveries.inc({ outcome: outcome.status === 'SUCCEEDED' ? 'success' : 'failure' })
    if (outcome.status === 'PENDING') {
      const failures = delivery.attempts + 1 - delivery.schedule_start
      const delay = retryDelay(config.webhookRetrySchedule, failures, outcome.retryInMs)
      outcome = delay === undefined
        ? { ...outcome, status: 'FAILED', error: clip(`retries exhausted; last: ${outcome.error ?? ''}`) }
        : { ...outcome, retryInMs: delay }
    }
    await record(delivery, outcome)
    // Due at the database's now() + delay, taken while recording: wake just after that.
    if (outcome.status === 'PENDING' && outcome.retryInMs !== undefined) wakeAt(Date.now() + outcome.retryInMs + 10)
    if (outcome.responseStatus === 410) {
      await updateEndpoint(db, delivery.endpoint_id, { status: 'DISABLED' }, 'endpoint answered 410 Gone and was disabled')
      log.warn({ endpointId: delivery.endpoint_id }, 'webhook endpoint answered 410 Gone: disabled')
    }
  }

  async function pump (): Promise<void> {
    if (stopped) return
    if (pumping) {
      again = true
      return
    }
    pumping = true
    try {
      do {
        again = false
        const room = Math.min(MAX_IN_FLIGHT - sending, MAX_UNFINISHED - inFlight.size)
        if (room <= 0) break
        const claimed = await claimDueDeliveries(db, { limit: Math.min(room, MAX_CLAIM), perEndpoint: MAX_IN_FLIGHT_PER_ENDPOINT, busy, claimMs })
        if (claimed.length > 0) undici ??= await import('undici')
        if (stopped) {
          await Promise.allSettled(claimed.map(delivery => releaseClaim(db, delivery)))
          break
        }
        if (claimed.length > 0) {
          const signal = batchSignal(claimed.length)
          for (const delivery of claimed) {
            const endpoint = Number(delivery.endpoint_id)
            busy.set(endpoint, (busy.get(endpoint) ?? 0) + 1)
            sending++
            // The slot is free once the HTTP exchange is over: the next claim need not wait for the
            // outcome's statement (the delivery stays claimed, and its order's next event waits,
            // until it is recorded).
            let holding = true
            const sent = () => {
              if (!holding) return
              holding = false
              sending--
              const left = (busy.get(endpoint) ?? 1) - 1
              if (left > 0) busy.set(endpoint, left)
              else busy.delete(endpoint)
              claimSoon()
            }
            const running: Promise<void> = attempt(delivery, signal, sent)
              .catch(error => log.warn({ err: error, deliveryId: delivery.id }, 'recording a webhook attempt failed'))
              .finally(() => {
                sent()
                inFlight.delete(running)
                claimSoon() // the order's next event may be due now
              })
            inFlight.add(running)
          }
        }
        if (claimed.length === Math.min(room, MAX_CLAIM)) again = true
      } while (again && !isStopped())
    } catch (error) {
      if (!stopped) log.warn({ err: error }, 'claiming webhook deliveries failed')
    } finally {
      pumping = false
    }
  }

  let gathering: NodeJS.Timeout | undefined
  /** Claims after GATHER_MS, so that the changes committed meanwhile share the claim. */
  function claimSoon (): void {
    if (stopped || gathering) return
    gathering = setTimeout(() => {
      gathering = undefined
      pump().catch(() => {})
    }, GATHER_MS)
  }
  const isStopped = () => stopped

  /**
   * Whether an endpoint was active when last looked at (by the poll, or an endpoint changed here).
   * While none is, a change's wake-up claims nothing: a service without webhooks spent a claim
   * after every change's commit, 3% of PostgreSQL's CPU per create (bench/RESULTS.md). Deliveries
   * are only written for active endpoints, so none is missed; an endpoint registered on another
   * instance is seen by the next poll, which claims at once.
   */
  let endpointsActive = true
  /** Counts endpointActive() calls: a poll that read before one of them must not undo it. */
  let activeReports = 0
  const poll = async (): Promise<void> => {
    const reports = activeReports
    let active = true
    try {
      active = await hasActiveEndpoint(db)
    } catch (error) {
      if (!stopped) log.warn({ err: error }, 'looking for active webhook endpoints failed')
    }
    if (reports === activeReports) endpointsActive = active
    if (endpointsActive) claimSoon()
  }
  const polling = setInterval(() => { poll().catch(() => {}) }, options.pollMs ?? 1000)
  polling.unref()

  poll().catch(() => {})

  return {
    wake () {
      if (endpointsActive) claimSoon()
    },
    endpointActive () {
      activeReports++
      endpointsActive = true
      claimSoon()
    },
    async close () {
      stopped = true
      clearInterval(polling)
      if (soonest) clearTimeout(soonest)
      if (gathering) clearTimeout(gathering)
      stopping.abort()
      await Promise.allSettled([...inFlight])
      await Promise.allSettled([...agents.values()].map(agent => agent.close()))
    },
  }
}
