import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { dispatcherDatabaseUrl } from '../../src/webhooks/dispatcher.js'
import { ADMIN, Api, createTestDatabase, freePort, resetDatabase, testConfig } from '../helper.js'
import { Receiver, eventually, type Received } from './receiver.js'

// CONTRACT §12 "At least once", "With several instances": real instances on one PostgreSQL database.

const BASE = '/api/v1/admin/webhook-endpoints'
const skip = process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (instances share one PostgreSQL database)'

/** Every event id in the database, by order, in sequence order. */
async function committedEvents (db: Api['app']['db']): Promise<Map<number, number[]>> {
  const rows = await db.selectFrom('events').select(['id', 'order_id', 'sequence']).orderBy('order_id').orderBy('sequence').execute()
  const byOrder = new Map<number, number[]>()
  for (const row of rows) byOrder.set(row.order_id, [...(byOrder.get(row.order_id) ?? []), row.id])
  return byOrder
}

/** The first successful delivery of each event, per order, in arrival order. */
function firstDeliveries (received: Received[]): Map<number, number[]> {
  const seen = new Set<string>()
  const byOrder = new Map<number, number[]>()
  for (const r of received) {
    assert.equal(r.id, String(r.event.eventId), 'webhook-id is the eventId')
    if (r.answered < 200 || r.answered >= 300 || seen.has(r.id)) continue
    seen.add(r.id)
    byOrder.set(r.event.orderId, [...(byOrder.get(r.event.orderId) ?? []), r.event.eventId])
  }
  return byOrder
}

describe('two instances dispatching from one PostgreSQL database', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let second: DatabaseHandle
  const apis: Api[] = []
  const receiver = new Receiver()

  before(async () => {
    await receiver.start()
    database = await createTestDatabase('postgres')
    second = await openDatabase({ databaseUrl: database.url!, databasePoolSize: 10, databasePreparedStatements: true, dataDir: 'memory' })
    const config = testConfig({ MAX_UNPAID_ORDERS: '0', DATABASE_URL: database.url!, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,200ms' })
    for (const handle of [database, second]) apis.push(new Api(await buildApp(config, { logger: false, database: handle })))
    await resetDatabase(apis[0]!.app)
  })
  after(async () => {
    for (const api of apis) await api.app.close()
    await second?.close()
    await database?.close()
    await receiver.stop()
  })

  it('delivers every event exactly once, in sequence per order, whichever instance wrote it', async () => {
    const [one, two] = apis as [Api, Api]
    const admin = await one.admin()
    const owner = await one.member('owner')
    const product = await one.product(admin, { stockQuantity: 1000 })
    const endpoint = (await one.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })).json().data
    receiver.secrets = [endpoint.secret]
    // A slow receiver, so that both instances have deliveries in flight at once.
    receiver.respond = () => ({ status: 200, delayMs: 20 })
    await Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const api = i % 2 === 0 ? one : two
      const order = await api.order(owner, [{ productId: product.productId, quantity: 1 }])
      const confirm = await (i % 3 === 0 ? one : two).inject({ method: 'PATCH', url: `/api/v1/orders/${order.orderId}/confirm`, headers: owner.headers })
      assert.equal(confirm.statusCode, 200)
    }))
    const committed = await committedEvents(one.app.db)
    const total = [...committed.values()].flat().length
    assert.equal(total, 36)
    await eventually(() => receiver.received.length >= total, 'every event delivered')
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.equal(receiver.received.length, total, 'no event delivered twice')
    assert.deepEqual(firstDeliveries(receiver.received), committed)
  })

  it("delivers what another instance wrote and did not send, and no create's transaction sends a NOTIFY", async () => {
    // Without NOTIFY, an instance learns of another's deliveries by its poll: instance two stops
    // its dispatcher, so only instance one can deliver what two commits.
    await resetDatabase(apis[0]!.app)
    receiver.received.length = 0
    const [one, two] = apis as [Api, Api]
    const admin = await one.admin()
    const owner = await one.member('owner')
    const product = await one.product(admin, { stockQuantity: 100 })
    const endpoint = (await one.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })).json().data
    receiver.secrets = [endpoint.secret]
    receiver.respond = () => ({ status: 200 })
    await two.app.webhooks!.close()
    const listener = new pg.Client({ connectionString: database.url! })
    await listener.connect()
    const notified: string[] = []
    listener.on('notification', message => notified.push(message.channel))
    await listener.query('listen webhook_deliveries')
    try {
      const orders = []
      for (let i = 0; i < 3; i++) orders.push(await two.order(owner, [{ productId: product.productId, quantity: 1 }]))
      await eventually(() => receiver.succeeded.length >= 3, "instance one delivers instance two's events")
      assert.deepEqual(receiver.succeeded.map(r => r.event.orderId).sort(), orders.map(order => order.orderId).sort())
      assert.deepEqual(notified, [])
    } finally {
      await listener.end()
    }
  })

  it("plans the dispatcher's statements for their values on its own connections", async () => {
    // A generic plan made while the deliveries table was small would scan it once per due delivery.
    const url = new URL(database.url!)
    url.searchParams.set('application_name', 'dispatcher-test')
    url.searchParams.set('options', '-c statement_timeout=5s')
    const client = new pg.Client({ connectionString: dispatcherDatabaseUrl(url.toString()) })
    await client.connect()
    try {
      const settings = await client.query("select current_setting('plan_cache_mode') as plans, current_setting('statement_timeout') as timeout, current_setting('application_name') as name")
      assert.deepEqual(settings.rows, [{ plans: 'force_custom_plan', timeout: '5s', name: 'dispatcher-test' }])
    } finally {
      await client.end()
    }
  })
})

describe('a crashed instance: its committed events are delivered after a restart', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let child: ChildProcess | undefined
  let port: number
  const receiverPort = { value: 0 }
  let receiver: Receiver

  async function startService (): Promise<void> {
    child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: database.url!,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        AUTH_RATE_LIMIT: '1000000',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_TIMEOUT: '1s',
        // Long enough to outlast the receiver's outage and the restart.
        WEBHOOK_RETRY_SCHEDULE: Array(20).fill('500ms').join(','),
      },
      stdio: 'ignore',
    })
    await eventually(async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/api/v1/health`)).status === 200
      } catch {
        return false
      }
    }, 'the service listening')
  }

  async function call (method: string, path: string, token?: string, body?: unknown) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, body: await res.json() as { data: Record<string, unknown> } }
  }

  before(async () => {
    database = await createTestDatabase('postgres')
    port = await freePort()
    receiverPort.value = await freePort()
  })
  after(async () => {
    child?.kill('SIGKILL')
    await receiver?.stop()
    await database?.close()
  })

  it('commits orders while the receiver is down, is killed, restarts, and delivers every event with the same webhook-id, in order', async () => {
    await startService()
    const login = async (email: string, password: string) => (await call('POST', '/api/v1/auth/login', undefined, { email, password })).body.data.accessToken as string
    const admin = await login(ADMIN.email, ADMIN.password)
    const email = `owner-${Date.now()}@example.com`
    assert.equal((await call('POST', '/api/v1/members', undefined, { email, password: 'correct horse', name: 'owner' })).status, 201)
    const owner = await login(email, 'correct horse')
    const ownerId = Number(JSON.parse(Buffer.from(owner.split('.')[1]!, 'base64url').toString()).sub)
    const product = (await call('POST', '/api/v1/admin/products', admin, { name: 'Tea', price: 300, stockQuantity: 100 })).body.data
    const created = await call('POST', BASE, admin, { url: `http://127.0.0.1:${receiverPort.value}/hook` })
    assert.equal(created.status, 201)

    for (let i = 0; i < 5; i++) {
      const order = await call('POST', '/api/v1/orders', owner, { customerId: ownerId, items: [{ productId: product.productId, quantity: 1 }] })
      assert.equal(order.status, 201)
      if (i % 2 === 0) assert.equal((await call('PATCH', `/api/v1/orders/${order.body.data.orderId}/confirm`, owner)).status, 200)
    }
    child!.kill('SIGKILL')
    await new Promise(resolve => child!.once('exit', resolve))

    receiver = new Receiver(receiverPort.value)
    receiver.secrets = [created.body.data.secret as string]
    await receiver.start()
    await startService()

    const committed = new Map<number, number[]>()
    for (const row of (await database.db.selectFrom('events').select(['id', 'order_id']).orderBy('order_id').orderBy('sequence').execute())) {
      committed.set(row.order_id, [...(committed.get(row.order_id) ?? []), row.id])
    }
    const total = [...committed.values()].flat().length
    assert.equal(total, 11)
    await eventually(() => new Set(receiver.succeeded.map(r => r.id)).size === total, 'every committed event delivered')
    assert.deepEqual(firstDeliveries(receiver.received), committed)
    assert.deepEqual(receiver.refused, [])
    child!.kill('SIGTERM')
    await new Promise(resolve => child!.once('exit', resolve))
    child = undefined
  })
})
