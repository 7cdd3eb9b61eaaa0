import type { ChannelModel, ConfirmChannel } from 'amqplib'
import type { FastifyBaseLogger } from 'fastify'
import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { readFeed, type FeedPosition } from './repository.js'
import { toEvent } from './service.js'

/** The durable topic exchange every event goes to, with its `type` as the routing key (CONTRACT §12). */
export const EXCHANGE = 'order-events'
/** Where the position of the last confirmed event is kept (settings table): `{"tx": "…", "id": …}`. */
export const POSITION_KEY = 'amqp.position'
/**
 * The PostgreSQL advisory lock the publishing instance holds, on a connection of its own, while it
 * publishes: with several instances, one publishes and the others stand by (and take over when its
 * session ends). An arbitrary constant, distinct from Kysely's migration lock.
 */
export const PUBLISHER_LOCK = 4_873_102_611_920_433

/** At most this many events are published before waiting for their confirms. */
const BATCH = 100

export interface BrokerSinkOptions {
  db: Db
  /** PGlite serves one process: it publishes without a lock. */
  kind: 'postgres' | 'pglite'
  /** `amqp://` or `amqps://` (AMQP_URL). */
  url: string
  log: FastifyBaseLogger
  /** How often the feed is read for new events (default 250 ms). */
  pollMs?: number
  /** Reconnect backoff: from this (default 250 ms), doubling… */
  retryMinMs?: number
  /** …up to this (default 15 s), each wait with up to 20% jitter. */
  retryMaxMs?: number
  /** How often a standby instance tries to become the publisher (default 2 s). */
  standbyMs?: number
}

/** The `broker` component of admin health (src/ops/health.ts). */
export interface BrokerHealth {
  status: 'UP' | 'DOWN'
  details: Record<string, unknown>
}

export interface BrokerSink {
  /** Connects and publishes in the background until `close`. */
  start (): void
  health (): BrokerHealth
  /** Stops publishing and closes the connection; waits for a batch in flight to settle (bounded). */
  close (): Promise<void>
}

/** The AMQP properties of one event's message. */
export function messageOptions (event: { eventId: number, timestamp: string }) {
  return {
    persistent: true,
    contentType: 'application/json',
    messageId: String(event.eventId),
    timestamp: Math.floor(Date.parse(event.timestamp) / 1000),
  }
}

/** The URL with a heartbeat (10 s) unless it names one: a dead broker is noticed even while idle. */
function withHeartbeat (url: string): string {
  const parsed = new URL(url)
  if (!parsed.searchParams.has('heartbeat')) parsed.searchParams.set('heartbeat', '10')
  return parsed.toString()
}

class Closed extends Error {}

/**
 * The optional RabbitMQ sink (CONTRACT §12 "Broker sink", §14; docs/events.md). It follows the
 * event feed (`readFeed`: commit order, tail-safe) from the position stored under `amqp.position`
 * and publishes each event to the `order-events` exchange on a confirm channel, in feed order, in
 * batches of at most 100 whose confirms are awaited before the position moves past them. So an
 * event counts as published only once the broker confirmed it, an order's events leave in
 * `sequence` order, and after a crash or an outage the unconfirmed tail is published again
 * (at least once: consumers dedupe by `message_id`).
 *
 * With no position stored, the sink starts at the current end of the feed (no backlog, §14).
 * A broker outage only delays publishing: the sink reconnects with backoff, the `broker` health
 * component is DOWN meanwhile, and nothing here is on a request's path.
 */
export function createBrokerSink (options: BrokerSinkOptions): BrokerSink {
  const { db, kind, log } = options
  const pollMs = options.pollMs ?? 250
  const retryMinMs = options.retryMinMs ?? 250
  const retryMaxMs = options.retryMaxMs ?? 15_000
  const standbyMs = options.standbyMs ?? 2_000
  const url = withHeartbeat(options.url)

  const state = { closed: false }
  let running: Promise<void> | undefined
  let model: ChannelModel | undefined
  let channel: ConfirmChannel | undefined
  let role: 'publisher' | 'standby' = 'standby'
  let published: FeedPosition | undefined
  /** Set when a round of publishing read the feed: the backoff then starts again from its shortest wait. */
  let progressed = false
  let wake = () => {}

  /** Waits `ms`, or less when the sink is closed; throws Closed once it is. */
  const pause = (ms: number) => new Promise<void>((resolve, reject) => {
    if (state.closed) return reject(new Closed())
    const timer = setTimeout(done, ms)
    function done () {
      clearTimeout(timer)
      wake = () => {}
      if (state.closed) reject(new Closed())
      else resolve()
    }
    wake = done
  })

  const dropConnection = () => {
    const current = model
    model = undefined
    channel = undefined
    current?.close().catch(() => {})
  }

  async function connectBroker (): Promise<ConfirmChannel> {
    if (channel) return channel
    // Loaded on first use: a service without AMQP_URL never loads the client (its modules stay out of memory).
    const { connect } = await import('amqplib')
    const connection = await connect(url, { timeout: 5_000 })
    // Without listeners, an 'error' would be an uncaught exception: a broker outage must not end the process.
    connection.on('error', (error: Error) => log.warn({ err: error }, 'RabbitMQ connection error'))
    connection.on('close', () => {
      if (model !== connection) return
      model = undefined
      channel = undefined
      if (!state.closed) log.warn('RabbitMQ connection closed; events wait until it is back')
      wake()
    })
    try {
      const confirm = await connection.createConfirmChannel()
      confirm.on('error', (error: Error) => log.warn({ err: error }, 'RabbitMQ channel error'))
      confirm.on('close', () => {
        if (channel !== confirm) return
        // A channel closed by the broker (e.g. an exchange declared differently): start over.
        dropConnection()
        wake()
      })
      await confirm.assertExchange(EXCHANGE, 'topic', { durable: true })
      if (state.closed) throw new Closed()
      model = connection
      channel = confirm
      log.info({ exchange: EXCHANGE }, 'connected to RabbitMQ')
      return confirm
    } catch (error) {
      connection.close().catch(() => {})
      throw error
    }
  }

  /** The stored position; when there is none, the current end of the feed is stored first (no backlog). */
  async function startingPosition (conn: Db): Promise<FeedPosition> {
    const end = await sql<FeedPosition>`
      select tx::text as tx, id from events
      where tx < pg_snapshot_xmin(pg_current_snapshot())
      order by events.tx desc, events.id desc limit 1`.execute(conn)
    const initial = end.rows[0] ?? { tx: '0', id: 0 }
    await conn.insertInto('settings').values({ key: POSITION_KEY, value: JSON.stringify({ tx: initial.tx, id: Number(initial.id) }) })
      .onConflict(oc => oc.column('key').doNothing()).execute()
    const row = await conn.selectFrom('settings').select('value').where('key', '=', POSITION_KEY).executeTakeFirstOrThrow()
    const stored = JSON.parse(row.value) as FeedPosition
    return { tx: String(stored.tx), id: Number(stored.id) }
  }

  /** Publishes from the stored position while the broker and `conn` last; returns when either fails. */
  async function publish (conn: Db): Promise<void> {
    let position = await startingPosition(conn)
    published = position
    while (!state.closed) {
      const confirm = await connectBroker()
      const rows = await readFeed(conn, { after: position, limit: BATCH })
      progressed = true
      if (rows.length === 0) {
        await pause(pollMs)
        continue
      }
      for (const row of rows) {
        const event = toEvent(row)
        confirm.publish(EXCHANGE, event.type, Buffer.from(JSON.stringify(event)), messageOptions(event))
      }
      // Rejects when any message was nacked or the channel closed: the batch is then sent again.
      await confirm.waitForConfirms()
      const last = rows.at(-1)!
      position = { tx: last.tx, id: last.id }
      await conn.updateTable('settings').set({ value: JSON.stringify(position) }).where('key', '=', POSITION_KEY).execute()
      published = position
    }
  }

  /** On PostgreSQL, publishes only while holding the advisory lock on a connection of its own. */
  async function publishAsLeader (): Promise<boolean> {
    if (kind === 'pglite') {
      role = 'publisher'
      await publish(db)
      return true
    }
    return db.connection().execute(async (conn) => {
      const lock = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${PUBLISHER_LOCK}::bigint) as locked`.execute(conn)
      if (!lock.rows[0]?.locked) return false
      role = 'publisher'
      try {
        await publish(conn)
      } finally {
        role = 'standby'
        await sql`select pg_advisory_unlock(${PUBLISHER_LOCK}::bigint)`.execute(conn).catch(() => {})
      }
      return true
    })
  }

  async function run (): Promise<void> {
    let failures = 0
    while (!state.closed) {
      try {
        // Every instance keeps a connection (its health shows the broker); one of them publishes.
        await connectBroker()
        progressed = false
        const led = await publishAsLeader()
        failures = 0
        if (!led) await pause(standbyMs)
      } catch (error) {
        if (state.closed || error instanceof Closed) break
        // Backoff grows while nothing works (the broker or the database down); it starts again once
        // a round got as far as reading the feed, and each outage is logged once.
        failures = progressed ? 1 : failures + 1
        // A database failure leaves the broker connection as it is; a broken connection was dropped
        // by its 'close' listener, and is opened again after the backoff.
        if (failures === 1) log.warn({ err: error }, 'publishing events to RabbitMQ failed; retrying with backoff')
        const delay = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(failures - 1, 16))
        await pause(delay * (1 + Math.random() * 0.2)).catch(() => {})
      }
    }
  }

  return {
    start () {
      running ??= run()
    },
    health (): BrokerHealth {
      const details: Record<string, unknown> = { exchange: EXCHANGE, role }
      if (channel) {
        return { status: 'UP', details: { ...details, ...(published ? { lastPublishedPosition: `${published.tx}:${published.id}` } : {}) } }
      }
      return { status: 'DOWN', details: { ...details, error: 'The broker could not be reached.' } }
    },
    async close () {
      state.closed = true
      wake()
      if (running) {
        // A batch waiting for confirms settles, or fails once the connection closes below.
        await Promise.race([running, new Promise(resolve => setTimeout(resolve, 2_000).unref())])
      }
      const current = model
      model = undefined
      channel = undefined
      await current?.close().catch(() => {})
      await running
    },
  }
}
