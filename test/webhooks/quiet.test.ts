import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { KyselyPlugin } from 'kysely'
import { buildApp, type BuildOptions } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { Api, BACKENDS, createTestDatabase, resetDatabase, testConfig, type Member } from '../helper.js'
import { Receiver, eventually } from './receiver.js'

// The dispatcher claims deliveries only while an endpoint is active (src/webhooks/dispatcher.ts):
// a service without webhooks must not send a claim after every change it commits. The statements
// are counted as the database receives them; the slow poll is turned off, so only a wake-up can claim.

const BASE = '/api/v1/admin/webhook-endpoints'
const NEVER_MS = 2_000_000_000
/** Longer than the dispatcher gathers wake-ups before it claims (GATHER_MS, 20 ms). */
const SETTLE_MS = 200

const isClaim = (text: string) => /update "?webhook_deliveries"? c set claimed_until/.test(text)

for (const backend of BACKENDS) {
  describe(`the webhook dispatcher without active endpoints [${backend}]`, () => {
    const statements: string[] = []
    let database: DatabaseHandle
    let api: Api
    let admin: Member
    let owner: Member
    let productId: number
    const receiver = new Receiver()

    before(async () => {
      await receiver.start()
      database = await createTestDatabase(backend, { onStatement: text => { statements.push(text) } })
      // No DATABASE_URL in the config: the dispatcher runs on this handle, so its statements are counted.
      const app = await buildApp(testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }), {
        logger: false, database, revocationPollMs: NEVER_MS, reservationSweepMs: NEVER_MS, webhookPollMs: NEVER_MS,
      })
      api = new Api(app)
    })
    after(async () => {
      await api?.app.close()
      await database?.close()
      await receiver.stop()
    })
    beforeEach(async () => {
      await resetDatabase(api.app)
      receiver.reset()
      admin = await api.admin()
      owner = await api.member('owner')
      productId = (await api.product(admin, { stockQuantity: 100 })).productId
    })

    it('sends no claim after the changes of a service that has no endpoint, and claims at once when one is registered', async () => {
      // The app started on a database without endpoints: its first look found none (this runs first).
      await sleep(SETTLE_MS)
      statements.length = 0
      const first = await api.order(owner, [{ productId, quantity: 1 }])
      const cancelled = await api.inject({ method: 'PATCH', url: `/api/v1/orders/${first.orderId}/cancel`, headers: owner.headers })
      assert.equal(cancelled.statusCode, 200, cancelled.body)
      await api.order(owner, [{ productId, quantity: 2 }])
      await sleep(SETTLE_MS)
      assert.deepEqual(statements.filter(isClaim), [], 'no claim while no endpoint is active')
      assert.ok(statements.length >= 3, 'the changes themselves were counted')

      const res = await api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })
      assert.equal(res.statusCode, 201, res.body)
      receiver.secrets = [res.json().data.secret]
      const placed = await api.order(owner, [{ productId, quantity: 1 }])
      // The poll is off: only the wake-up after this create can have sent it.
      await eventually(() => receiver.received.length === 1, 'the event delivered without the poll')
      assert.equal(receiver.received[0]!.event.orderId, placed.orderId)
      assert.equal(receiver.received[0]!.event.type, 'order.placed')
      assert.ok(statements.some(isClaim), 'claimed once an endpoint was registered')
    })

    it('claims at once after an endpoint is enabled through PATCH on an instance that saw none active', async () => {
      const created = await api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })
      assert.equal(created.statusCode, 201, created.body)
      const endpoint = created.json().data as { endpointId: number, secret: string }
      receiver.secrets = [endpoint.secret]
      const url = `${BASE}/${endpoint.endpointId}`
      const disabled = await api.inject({ method: 'PATCH', url, headers: admin.headers, payload: { status: 'DISABLED' } })
      assert.equal(disabled.statusCode, 200, disabled.body)
      // A second instance starts now: its first look finds no active endpoint, and its poll is off.
      const other = new Api(await buildApp(testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }), {
        logger: false, database, revocationPollMs: NEVER_MS, reservationSweepMs: NEVER_MS, webhookPollMs: NEVER_MS,
      }))
      try {
        await sleep(SETTLE_MS)
        const before = await other.order(owner, [{ productId, quantity: 1 }])
        await sleep(SETTLE_MS)
        assert.equal(receiver.received.length, 0, 'nothing to send while the endpoint is disabled')
        assert.ok(before.orderId > 0)
        const enabled = await other.inject({ method: 'PATCH', url, headers: admin.headers, payload: { status: 'ACTIVE' } })
        assert.equal(enabled.statusCode, 200, enabled.body)
        const placed = await other.order(owner, [{ productId, quantity: 1 }])
        await eventually(() => receiver.received.length === 1, 'the event delivered without the poll')
        assert.equal(receiver.received[0]!.event.orderId, placed.orderId)
        assert.equal(receiver.received[0]!.event.type, 'order.placed')
      } finally {
        await other.app.close()
      }
    })

    it('claims at once after a delivery is retried on an instance that saw no endpoint active', async () => {
      // Two instances with a short retry schedule and the poll off: `first` fails the delivery out.
      const config = testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '50ms' })
      const options: BuildOptions = { logger: false, database, revocationPollMs: NEVER_MS, reservationSweepMs: NEVER_MS, webhookPollMs: NEVER_MS }
      const first = new Api(await buildApp(config, options))
      let firstOpen = true
      let other: Api | undefined
      try {
        receiver.respond = () => 500
        const created = await first.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })
        assert.equal(created.statusCode, 201, created.body)
        const endpoint = created.json().data as { endpointId: number, secret: string }
        receiver.secrets = [endpoint.secret]
        const url = `${BASE}/${endpoint.endpointId}`
        await first.order(owner, [{ productId, quantity: 1 }])
        const delivery = async () => (await first.get(`${url}/deliveries`, {}, admin)).json().data.content[0] as { deliveryId: number, status: string }
        await eventually(async () => (await delivery()).status === 'FAILED', 'the delivery FAILED after its schedule')
        assert.equal(receiver.received.length, 2)
        const { deliveryId } = await delivery()

        // The second instance starts while the endpoint is disabled: its first look finds none active.
        const disabled = await first.inject({ method: 'PATCH', url, headers: admin.headers, payload: { status: 'DISABLED' } })
        assert.equal(disabled.statusCode, 200, disabled.body)
        other = new Api(await buildApp(config, options))
        await sleep(SETTLE_MS)
        const enabled = await first.inject({ method: 'PATCH', url, headers: admin.headers, payload: { status: 'ACTIVE' } })
        assert.equal(enabled.statusCode, 200, enabled.body)
        await first.app.close() // only the second instance is left to send the retry
        firstOpen = false

        receiver.respond = () => 204
        const retried = await other.inject({ method: 'PATCH', url: `/api/v1/admin/webhook-deliveries/${deliveryId}/retry`, headers: admin.headers })
        assert.equal(retried.statusCode, 200, retried.body)
        await eventually(() => receiver.received.length === 3, 'the retried delivery sent without the poll')
        assert.equal(receiver.received[2]!.id, receiver.received[0]!.id)
      } finally {
        if (firstOpen) await first.app.close()
        await other?.app.close()
      }
    })
  })
}

/**
 * Holds the result of the dispatcher's look for active endpoints (`hasActiveEndpoint`) until
 * released: the look has run in the database, but its answer has not reached the dispatcher yet.
 */
function holdEndpointLook () {
  const looks = new WeakSet<object>()
  let seen!: () => void
  const held = new Promise<void>(resolve => { seen = resolve })
  let release!: () => void
  const released = new Promise<void>(resolve => { release = resolve })
  const plugin: KyselyPlugin = {
    transformQuery ({ node, queryId }) {
      const text = JSON.stringify(node, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value)
      if (node.kind === 'SelectQueryNode' && text.includes('"webhook_endpoints"') && text.includes('"active"')) looks.add(queryId)
      return node
    },
    async transformResult ({ result, queryId }) {
      if (looks.has(queryId)) {
        seen()
        await released
      }
      return result
    },
  }
  return { plugin, held, release }
}

// A look for active endpoints that read the table before an endpoint was registered here, and
// answers after, must not turn the claims after changes off again. On PostgreSQL the look runs on
// its own connection while the registration commits on another; the embedded database runs one
// statement at a time, so holding the look's answer would hold the registration too.
describe('the webhook dispatcher when its look for endpoints answers after one was registered [postgres]', {
  skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (the look and the registration on two connections)',
}, () => {
  let database: DatabaseHandle
  let api: Api | undefined
  const receiver = new Receiver()

  before(async () => {
    await receiver.start()
    database = await createTestDatabase('postgres')
  })
  after(async () => {
    await api?.app.close()
    await database?.close()
    await receiver.stop()
  })

  it('keeps claiming after changes when the stale answer "none active" arrives', async () => {
    const look = holdEndpointLook()
    // The poll is off: the look made at start-up is the only one, and it is held once it has read.
    const app = await buildApp(testConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }), {
      logger: false,
      database: { ...database, db: database.db.withPlugin(look.plugin) },
      revocationPollMs: NEVER_MS,
      reservationSweepMs: NEVER_MS,
      webhookPollMs: NEVER_MS,
    })
    api = new Api(app)
    await look.held // it found no endpoint: there was none when it ran

    const admin = await api.admin()
    const owner = await api.member('owner')
    const { productId } = await api.product(admin, { stockQuantity: 100 })
    const res = await api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url } })
    assert.equal(res.statusCode, 201, res.body)
    receiver.secrets = [res.json().data.secret]

    look.release()
    await sleep(SETTLE_MS) // the stale answer has reached the dispatcher
    const placed = await api.order(owner, [{ productId, quantity: 1 }])
    // Only the wake-up after this create can send it: no poll runs.
    await eventually(() => receiver.received.length === 1, 'the event delivered without the poll')
    assert.equal(receiver.received[0]!.event.orderId, placed.orderId)
    assert.equal(receiver.received[0]!.event.type, 'order.placed')
  })
})
