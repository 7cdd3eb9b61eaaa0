import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { assertError, describeEachBackend, successData, type Api, type Member } from '../helper.js'
import { Receiver, eventually, type Received, type Responder } from './receiver.js'

// CONTRACT §12 "Delivery": Standard Webhooks to a real receiver, every signature verified by the
// reference `standardwebhooks` package (never by our own signing code).

const BASE = '/api/v1/admin/webhook-endpoints'
const SCHEDULE = [100, 200]

interface Delivery {
  deliveryId: number
  endpointId: number
  eventId: number
  eventType: string
  status: string
  attempts: number
  lastAttemptAt: string | null
  nextAttemptAt: string | null
  lastResponseStatus: number | null
  lastError: string | null
}

describeEachBackend('webhook delivery', (ctx) => {
  const receiver = new Receiver()
  before(() => receiver.start())
  after(() => receiver.stop())

  const patch = (url: string, who: Member, payload?: object) =>
    ctx.api.inject({ method: 'PATCH', url, headers: who.headers, ...(payload ? { payload } : {}) })

  async function setUp (fields: Record<string, unknown> = {}) {
    receiver.reset()
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin, { price: 500, stockQuantity: 100 })
    const res = await ctx.api.inject({ method: 'POST', url: BASE, headers: admin.headers, payload: { url: receiver.url, ...fields } })
    assert.equal(res.statusCode, 201, res.body)
    const endpoint = res.json().data as { endpointId: number, secret: string }
    receiver.secrets = [endpoint.secret]
    const order = () => ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
    return { admin, owner, endpoint, order, url: `${BASE}/${endpoint.endpointId}` }
  }

  async function deliveries (api: Api, admin: Member, url: string, query: Record<string, string> = {}): Promise<Delivery[]> {
    return successData<{ content: Delivery[] }>(await api.get(`${url}/deliveries`, { size: 100, ...query }, admin)).content
  }

  // That the attempt follows the commit at once (woken, not polled: CONTRACT §12 "within 1 s") is shown
  // by test/webhooks/quiet.test.ts with the poll turned off; a bound on the time here would only
  // measure how busy the machine is.
  it('POSTs the event after its commit, signed, with the Standard Webhooks headers', async () => {
    const s = await setUp()
    const committed = Date.now()
    const order = await s.order()
    await eventually(() => receiver.received.length === 1, 'the delivery')
    const [got] = receiver.received as [Received]
    assert.ok(got.at >= committed)
    // By id: the feed may hold an event back while any transaction on the server is open.
    const feed = [{ eventId: got.event.eventId }]
    assert.equal(got.event.orderId, order.orderId)
    const event = successData(await ctx.api.get(`/api/v1/admin/events/${feed[0]!.eventId}`, {}, s.admin))
    assert.deepEqual(got.event, event)
    assert.equal(got.body, JSON.stringify(event))
    assert.equal(got.id, String(feed[0]!.eventId))
    // webhook-timestamp is the time of sending, in whole seconds.
    assert.ok(got.timestamp >= Math.floor(committed / 1000) && got.timestamp <= got.at / 1000, `${got.timestamp}`)
    assert.match(got.signature, /^v1,[A-Za-z0-9+/]{43}=$/)
    assert.equal(got.headers['content-type'], 'application/json')
    assert.equal(got.headers['user-agent'], 'order-service/0.1.0')
    assert.deepEqual(receiver.refused, [])

    await eventually(async () => (await deliveries(ctx.api, s.admin, s.url))[0]?.status === 'SUCCEEDED')
    const [delivery] = await deliveries(ctx.api, s.admin, s.url)
    assert.match(String(delivery!.lastAttemptAt), /Z$/)
    assert.deepEqual(delivery, {
      deliveryId: delivery!.deliveryId,
      endpointId: s.endpoint.endpointId,
      eventId: feed[0]!.eventId,
      eventType: 'order.placed',
      status: 'SUCCEEDED',
      attempts: 1,
      lastAttemptAt: delivery!.lastAttemptAt,
      nextAttemptAt: null,
      lastResponseStatus: 204,
      lastError: null,
    })
    const metrics = (await ctx.api.get('/actuator/prometheus')).body
    assert.match(metrics, /^webhook_deliveries_total\{outcome="success"\} [1-9]\d*$/m)
    assert.match(metrics, /^webhook_delivery_seconds_count [1-9]\d*$/m)
    assert.match(metrics, /^events_undelivered 0$/m)
  })

  it('retries on WEBHOOK_RETRY_SCHEDULE with the same webhook-id, then FAILED; a manual retry sends it again', async () => {
    const s = await setUp()
    receiver.respond = () => ({ status: 500, body: 'boom\nline two' })
    await s.order()
    await eventually(async () => (await deliveries(ctx.api, s.admin, s.url))[0]?.status === 'FAILED', 'FAILED after the schedule')
    assert.equal(receiver.received.length, 3)
    assert.equal(new Set(receiver.received.map(r => r.id)).size, 1)
    const gaps = [receiver.received[1]!.at - receiver.received[0]!.at, receiver.received[2]!.at - receiver.received[1]!.at]
    // Not before its step of the schedule; how much later depends on the machine's load, so it is not bounded.
    gaps.forEach((gap, i) => assert.ok(gap >= SCHEDULE[i]! - 5, `gap ${i}: ${gap} ms`))
    const [failed] = await deliveries(ctx.api, s.admin, s.url)
    assert.deepEqual({ ...failed, lastAttemptAt: null }, {
      deliveryId: failed!.deliveryId,
      endpointId: s.endpoint.endpointId,
      eventId: failed!.eventId,
      eventType: 'order.placed',
      status: 'FAILED',
      attempts: 3,
      lastAttemptAt: null,
      nextAttemptAt: null,
      lastResponseStatus: 500,
      lastError: 'retries exhausted; last: HTTP 500: boom line two',
    })
    assert.deepEqual(await deliveries(ctx.api, s.admin, s.url, { status: 'PENDING' }), [])

    receiver.respond = () => 200
    const retry = `/api/v1/admin/webhook-deliveries/${failed!.deliveryId}/retry`
    const asked = Date.now()
    const queued = successData<Delivery>(await patch(retry, s.admin))
    const answered = Date.now()
    assert.equal(queued.status, 'PENDING')
    assert.equal(queued.attempts, 3)
    // Due now: while the retry was being answered (a millisecond of rounding either side).
    const due = Date.parse(queued.nextAttemptAt!)
    assert.ok(due >= asked - 1 && due <= answered + 1, `${queued.nextAttemptAt} not within ${new Date(asked).toISOString()}..${new Date(answered).toISOString()}`)
    await eventually(async () => (await deliveries(ctx.api, s.admin, s.url))[0]?.status === 'SUCCEEDED')
    assert.equal((await deliveries(ctx.api, s.admin, s.url))[0]!.attempts, 4)
    assert.equal(receiver.received.length, 4)
    assert.equal(receiver.received[3]!.id, receiver.received[0]!.id)
    assert.match((await ctx.api.get('/actuator/prometheus')).body, /^webhook_deliveries_total\{outcome="failure"\} [3-9]\d*$|^webhook_deliveries_total\{outcome="failure"\} \d{2,}$/m)
  })

  it('honours Retry-After on 429 up to the next step, and does not follow redirects', async () => {
    const s = await setUp()
    let calls = 0
    receiver.respond = (): ReturnType<Responder> => {
      calls++
      if (calls === 1) return { status: 302, headers: { location: receiver.url } }
      return calls === 2 ? { status: 429, headers: { 'retry-after': '3600' } } : 204
    }
    await s.order()
    await eventually(() => receiver.succeeded.length === 1)
    assert.deepEqual(receiver.received.map(r => r.answered), [302, 429, 204])
    // 3600 s asked, capped at the next step (200 ms, +10% jitter at most).
    assert.ok(receiver.received[2]!.at - receiver.received[1]!.at < 200 * 1.1 + 600)
  })

  it('a 410 Gone fails the delivery at once and disables the endpoint, which then gets nothing; retry is 409', async () => {
    const s = await setUp()
    receiver.respond = () => ({ status: 410, body: 'gone' })
    await s.order()
    await eventually(async () => successData<{ status: string }>(await ctx.api.get(s.url, {}, s.admin)).status === 'DISABLED')
    const [gone] = await deliveries(ctx.api, s.admin, s.url)
    assert.deepEqual([gone!.status, gone!.attempts, gone!.lastResponseStatus, gone!.lastError], ['FAILED', 1, 410, 'HTTP 410: gone'])
    receiver.respond = () => 204
    await s.order()
    await new Promise(resolve => setTimeout(resolve, 500))
    assert.equal(receiver.received.length, 1)
    assert.equal((await deliveries(ctx.api, s.admin, s.url)).length, 1)
    const retry = `/api/v1/admin/webhook-deliveries/${gone!.deliveryId}/retry`
    assertError(await patch(retry, s.admin), {
      code: 'WEBHOOK_ENDPOINT_DISABLED',
      instance: retry,
      detail: `The endpoint of delivery ${gone!.deliveryId} is disabled; enable it (PATCH status ACTIVE) before retrying.`,
    })
  })

  it('disabling or deleting an endpoint stops its PENDING deliveries as FAILED, and it gets nothing new', async () => {
    const s = await setUp()
    receiver.respond = () => 503
    await s.order()
    await eventually(() => receiver.received.length >= 1)
    assert.equal(successData<{ status: string }>(await patch(s.url, s.admin, { status: 'DISABLED' })).status, 'DISABLED')
    const [stopped] = await deliveries(ctx.api, s.admin, s.url)
    assert.deepEqual([stopped!.status, stopped!.lastError, stopped!.nextAttemptAt], ['FAILED', 'endpoint disabled', null])
    receiver.respond = () => 204
    const seen = receiver.received.length
    await s.order()
    await new Promise(resolve => setTimeout(resolve, 500))
    assert.equal(receiver.received.length, seen)

    // Enabled again: only events committed from then on.
    assert.equal(successData<{ status: string }>(await patch(s.url, s.admin, { status: 'ACTIVE' })).status, 'ACTIVE')
    const later = await s.order()
    await eventually(() => receiver.received.length === seen + 1)
    assert.equal(receiver.received.at(-1)!.event.orderId, later.orderId)

    receiver.respond = () => 500
    await s.order()
    await eventually(() => receiver.received.length >= seen + 2)
    const endpointId = s.endpoint.endpointId
    assert.equal((await patch(`${s.url}/delete`, s.admin)).statusCode, 200)
    const rows = await ctx.api.app.db.selectFrom('webhook_deliveries').select(['status', 'last_error']).where('endpoint_id', '=', endpointId).orderBy('id', 'desc').execute()
    assert.deepEqual(rows[0], { status: 'FAILED', last_error: 'endpoint deleted' })
    const count = receiver.received.length
    await s.order()
    await new Promise(resolve => setTimeout(resolve, 500))
    assert.equal(receiver.received.length, count)
  })

  it('after a rotation signs with the new and the old secret, each signature verifying with its own', async () => {
    const s = await setUp()
    const rotated = successData<{ secret: string }>(await patch(`${s.url}/rotate-secret`, s.admin))
    receiver.secrets = [rotated.secret]
    await s.order()
    await eventually(() => receiver.received.length === 1)
    const got = receiver.received[0]!
    const signatures = got.signature.split(' ')
    assert.equal(signatures.length, 2)
    const headers = (signature: string) => ({ 'webhook-id': got.id, 'webhook-timestamp': String(got.timestamp), 'webhook-signature': signature })
    assert.doesNotThrow(() => new Webhook(rotated.secret).verify(got.body, headers(signatures[0]!)))
    assert.doesNotThrow(() => new Webhook(s.endpoint.secret).verify(got.body, headers(signatures[1]!)))
    assert.throws(() => new Webhook(s.endpoint.secret).verify(got.body, headers(signatures[0]!)))
    assert.throws(() => new Webhook(rotated.secret).verify(got.body, headers(signatures[1]!)))
    // A receiver still holding the old secret keeps verifying the whole header.
    assert.doesNotThrow(() => new Webhook(s.endpoint.secret).verify(got.body, headers(got.signature)))

    // After 24 h only the new secret signs.
    await ctx.api.app.db.updateTable('webhook_endpoints').set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).execute()
    await s.order()
    await eventually(() => receiver.received.length === 2)
    assert.equal(receiver.received[1]!.signature.split(' ').length, 1)
    const second = receiver.received[1]!
    assert.doesNotThrow(() => new Webhook(rotated.secret).verify(second.body, { 'webhook-id': second.id, 'webhook-timestamp': String(second.timestamp), 'webhook-signature': second.signature }))
  })

  it('holds an order’s later events while an earlier one is failing, and other orders do not wait', async () => {
    const s = await setUp()
    const first = await s.order()
    let failures = 0
    // Order `first`: its order.placed fails twice (attempts on the schedule), then succeeds.
    receiver.respond = (event) => event.orderId === first.orderId && event.sequence === 1 && failures++ < 2 ? 500 : 204
    assert.equal((await patch(`/api/v1/orders/${first.orderId}/confirm`, s.owner)).statusCode, 200)
    const other = await s.order()
    await eventually(() => receiver.succeeded.filter(r => r.event.orderId === first.orderId).length === 3, 'the first order’s three events')
    const firstOrder = receiver.received.filter(r => r.event.orderId === first.orderId)
    assert.deepEqual(firstOrder.map(r => [r.event.sequence, r.answered]), [[1, 500], [1, 500], [1, 204], [2, 204], [3, 204]])
    const otherAt = receiver.received.find(r => r.event.orderId === other.orderId)!.at
    assert.ok(otherAt < firstOrder[2]!.at, 'the other order was delivered while the first was still failing')
  })

  it('a FAILED event no longer blocks the events after it', async () => {
    const s = await setUp()
    const first = await s.order()
    receiver.respond = (event) => event.sequence === 1 ? 500 : 204
    assert.equal((await patch(`/api/v1/orders/${first.orderId}/confirm`, s.owner)).statusCode, 200)
    await eventually(() => receiver.succeeded.length === 2)
    assert.deepEqual(receiver.received.map(r => [r.event.sequence, r.answered]), [[1, 500], [1, 500], [1, 500], [2, 204], [3, 204]])
    const statuses = async () => JSON.stringify((await deliveries(ctx.api, s.admin, s.url)).map(d => [d.eventType, d.status]))
    await eventually(async () => await statuses() === JSON.stringify([['order.confirmed', 'SUCCEEDED'], ['payment.created', 'SUCCEEDED'], ['order.placed', 'FAILED']]), 'the final statuses')
  })

  it('a slow endpoint holds only its own slots: another endpoint gets all its events meanwhile', async () => {
    const s = await setUp()
    // A second endpoint whose receiver never answers: its attempts hang until WEBHOOK_TIMEOUT (30 s here).
    const slow = await new Receiver().start()
    try {
      slow.respond = () => ({ status: 204, delayMs: 120_000 })
      const res = await ctx.api.inject({ method: 'POST', url: BASE, headers: s.admin.headers, payload: { url: slow.url } })
      assert.equal(res.statusCode, 201, res.body)
      slow.secrets = [res.json().data.secret]
      // More orders than the attempts one instance has in flight at once (256): were the slow
      // endpoint allowed all of them, the fast one would wait for its timeouts.
      const orders = 270
      const product = await ctx.api.product(s.admin, { price: 500, stockQuantity: orders })
      for (let i = 0; i < orders; i++) await ctx.api.order(s.owner, [{ productId: product.productId, quantity: 1 }])
      await eventually(() => receiver.succeeded.length === orders, 'every event at the answering endpoint')
      assert.equal(slow.received.length, 0)
      assert.equal((await patch(`${BASE}/${res.json().data.endpointId}/delete`, s.admin)).statusCode, 200)
    } finally {
      await slow.stop()
    }
  })

  it('sends only the event types an endpoint takes', async () => {
    const s = await setUp({ eventTypes: ['order.confirmed'] })
    const order = await s.order()
    assert.equal((await patch(`/api/v1/orders/${order.orderId}/confirm`, s.owner)).statusCode, 200)
    await eventually(() => receiver.received.length === 1)
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.deepEqual(receiver.received.map(r => r.event.type), ['order.confirmed'])
  })
}, { env: { MAX_UNPAID_ORDERS: '0', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT: '30s', WEBHOOK_RETRY_SCHEDULE: SCHEDULE.map(ms => `${ms}ms`).join(',') } }) // no unpaid-order limit: one member places many orders
