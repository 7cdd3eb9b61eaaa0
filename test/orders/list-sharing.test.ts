import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { Api, BACKENDS, createTestDatabase, testConfig, type Member } from '../helper.js'

/** Background jobs would send statements of their own during a request; these tests keep them quiet. */
const NEVER_MS = 2_000_000_000

/** The shared first-page statement (src/orders/repository.ts `readFirstPages`). */
const isSharedList = (text: string) => text.includes('from unnest(') && text.includes('cross join lateral')
/** Any other statement that reads a list of orders. */
const isOwnList = (text: string) => text.startsWith('select "id", "customer_id", "status", "item_count"') && text.includes('from "orders"')

/**
 * Members' first pages asked for together share one statement (issue 22 part 4), and each member
 * still gets exactly their own orders: a regression to one statement per list, or a page with
 * another member's rows, fails here.
 */
for (const backend of BACKENDS) {
  describe(`first pages of order lists share a statement [${backend}]`, () => {
    let database: DatabaseHandle
    let api: Api
    let members: Member[]
    /** Each member's order ids, newest first. */
    const placed = new Map<number, number[]>()
    let sent: string[] = []

    before(async () => {
      const onStatement = (text: string) => { sent.push(text) }
      database = await createTestDatabase(backend, { onStatement })
      const app = await buildApp(testConfig(), { logger: false, database, revocationPollMs: NEVER_MS, reservationSweepMs: NEVER_MS })
      api = new Api(app)
      const admin = await api.admin()
      const { productId } = await api.product(admin, { stockQuantity: 1000 })
      members = []
      // 0 to 5 orders each, placed in turns so that the members' orders interleave.
      for (let i = 0; i < 6; i++) members.push(await api.member(`lister${i}`))
      for (let round = 0; round < 5; round++) {
        for (const [i, member] of members.entries()) {
          if (i <= round) continue
          const order = await api.order(member, [{ productId, quantity: round + 1 }])
          placed.set(member.id, [order.orderId, ...placed.get(member.id) ?? []])
        }
      }
    })
    after(async () => {
      await api?.app.close()
      await database?.close()
    })

    /** The answers to `url` for each member, sent together, and the list statements they cost. */
    async function together (requests: Array<{ member: Member, url: string }>) {
      sent = []
      const answers = await Promise.all(requests.map(({ member, url }) => api.inject({ url, headers: member.headers })))
      for (const res of answers) assert.equal(res.statusCode, 200, res.body)
      return { answers, shared: sent.filter(isSharedList).length, own: sent.filter(isOwnList).length }
    }

    it('reads the first pages that members ask for together with one statement, each member getting their own', async () => {
      const alone = []
      for (const member of members) alone.push((await together([{ member, url: '/api/v1/orders?size=3' }])).answers[0]!.body)

      const { answers, shared, own } = await together(members.map(member => ({ member, url: '/api/v1/orders?size=3' })))
      // Requests that arrive in the same turn of the event loop share; on a loaded machine a request's
      // authentication may end a turn later, so the bound is "most of them shared", not exactly one.
      assert.ok(shared >= 1 && shared <= members.length / 2, `${members.length} first pages in ${shared} statements`)
      assert.equal(own, 0)
      for (const [i, member] of members.entries()) {
        assert.equal(answers[i]!.body, alone[i], `member ${i}: the same answer as when asking alone`)
        const slice = answers[i]!.json().data as { content: Array<{ orderId: number, customerId: number }>, hasNext: boolean }
        const expected = placed.get(member.id) ?? []
        assert.deepEqual(slice.content.map(order => order.orderId), expected.slice(0, 3), `member ${i}: their own orders, newest first`)
        assert.ok(slice.content.every(order => order.customerId === member.id))
        assert.equal(slice.hasNext, expected.length > 3)
      }
    })

    it('shares only between first pages of the same size and no filter; any other list runs alone', async () => {
      const [a, b, c] = [members[5]!, members[4]!, members[3]!]
      const { answers, shared, own } = await together([
        { member: a, url: '/api/v1/orders?size=2' },
        { member: b, url: '/api/v1/orders?size=2' },
        { member: a, url: '/api/v1/orders?size=2' },
        { member: c, url: '/api/v1/orders?size=4' },
        { member: b, url: '/api/v1/orders?size=2&status=PLACED' },
        { member: c, url: '/api/v1/orders?size=2&page=1' },
      ])
      // The three pages of 2 share (in one statement, or two if one arrives a turn late); the page of 4 cannot join them.
      assert.ok(shared === 2 || shared === 3, `the pages of 2 and the page of 4 in ${shared} statements`)
      assert.equal(own, 2, 'the filtered list and the second page each run their own')
      const ids = answers.map(res => (res.json().data.content as Array<{ orderId: number }>).map(order => order.orderId))
      assert.deepEqual(ids, [
        placed.get(a.id)!.slice(0, 2),
        placed.get(b.id)!.slice(0, 2),
        placed.get(a.id)!.slice(0, 2),
        placed.get(c.id)!.slice(0, 4),
        placed.get(b.id)!.slice(0, 2),
        placed.get(c.id)!.slice(2, 4),
      ])
      assert.equal(answers[0]!.body, answers[2]!.body)
    })
  })
}
