import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { after, before, beforeEach, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { EXCHANGE, POSITION_KEY } from '../../src/events/broker.js'
import {
  Api, BACKENDS, createTestDatabase, freePort, resetDatabase, STUCK_AFTER_MS, successData, testConfig, waitFor, type Backend, type Member,
} from '../helper.js'

// CONTRACT §12 "Broker sink", §14: with AMQP_URL set every event is also published to RabbitMQ.
// These tests talk to a real broker (TEST_AMQP_URL, default the local one with guest/guest) and
// skip, saying so, when none answers. The outage test stops and starts the local broker's
// application with rabbitmqctl when that works here; the closed-port test needs no broker.

const RABBIT = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
const run = promisify(execFile)

async function brokerMissing (): Promise<string | false> {
  try {
    const connection = await connect(RABBIT, { timeout: 2_000 })
    await connection.close()
    return false
  } catch (error) {
    return `RabbitMQ is not reachable at ${new URL(RABBIT).host} (${(error as Error).message}); set TEST_AMQP_URL or start it`
  }
}

/** Whether this test may restart the broker: a local one that rabbitmqctl controls. */
async function restartMissing (): Promise<string | false> {
  if (!['127.0.0.1', 'localhost'].includes(new URL(RABBIT).hostname)) return 'the broker is not local'
  try {
    await run('rabbitmq-diagnostics', ['-q', 'ping'], { timeout: 15_000 })
    return false
  } catch {
    return 'rabbitmqctl cannot control the local broker here'
  }
}

const missing = await brokerMissing()
const noRestart = missing || await restartMissing()

/** Test timings: prompt polling and short backoff, so an outage ends within a second of the broker's return. */
const TIMINGS = { pollMs: 50, retryMinMs: 100, retryMaxMs: 500, standbyMs: 100 }

/** Polls `check` until it holds: no budget, only the shared safety cap, which names `what`. */
const until = (check: () => Promise<boolean> | boolean, what = 'the condition') => waitFor(check, what)

/**
 * A fresh durable queue bound to `order-events` with `#`, collecting what arrives: it outlives a
 * broker restart, and the consumer connects again by itself when its connection is lost. Other test
 * runs may publish to the same broker at the same time, so only messages about this test's product
 * (its unique name, `PRODUCT`) are kept.
 */
class Consumer {
  readonly messages: ConsumeMessage[] = []
  readonly queue = `order-events-test-${randomBytes(6).toString('hex')}`
  private connection?: ChannelModel
  private channel?: Channel
  private closed = false

  static async open (): Promise<Consumer> {
    const consumer = new Consumer()
    await consumer.connect()
    return consumer
  }

  private async connect (): Promise<void> {
    const connection = await connect(RABBIT)
    connection.on('error', () => {})
    connection.on('close', () => { if (!this.closed) this.reconnect().catch(() => {}) })
    this.connection = connection
    this.channel = await connection.createChannel()
    this.channel.on('error', () => {})
    await this.channel.assertExchange(EXCHANGE, 'topic', { durable: true })
    await this.channel.assertQueue(this.queue, { durable: true, exclusive: false, autoDelete: false })
    await this.channel.bindQueue(this.queue, EXCHANGE, '#')
    await this.channel.consume(this.queue, message => {
      if (message && message.content.toString('utf8').includes(PRODUCT)) this.messages.push(message)
    }, { noAck: true })
  }

  /** Connects again, retrying while the broker is away. */
  async reconnect (): Promise<void> {
    while (!this.closed) {
      try {
        return await this.connect()
      } catch {
        await new Promise(resolve => setTimeout(resolve, 250))
      }
    }
  }

  async close (): Promise<void> {
    this.closed = true
    await this.channel?.deleteQueue(this.queue).catch(() => {})
    await this.connection?.close().catch(() => {})
  }
}

/** The name of every product these tests order, unique to this run. */
const PRODUCT = `Broker test beans ${randomBytes(6).toString('hex')}`

interface FeedEvent { eventId: number, type: string, timestamp: string, orderId: number, sequence: number }

/** The whole feed, oldest first, through the admin API. */
async function feed (api: Api, admin: Member): Promise<FeedEvent[]> {
  const events: FeedEvent[] = []
  let cursor: string | undefined
  for (;;) {
    const slice = successData<{ content: FeedEvent[], hasNext: boolean, nextCursor: string }>(
      await api.get('/api/v1/admin/events', { size: 100, ...(cursor ? { cursor } : {}) }, admin))
    events.push(...slice.content)
    cursor = slice.nextCursor
    if (!slice.hasNext) return events
  }
}

/**
 * The feed once it holds `count` events. The feed shows an event only after every older transaction
 * in the server has ended, and other test files create and drop databases on the same server (each
 * a transaction of its own), so the feed may lag for a moment behind the API's answers.
 */
async function feedOf (api: Api, admin: Member, count: number): Promise<FeedEvent[]> {
  let events: FeedEvent[] = []
  await until(async () => (events = await feed(api, admin)).length >= count, `${count} events in the feed`)
  return events
}

/** Events `business` announces: two orders placed, one confirmed (payment opened) and both cancelled. */
const BUSINESS_EVENTS = 7

/** The messages' bodies, each message checked against its event's properties and routing key. */
function bodiesOf (messages: ConsumeMessage[]): FeedEvent[] {
  return messages.map(message => {
    const event = JSON.parse(message.content.toString('utf8')) as FeedEvent
    assert.equal(message.fields.exchange, EXCHANGE)
    assert.equal(message.fields.routingKey, event.type)
    assert.equal(message.properties.messageId, String(event.eventId))
    assert.equal(message.properties.deliveryMode, 2, 'persistent')
    assert.equal(message.properties.contentType, 'application/json')
    assert.equal(message.properties.timestamp, Math.floor(Date.parse(event.timestamp) / 1000))
    return event
  })
}

/** First deliveries only: after an outage the unconfirmed tail may come again (at least once). */
function firstDeliveries (events: FeedEvent[]): FeedEvent[] {
  const seen = new Set<number>()
  return events.filter(event => !seen.has(event.eventId) && seen.add(event.eventId))
}

/** The events' `sequence` numbers increase per order as they arrive. */
function assertInOrderPerOrder (events: FeedEvent[]): void {
  const last = new Map<number, number>()
  for (const event of events) {
    assert.ok((last.get(event.orderId) ?? 0) < event.sequence, `order ${event.orderId}: ${event.sequence} after ${last.get(event.orderId)}`)
    last.set(event.orderId, event.sequence)
  }
}

/** Places, confirms and cancels orders through the API: payment and order events, several orders. */
async function business (api: Api, admin: Member, owner: Member, productId: number): Promise<void> {
  const first = await api.order(owner, [{ productId, quantity: 1 }])
  const second = await api.order(owner, [{ productId, quantity: 2 }])
  const confirm = await api.inject({ method: 'PATCH', url: `/api/v1/orders/${first.orderId}/confirm`, headers: owner.headers })
  assert.equal(confirm.statusCode, 200, confirm.body)
  const cancel = await api.inject({ method: 'PATCH', url: `/api/v1/orders/${second.orderId}/cancel`, headers: owner.headers })
  assert.equal(cancel.statusCode, 200, cancel.body)
  const cancelFirst = await api.inject({ method: 'PATCH', url: `/api/v1/orders/${first.orderId}/cancel`, headers: admin.headers })
  assert.equal(cancelFirst.statusCode, 200, cancelFirst.body)
}

async function brokerComponent (api: Api, admin: Member) {
  const res = await api.get('/actuator/health', {}, admin)
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  assert.equal(body.status, 'UP', 'the broker never decides the overall status')
  return body.components.broker as { status: 'UP' | 'DOWN', details: Record<string, unknown> }
}

async function storedPosition (app: FastifyInstance): Promise<string | undefined> {
  const row = await app.db.selectFrom('settings').select('value').where('key', '=', POSITION_KEY).executeTakeFirst()
  return row?.value
}

for (const backend of BACKENDS) {
  describe(`the RabbitMQ sink [${backend}]`, { skip: missing }, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>
    let api: Api
    let admin: Member
    let consumer: Consumer | undefined

    before(async () => {
      database = await createTestDatabase(backend)
      api = new Api(await buildApp(testConfig({ AMQP_URL: RABBIT }), { logger: false, database, broker: TIMINGS }))
      await api.app.ready()
    })
    beforeEach(async () => {
      await resetDatabase(api.app)
      admin = await api.admin()
      await until(async () => (await brokerComponent(api, admin)).status === 'UP', 'broker UP')
    })
    after(async () => {
      await consumer?.close()
      await api?.app.close()
      await database?.close()
    })

    it('publishes every event in feed order: routing key = type, message_id = eventId, persistent, JSON body = the event', async () => {
      consumer = await Consumer.open()
      const owner = await api.member('owner')
      const product = await api.product(admin, { stockQuantity: 100, name: PRODUCT })
      await business(api, admin, owner, product.productId)
      const events = await feedOf(api, admin, BUSINESS_EVENTS)
      await until(() => consumer!.messages.length >= events.length, `${events.length} messages`)
      await new Promise(resolve => setTimeout(resolve, 300))
      const bodies = bodiesOf(consumer.messages)
      assert.deepEqual(bodies, events, 'each body is the feed\'s event, in the feed\'s order, once')
      assertInOrderPerOrder(bodies)
      assert.deepEqual(new Set(bodies.map(e => e.type)), new Set(['order.placed', 'payment.created', 'order.confirmed', 'payment.cancelled', 'order.cancelled']))
      assert.equal(await storedPosition(api.app), JSON.stringify({ tx: String((await rawPosition(api.app)).tx), id: events.at(-1)!.eventId }))
      const component = await brokerComponent(api, admin)
      assert.equal(component.status, 'UP')
      assert.equal(component.details.exchange, EXCHANGE)
      assert.equal(component.details.role, 'publisher')
      await consumer.close()
      consumer = undefined
    })

    it('loses nothing across a broker restart: events committed during the outage are published after it', { skip: noRestart }, async () => {
      consumer = await Consumer.open()
      const owner = await api.member('owner')
      const product = await api.product(admin, { stockQuantity: 100, name: PRODUCT })
      await api.order(owner, [{ productId: product.productId, quantity: 1 }])
      await until(() => consumer!.messages.length >= 1, 'the first message')

      await run('rabbitmqctl', ['-q', 'stop_app'], { timeout: STUCK_AFTER_MS })
      try {
        await until(async () => (await brokerComponent(api, admin)).status === 'DOWN', 'broker DOWN')
        // The API serves as ever, and the instance stays ready.
        await business(api, admin, owner, product.productId)
        assert.equal((await api.get('/actuator/health/readiness')).statusCode, 200)
        assert.equal((await api.get('/api/v1/health')).statusCode, 200)
      } finally {
        await run('rabbitmqctl', ['-q', 'start_app'], { timeout: STUCK_AFTER_MS })
      }
      await until(async () => (await brokerComponent(api, admin)).status === 'UP', 'broker UP again')
      const events = await feedOf(api, admin, 1 + BUSINESS_EVENTS)
      await until(() => new Set(consumer!.messages.map(m => m.properties.messageId)).size >= events.length, `${events.length} distinct messages`)
      const bodies = bodiesOf(consumer.messages)
      assert.deepEqual(firstDeliveries(bodies), events)
      assertInOrderPerOrder(firstDeliveries(bodies))
      await consumer.close()
      consumer = undefined
    })
  })

  describe(`the RabbitMQ sink starting on a database with events [${backend}]`, { skip: missing }, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>
    const apps: FastifyInstance[] = []
    after(async () => {
      for (const app of apps) await app.close()
      await database?.close()
    })

    it('starts at the end of the feed (no backlog), and from the stored position after a restart', async () => {
      database = await createTestDatabase(backend)
      const plain = new Api(await buildApp(testConfig(), { logger: false, database }))
      apps.push(plain.app)
      await resetDatabase(plain.app)
      const admin = await plain.admin()
      const owner = await plain.member('owner')
      const product = await plain.product(admin, { stockQuantity: 100, name: PRODUCT })
      const before = await plain.order(owner, [{ productId: product.productId, quantity: 1 }])
      // Once the feed shows it, the end of the feed the sink starts from is past it.
      await feedOf(plain, admin, 1)
      await plain.app.close()

      const consumer = await Consumer.open()
      try {
        const sink = new Api(await buildApp(testConfig({ AMQP_URL: RABBIT }), { logger: false, database, broker: TIMINGS }))
        apps.push(sink.app)
        await sink.app.ready()
        await until(async () => (await storedPosition(sink.app)) !== undefined, 'a stored position')
        const later = await sink.order(owner, [{ productId: product.productId, quantity: 1 }])
        await until(() => consumer.messages.length >= 1)
        await new Promise(resolve => setTimeout(resolve, 300))
        assert.deepEqual(bodiesOf(consumer.messages).map(e => [e.orderId, e.type]), [[later.orderId, 'order.placed']],
          `order ${before.orderId}, placed before the sink started, is not published`)
        await sink.app.close()

        // Committed while no sink runs: published from the stored position when it starts again.
        const gap = new Api(await buildApp(testConfig(), { logger: false, database }))
        apps.push(gap.app)
        const meanwhile = await gap.order(owner, [{ productId: product.productId, quantity: 1 }])
        await gap.app.close()
        const again = new Api(await buildApp(testConfig({ AMQP_URL: RABBIT }), { logger: false, database, broker: TIMINGS }))
        apps.push(again.app)
        await again.app.ready()
        await until(() => consumer.messages.length >= 2)
        assert.deepEqual(bodiesOf(consumer.messages).map(e => [e.orderId, e.type]),
          [[later.orderId, 'order.placed'], [meanwhile.orderId, 'order.placed']])
      } finally {
        await consumer.close()
      }
    })
  })

  describe(`the RabbitMQ sink with the broker unreachable [${backend}]`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>
    let api: Api

    before(async () => {
      database = await createTestDatabase(backend)
      const closedPort = await freePort()
      api = new Api(await buildApp(testConfig({ AMQP_URL: `amqp://guest:secret-pw@127.0.0.1:${closedPort}` }), { logger: false, database, broker: TIMINGS }))
      await api.app.ready()
      await resetDatabase(api.app)
    })
    after(async () => {
      await api?.app.close()
      await database?.close()
    })

    it('shows the broker DOWN to admins, stays ready, and serves API requests', async () => {
      const admin = await api.admin()
      const owner = await api.member('owner')
      const product = await api.product(admin, { stockQuantity: 10, name: PRODUCT })
      const order = await api.order(owner, [{ productId: product.productId, quantity: 1 }])
      const confirm = await api.inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers })
      assert.equal(confirm.statusCode, 200, confirm.body)

      const health = await api.get('/actuator/health', {}, admin)
      assert.equal(health.statusCode, 200, health.body)
      assert.deepEqual(health.json().components.broker, {
        status: 'DOWN',
        details: { exchange: EXCHANGE, role: 'standby', error: 'The broker could not be reached.' },
      })
      assert.doesNotMatch(health.body, /secret-pw/)
      assert.deepEqual((await api.get('/actuator/health')).json(), { status: 'UP' }, 'no components for anonymous callers')
      assert.equal((await api.get('/actuator/health/readiness')).statusCode, 200)
      assert.equal((await api.get('/api/v1/health')).statusCode, 200)
    })
  })
}

describe('the RabbitMQ sink with two instances on one PostgreSQL database', {
  skip: missing || (process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (instances share a database server)'),
}, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  const apis: Api[] = []
  let consumer: Consumer | undefined

  before(async () => {
    database = await createTestDatabase('postgres' as Backend)
    for (let i = 0; i < 2; i++) {
      const api = new Api(await buildApp(testConfig({ AMQP_URL: RABBIT }), { logger: false, database, broker: TIMINGS }))
      if (i === 0) await resetDatabase(api.app)
      await api.app.ready()
      apis.push(api)
    }
  })
  after(async () => {
    await consumer?.close()
    for (const api of apis) await api.app.close()
    await database?.close()
  })

  it('publishes each event once, from one instance at a time; the other takes over when it stops', async () => {
    const admin = await apis[0]!.admin()
    const roles = async () => Promise.all(apis.map(async api => (await brokerComponent(api, admin)).details.role))
    await until(async () => (await roles()).sort().join() === 'publisher,standby', 'one publisher')
    consumer = await Consumer.open()
    const owner = await apis[0]!.member('owner')
    const product = await apis[0]!.product(admin, { stockQuantity: 100, name: PRODUCT })
    await business(apis[0]!, admin, owner, product.productId)
    await business(apis[1]!, admin, owner, product.productId)
    let events = await feedOf(apis[0]!, admin, 2 * BUSINESS_EVENTS)
    await until(() => consumer!.messages.length >= events.length, `${events.length} messages`)
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.deepEqual(bodiesOf(consumer.messages), events, 'once each, in feed order')

    const publisher = (await roles()).indexOf('publisher')
    const remaining = apis[1 - publisher]!
    await apis[publisher]!.app.close()
    apis.splice(publisher, 1)
    await until(async () => (await brokerComponent(remaining, admin)).details.role === 'publisher', 'take-over')
    await business(remaining, admin, owner, product.productId)
    events = await feedOf(remaining, admin, 3 * BUSINESS_EVENTS)
    await until(() => consumer!.messages.length >= events.length, `${events.length} messages`)
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.deepEqual(bodiesOf(consumer.messages), events)
  })
})

/** The feed's newest position as the sink stores it. */
async function rawPosition (app: FastifyInstance): Promise<{ tx: string, id: number }> {
  const row = await app.db.selectFrom('events').select(['id', 'tx']).orderBy('tx', 'desc').orderBy('id', 'desc').executeTakeFirstOrThrow()
  return { tx: String(row.tx), id: row.id }
}
