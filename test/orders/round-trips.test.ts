import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { Api, BACKENDS, assertError, createTestDatabase, resetDatabase, testConfig, type Member } from '../helper.js'

/** Background jobs would send statements of their own during a request; these tests keep them quiet. */
const NEVER_MS = 2_000_000_000
const COUNT_HEADER = 'x-test-count-statements'

/** The statements a request sent, while it is `open` (until its answer is sent). */
interface Counted { sent: string[], open: boolean }

/**
 * What a create costs the database, counted in statements (each one round trip, BEGIN and COMMIT
 * included): a new order is one statement (issue 22), so that a later change cannot quietly add one
 * back. Only the statements sent on the request's behalf count (those made in its async context,
 * which a hook enters for requests that carry a test header), whatever background jobs (the webhook
 * dispatcher's poll) send meanwhile.
 */
for (const backend of BACKENDS) {
  describe(`the statements a create sends [${backend}]`, () => {
    const request = new AsyncLocalStorage<Counted>()
    /** The requests being counted, by the value of their COUNT_HEADER. */
    const counting = new Map<string, Counted>()
    let database: DatabaseHandle
    let api: Api
    let member: Member
    let productId: number

    before(async () => {
      const onStatement = (text: string) => {
        const counted = request.getStore()
        if (counted?.open) counted.sent.push(text)
      }
      database = await createTestDatabase(backend, { onStatement })
      const app = await buildApp(testConfig(), { logger: false, database, revocationPollMs: NEVER_MS, reservationSweepMs: NEVER_MS })
      app.addHook('onRequest', (req, _reply, done) => {
        const counted = counting.get(String(req.headers[COUNT_HEADER]))
        if (counted) request.run(counted, done)
        else done()
      })
      // What runs once the answer is on its way is not the request's cost: the webhook dispatcher,
      // woken after every change, polls in the request's async context.
      app.addHook('onSend', async (req) => {
        const counted = counting.get(String(req.headers[COUNT_HEADER]))
        if (counted) counted.open = false
      })
      api = new Api(app)
    })
    after(async () => {
      await api?.app.close()
      await database?.close()
    })
    beforeEach(async () => {
      await resetDatabase(api.app)
      const admin = await api.admin()
      member = await api.member()
      productId = (await api.product(admin, { stockQuantity: 10 })).productId
    })

    /** The response to POST /api/v1/orders, and the statements sent while it was answered. */
    async function post (items: Array<{ productId: number, quantity: number }>, key?: string): Promise<[LightMyRequestResponse, string[]]> {
      const sent: string[] = []
      const id = String(counting.size)
      counting.set(id, { sent, open: true })
      const res = await api.inject({
        method: 'POST',
        url: '/api/v1/orders',
        headers: { ...member.headers, [COUNT_HEADER]: id, ...(key === undefined ? {} : { 'Idempotency-Key': key }) },
        payload: { customerId: member.id, items },
      })
      return [res, sent]
    }

    it('places an order with an idempotency key in one statement', async () => {
      const [res, sent] = await post([{ productId, quantity: 2 }], 'one-trip')
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(sent.length, 1, sent.join('\n---\n'))
      assert.equal(await api.stockOf(productId), 8)
    })

    it('places an order without a key in one statement', async () => {
      const [res, sent] = await post([{ productId, quantity: 2 }])
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(sent.length, 1, sent.join('\n---\n'))
    })

    it('replays in one statement, and refuses a different body with 422 in one', async () => {
      const [first] = await post([{ productId, quantity: 2 }], 'again')
      const [replay, sent] = await post([{ productId, quantity: 2 }], 'again')
      assert.equal(replay.statusCode, 200, replay.body)
      assert.deepEqual(replay.json(), first.json())
      assert.equal(sent.length, 1, sent.join('\n---\n'))

      const [reused, sentForReused] = await post([{ productId, quantity: 3 }], 'again')
      assert.equal(reused.statusCode, 422, reused.body)
      assert.equal(sentForReused.length, 1, sentForReused.join('\n---\n'))
      assert.equal(await api.stockOf(productId), 8)
    })

    it('refuses insufficient stock in one statement, and with a key in two (the second looks for a key claimed meanwhile)', async () => {
      const detail = `Not enough stock, nothing was reserved (product ${productId}: 11 requested, 10 in stock).`
      const [unkeyed, sentUnkeyed] = await post([{ productId, quantity: 11 }])
      assertError(unkeyed, { code: 'INSUFFICIENT_STOCK', instance: '/api/v1/orders', detail })
      assert.equal(sentUnkeyed.length, 1, sentUnkeyed.join('\n---\n'))

      const [keyed, sentKeyed] = await post([{ productId, quantity: 11 }], 'too-many')
      assertError(keyed, { code: 'INSUFFICIENT_STOCK', instance: '/api/v1/orders', detail })
      assert.equal(sentKeyed.length, 2, sentKeyed.join('\n---\n'))
      assert.equal(await api.stockOf(productId), 10)
    })
  })
}
