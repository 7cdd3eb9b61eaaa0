import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { purgeExpiredKeys } from '../../src/idempotency/repository.js'
import { Api, assertError, describeEachBackend, errorBody, testConfig, type Member } from '../helper.js'

const ORDERS = '/api/v1/orders'
const REQUEST_INVALID = 'The request has invalid parameters.'
const BODY_INVALID = 'The request body has invalid parameters.'
const MALFORMED_KEY = 'must be 1 to 255 printable ASCII characters'
const REUSED = 'This idempotency key was already used with a different request body.'
const HOUR = 3_600_000

type Ctx = { readonly api: Api }

/** POST /api/v1/orders as `member`, with the key in the Idempotency-Key header when given. A string payload is sent as is. */
function post (ctx: Ctx, member: Member, payload: Record<string, unknown> | string, key?: string): Promise<LightMyRequestResponse> {
  return ctx.api.inject({
    method: 'POST',
    url: ORDERS,
    headers: {
      ...member.headers,
      ...(key === undefined ? {} : { 'Idempotency-Key': key }),
      ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}),
    },
    payload,
  })
}

async function rows (ctx: Ctx, table: 'orders' | 'order_history' | 'idempotency_keys'): Promise<number> {
  const row = await ctx.api.app.db.selectFrom(table).select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

async function storedKeys (ctx: Ctx): Promise<string[]> {
  const keys = await ctx.api.app.db.selectFrom('idempotency_keys').select('key').orderBy('key').execute()
  return keys.map(row => row.key)
}

/** A member, a product with 100 in stock and an order body for one of it. */
async function setUp (ctx: Ctx) {
  const admin = await ctx.api.admin()
  const member = await ctx.api.member()
  const beans = await ctx.api.product(admin, { price: 1250, stockQuantity: 100 })
  const body = { customerId: member.id, items: [{ productId: beans.productId, quantity: 2 }] }
  return { admin, member, beans, body }
}

/** The first response was a fresh 201, the second its replay: 200, same body and Location, Idempotent-Replayed. */
function assertReplayOf (replay: LightMyRequestResponse, first: LightMyRequestResponse): void {
  assert.equal(first.statusCode, 201, first.body)
  assert.equal(first.headers['idempotent-replayed'], undefined)
  assert.equal(replay.statusCode, 200, replay.body)
  assert.equal(replay.headers['idempotent-replayed'], 'true')
  assert.match(String(replay.headers['content-type']), /^application\/json/)
  assert.equal(replay.headers.location, first.headers.location)
  assert.equal(first.headers.etag, `"${first.json().data.version}"`)
  assert.equal(replay.headers.etag, first.headers.etag)
  assert.equal(replay.headers.location, `${ORDERS}/${first.json().data.orderId}`)
  assert.deepEqual(replay.json(), first.json())
}

describeEachBackend('idempotency keys on POST /api/v1/orders', (ctx) => {
  it('replays a repeat with the same Idempotency-Key header and body: 200, identical body and Location, Idempotent-Replayed, stock reserved once', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'key-1')
    const repeat = await post(ctx, member, body, 'key-1')
    assertReplayOf(repeat, first)
    const third = await post(ctx, member, body, 'key-1')
    assertReplayOf(third, first)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
    assert.equal(await rows(ctx, 'orders'), 1)
    assert.equal(await rows(ctx, 'order_history'), 1)
  })

  it('replays a repeat with the same idempotencyKey in the body the same way', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, { ...body, idempotencyKey: 'body-key' })
    const repeat = await post(ctx, member, { ...body, idempotencyKey: 'body-key' })
    assertReplayOf(repeat, first)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('accepts the same key in the header and the body at once', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, { ...body, idempotencyKey: 'both' }, 'both')
    const repeat = await post(ctx, member, { ...body, idempotencyKey: 'both' }, 'both')
    assertReplayOf(repeat, first)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
  })

  it('places a new order for every request without a key', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body)
    const second = await post(ctx, member, body)
    assert.deepEqual([first.statusCode, second.statusCode], [201, 201])
    assert.notEqual(first.json().data.orderId, second.json().data.orderId)
    assert.equal(second.headers['idempotent-replayed'], undefined)
    assert.equal(await ctx.api.stockOf(beans.productId), 96)
    assert.equal(await rows(ctx, 'idempotency_keys'), 0)
  })

  it('refuses a header key that differs from the body key with 400 naming idempotencyKey, placing nothing', async () => {
    const { member, beans, body } = await setUp(ctx)
    const res = await post(ctx, member, { ...body, idempotencyKey: 'body-key' }, 'header-key')
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: ORDERS,
      detail: REQUEST_INVALID,
      invalidParams: [{ field: 'idempotencyKey', message: 'differs from the Idempotency-Key header' }],
    })
    assert.equal(await rows(ctx, 'orders'), 0)
    assert.equal(await rows(ctx, 'idempotency_keys'), 0)
    assert.equal(await ctx.api.stockOf(beans.productId), 100)
  })

  const malformedHeaderKeys: Array<[string, string]> = [
    ['256 characters long', 'k'.repeat(256)],
    ['non-ASCII', 'ключ'],
    ['empty', ''],
    ['holding a control character', 'tab\there'],
  ]
  for (const [what, key] of malformedHeaderKeys) {
    it(`refuses an Idempotency-Key header that is ${what} with 400 naming idempotencyKey, placing nothing`, async () => {
      const { member, beans, body } = await setUp(ctx)
      const res = await post(ctx, member, body, key)
      assertError(res, {
        code: 'VALIDATION_FAILED',
        instance: ORDERS,
        detail: REQUEST_INVALID,
        invalidParams: [{ field: 'idempotencyKey', message: MALFORMED_KEY }],
      })
      assert.equal(await rows(ctx, 'orders'), 0)
      assert.equal(await ctx.api.stockOf(beans.productId), 100)
    })
  }

  for (const [what, key] of malformedHeaderKeys.slice(0, 2)) {
    it(`refuses a body idempotencyKey that is ${what} with 400 naming idempotencyKey`, async () => {
      const { member, body } = await setUp(ctx)
      const res = await post(ctx, member, { ...body, idempotencyKey: key })
      assertError(res, {
        code: 'VALIDATION_FAILED',
        instance: ORDERS,
        detail: BODY_INVALID,
        invalidParams: [{ field: 'idempotencyKey', message: 'must be 1 to 255 printable ASCII characters' }],
      })
      assert.equal(await rows(ctx, 'orders'), 0)
    })
  }

  it('accepts keys at the limits: one character, 255 characters, and every printable ASCII character', async () => {
    const { member, body } = await setUp(ctx)
    const printable = Array.from({ length: 0x7E - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('')
    for (const key of ['k', 'k'.repeat(255), printable, '123e4567-e89b-42d3-a456-426614174000']) {
      const first = await post(ctx, member, body, key)
      assert.equal(first.statusCode, 201, `${key}: ${first.body}`)
      assertReplayOf(await post(ctx, member, body, key), first)
    }
    assert.equal(await rows(ctx, 'orders'), 4)
  })

  it('fingerprints the body regardless of its key order and whitespace', async () => {
    const { member, beans } = await setUp(ctx)
    const first = await post(ctx, member,
      `{"customerId":${member.id},"items":[{"productId":${beans.productId},"quantity":2}],"memo":"ring twice"}`, 'order-of-keys')
    const repeat = await post(ctx, member,
      `{ "memo": "ring twice", "items": [ { "quantity": 2, "productId": ${beans.productId} } ], "customerId": ${member.id} }`, 'order-of-keys')
    assertReplayOf(repeat, first)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
  })

  it('leaves idempotencyKey out of the fingerprint: the key first in the header, then in the body, is a replay', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'moved-key')
    const repeat = await post(ctx, member, { ...body, idempotencyKey: 'moved-key' })
    assertReplayOf(repeat, first)
    const both = await post(ctx, member, { ...body, idempotencyKey: 'moved-key' }, 'moved-key')
    assertReplayOf(both, first)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('refuses the same key with a different body with 422 IDEMPOTENCY_KEY_REUSED, placing nothing', async () => {
    const { admin, member, beans, body } = await setUp(ctx)
    const mugs = await ctx.api.product(admin, { stockQuantity: 10 })
    const first = await post(ctx, member, body, 'reused')
    assert.equal(first.statusCode, 201, first.body)
    const variants: Array<Record<string, unknown>> = [
      { ...body, items: [{ productId: beans.productId, quantity: 3 }] },
      { ...body, items: [{ productId: mugs.productId, quantity: 2 }] },
      { ...body, memo: 'a memo now' },
    ]
    for (const variant of variants) {
      const res = await post(ctx, member, variant, 'reused')
      assertError(res, { code: 'IDEMPOTENCY_KEY_REUSED', instance: ORDERS, detail: REUSED })
      assert.equal(res.headers.location, undefined)
    }
    assert.equal(await rows(ctx, 'orders'), 1)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
    assert.equal(await ctx.api.stockOf(mugs.productId), 10)
    // The key still belongs to the first body.
    assertReplayOf(await post(ctx, member, body, 'reused'), first)
  })

  it('scopes keys by caller: two members using the same key each get their own order', async () => {
    const { member, beans, body } = await setUp(ctx)
    const other = await ctx.api.member('other')
    const mine = await post(ctx, member, body, 'shared-key')
    const theirs = await post(ctx, other, { ...body, customerId: other.id }, 'shared-key')
    assert.deepEqual([mine.statusCode, theirs.statusCode], [201, 201], theirs.body)
    assert.notEqual(mine.json().data.orderId, theirs.json().data.orderId)
    assert.equal(theirs.json().data.customerId, other.id)
    assertReplayOf(await post(ctx, member, body, 'shared-key'), mine)
    assertReplayOf(await post(ctx, other, { ...body, customerId: other.id }, 'shared-key'), theirs)
    assert.equal(await rows(ctx, 'orders'), 2)
    assert.equal(await ctx.api.stockOf(beans.productId), 96)
  })

  it('scopes keys by caller: an admin and a member sending the same key and the same body get two orders', async () => {
    const { admin, member, body } = await setUp(ctx)
    const byMember = await post(ctx, member, body, 'same-everything')
    const byAdmin = await post(ctx, admin, body, 'same-everything')
    assert.deepEqual([byMember.statusCode, byAdmin.statusCode], [201, 201], byAdmin.body)
    assert.notEqual(byMember.json().data.orderId, byAdmin.json().data.orderId)
    assert.equal(await rows(ctx, 'orders'), 2)
  })

  it('scopes keys by member, not by session: the same member logged in again gets the replay', async () => {
    const { member, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'across-sessions')
    const again = await ctx.api.login(member.email, 'correct horse')
    assert.notEqual(again.token, member.token)
    assertReplayOf(await post(ctx, again, body, 'across-sessions'), first)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('stores nothing for a request that failed with 409: after the stock is raised, a retry with the same key places the order', async () => {
    const { member, beans } = await setUp(ctx)
    const body = { customerId: member.id, items: [{ productId: beans.productId, quantity: 150 }] }
    const failed = await post(ctx, member, body, 'retry-me')
    assertError(failed, {
      code: 'INSUFFICIENT_STOCK',
      instance: ORDERS,
      detail: `Not enough stock, nothing was reserved (product ${beans.productId}: 150 requested, 100 in stock).`,
    })
    assert.equal(failed.headers['idempotent-replayed'], undefined)
    assert.equal(await rows(ctx, 'idempotency_keys'), 0)

    await ctx.api.app.db.updateTable('products').set({ stock_quantity: 200 }).where('id', '=', beans.productId).execute()
    const retry = await post(ctx, member, body, 'retry-me')
    assert.equal(retry.statusCode, 201, retry.body)
    assert.equal(retry.headers['idempotent-replayed'], undefined)
    assert.equal(await ctx.api.stockOf(beans.productId), 50)
    assertReplayOf(await post(ctx, member, body, 'retry-me'), retry)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('stores nothing for a request that failed with 400: the corrected body may reuse the key', async () => {
    const { admin, member, beans, body } = await setUp(ctx)
    const retired = await ctx.api.product(admin, { status: 'INACTIVE' })
    const failed = await post(ctx, member, { ...body, items: [{ productId: retired.productId, quantity: 1 }] }, 'fix-and-retry')
    assertError(failed, {
      code: 'VALIDATION_FAILED',
      instance: ORDERS,
      detail: 'Every item must be an active product.',
      invalidParams: [{ field: 'items[0].productId', message: 'is not an active product' }],
    })
    const fixed = await post(ctx, member, body, 'fix-and-retry')
    assert.equal(fixed.statusCode, 201, fixed.body)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
  })

  it('places exactly one order for 20 concurrent requests with one key; the others replay it (or are told it is in flight)', async () => {
    const { member, beans, body } = await setUp(ctx)
    const results = await Promise.all(Array.from({ length: 20 }, () => post(ctx, member, body, 'stampede')))
    const created = results.filter(res => res.statusCode === 201)
    assert.equal(created.length, 1, results.map(res => `${res.statusCode} ${res.body}`).join('\n'))
    const first = created[0]!
    for (const res of results) {
      if (res === first) continue
      if (res.statusCode === 409) {
        assert.deepEqual(errorBody(res), {
          type: 'https://api.example.com/errors/idempotency-key-in-flight',
          title: 'Idempotency Key In Flight',
          status: 409,
          detail: 'A request with this idempotency key is still being processed.',
          instance: ORDERS,
          code: 'IDEMPOTENCY_KEY_IN_FLIGHT',
        })
        assert.match(String(res.headers['retry-after']), /^\d+$/)
      } else {
        assertReplayOf(res, first)
      }
    }
    assert.equal(await rows(ctx, 'orders'), 1)
    assert.equal(await rows(ctx, 'idempotency_keys'), 1)
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
  })

  it('replays after its product became inactive or sold out: the key is looked at before the products and the stock (CONTRACT §14)', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'before-the-checks')
    await ctx.api.app.db.updateTable('products').set({ stock_quantity: 0 }).where('id', '=', beans.productId).execute()
    assertReplayOf(await post(ctx, member, body, 'before-the-checks'), first)
    await ctx.api.app.db.updateTable('products').set({ status: 'INACTIVE' }).where('id', '=', beans.productId).execute()
    assertReplayOf(await post(ctx, member, body, 'before-the-checks'), first)
    assertError(await post(ctx, member, { ...body, memo: 'changed' }, 'before-the-checks'),
      { code: 'IDEMPOTENCY_KEY_REUSED', instance: ORDERS, detail: REUSED })
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('answers concurrent duplicates for the last units with the replay (or in flight), never with the stock the first one took', async () => {
    const { admin, member } = await setUp(ctx)
    const last = await ctx.api.product(admin, { stockQuantity: 2 })
    const body = { customerId: member.id, items: [{ productId: last.productId, quantity: 2 }] }
    const results = await Promise.all(Array.from({ length: 20 }, () => post(ctx, member, body, 'last-two')))
    const created = results.filter(res => res.statusCode === 201)
    assert.equal(created.length, 1, results.map(res => `${res.statusCode} ${res.body}`).join('\n'))
    for (const res of results) {
      if (res === created[0]) continue
      if (res.statusCode === 409) assert.equal(res.json().error.code, 'IDEMPOTENCY_KEY_IN_FLIGHT', res.body)
      else assertReplayOf(res, created[0]!)
    }
    assert.equal(await ctx.api.stockOf(last.productId), 0)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('replays the first response even after the order has changed since', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'then-cancelled')
    const orderId = first.json().data.orderId
    const cancel = await ctx.api.inject({ method: 'PATCH', url: `${ORDERS}/${orderId}/cancel`, headers: member.headers })
    assert.equal(cancel.statusCode, 200, cancel.body)
    assert.equal(await ctx.api.stockOf(beans.productId), 100)

    const repeat = await post(ctx, member, body, 'then-cancelled')
    assertReplayOf(repeat, first)
    assert.equal(repeat.json().data.status, 'PLACED')
    assert.equal(await ctx.api.stockOf(beans.productId), 100)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('stores the key durably: one row with the scope, a SHA-256 fingerprint, the response and an expiry 24 h ahead', async () => {
    const { member, body } = await setUp(ctx)
    const before = Date.now()
    const first = await post(ctx, member, body, 'durable')
    const after = Date.now()
    const stored = await ctx.api.app.db.selectFrom('idempotency_keys').selectAll().execute()
    assert.equal(stored.length, 1)
    const row = stored[0]!
    assert.deepEqual(
      { memberId: Number(row.member_id), method: row.method, path: row.path, key: row.key, status: row.response_status, location: row.location },
      { memberId: member.id, method: 'POST', path: ORDERS, key: 'durable', status: 201, location: first.headers.location }
    )
    assert.match(row.fingerprint, /^[0-9a-f]{64}$/)
    assert.deepEqual(typeof row.response_body === 'string' ? JSON.parse(row.response_body) : row.response_body, first.json().data)
    const expiresAt = new Date(row.expires_at).getTime()
    assert.ok(expiresAt >= before + 24 * HOUR - 1000 && expiresAt <= after + 24 * HOUR + 1000,
      `expires_at ${new Date(expiresAt).toISOString()} is not 24 h after the request`)
  })

  it('stores the fingerprint as the SHA-256 of the body with its keys sorted at every level, a format stored keys depend on', async () => {
    const { member, beans } = await setUp(ctx)
    // Keys in reverse order at both levels; the body's idempotencyKey is left out.
    const body = { memo: 'ring twice', items: [{ quantity: 2, productId: beans.productId }], customerId: member.id, idempotencyKey: 'canonical' }
    assert.equal((await post(ctx, member, body)).statusCode, 201)
    const canonical = `{"customerId":${member.id},"items":[{"productId":${beans.productId},"quantity":2}],"memo":"ring twice"}`
    const [row] = await ctx.api.app.db.selectFrom('idempotency_keys').select('fingerprint').execute()
    assert.equal(row!.fingerprint, createHash('sha256').update(canonical).digest('hex'))
  })

  it('fingerprints the body without its idempotencyKey: the same body stored under two scopes has one fingerprint', async () => {
    const { admin, member, body } = await setUp(ctx)
    // The admin orders for the member with the key in the header; the member sends the same body with it in the body.
    assert.equal((await post(ctx, admin, body, 'print')).statusCode, 201)
    assert.equal((await post(ctx, member, { ...body, idempotencyKey: 'print' })).statusCode, 201)
    const prints = await ctx.api.app.db.selectFrom('idempotency_keys').select(['member_id', 'fingerprint']).execute()
    assert.equal(prints.length, 2)
    assert.equal(prints[0]!.fingerprint, prints[1]!.fingerprint)
  })

  it('replays a key on a second app instance that shares the database', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'two-instances')
    const second = new Api(await buildApp(testConfig(), {
      database: { db: ctx.api.app.db, kind: ctx.backend, close: async () => {} },
      logger: false,
    }))
    try {
      assertReplayOf(await post({ api: second }, member, body, 'two-instances'), first)
      assertError(await post({ api: second }, member, { ...body, memo: 'changed' }, 'two-instances'),
        { code: 'IDEMPOTENCY_KEY_REUSED', instance: ORDERS, detail: REUSED })
    } finally {
      await second.app.close()
    }
    assert.equal(await ctx.api.stockOf(beans.productId), 98)
    assert.equal(await rows(ctx, 'orders'), 1)
  })

  it('frees a key whose expiry has passed: the same key then places a new order, with the same or a different body', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'expired')
    await ctx.api.app.db.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 60_000) }).execute()
    const sameBody = await post(ctx, member, body, 'expired')
    assert.equal(sameBody.statusCode, 201, sameBody.body)
    assert.equal(sameBody.headers['idempotent-replayed'], undefined)
    assert.notEqual(sameBody.json().data.orderId, first.json().data.orderId)

    await ctx.api.app.db.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 60_000) }).execute()
    const otherBody = { ...body, memo: 'second thoughts' }
    const changed = await post(ctx, member, otherBody, 'expired')
    assert.equal(changed.statusCode, 201, changed.body)
    // The key now belongs to the new body, for a full TTL.
    assertReplayOf(await post(ctx, member, otherBody, 'expired'), changed)
    assertError(await post(ctx, member, body, 'expired'), { code: 'IDEMPOTENCY_KEY_REUSED', instance: ORDERS, detail: REUSED })
    const row = await ctx.api.app.db.selectFrom('idempotency_keys').select('expires_at').executeTakeFirstOrThrow()
    assert.ok(new Date(row.expires_at).getTime() > Date.now() + 23 * HOUR)
    assert.equal(await rows(ctx, 'orders'), 3)
    assert.equal(await ctx.api.stockOf(beans.productId), 94)
  })

  it('purgeExpiredKeys deletes exactly the expired keys and reports how many', async () => {
    const { member, body } = await setUp(ctx)
    for (const key of ['old-1', 'old-2', 'live']) assert.equal((await post(ctx, member, body, key)).statusCode, 201)
    await ctx.api.app.db.updateTable('idempotency_keys').set({ expires_at: new Date(Date.now() - 1000) })
      .where('key', 'in', ['old-1', 'old-2']).execute()
    assert.equal(await purgeExpiredKeys(ctx.api.app.db), 2)
    assert.deepEqual(await storedKeys(ctx), ['live'])
    assert.equal(await purgeExpiredKeys(ctx.api.app.db), 0)
    assert.equal(await rows(ctx, 'orders'), 3)
  })
})

describeEachBackend('idempotency keys with IDEMPOTENCY_TTL=1s', (ctx) => {
  it('replays within the TTL and places a new order with the same key and body after it', async () => {
    const { member, beans, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'short-lived')
    assertReplayOf(await post(ctx, member, body, 'short-lived'), first)
    await sleep(1200)
    const later = await post(ctx, member, body, 'short-lived')
    assert.equal(later.statusCode, 201, later.body)
    assert.equal(later.headers['idempotent-replayed'], undefined)
    assert.notEqual(later.json().data.orderId, first.json().data.orderId)
    assert.equal(await ctx.api.stockOf(beans.productId), 96)
  })

  it('lets the same key carry a different body once the TTL has passed', async () => {
    const { member, body } = await setUp(ctx)
    const first = await post(ctx, member, body, 'short-lived')
    assertError(await post(ctx, member, { ...body, memo: 'changed' }, 'short-lived'),
      { code: 'IDEMPOTENCY_KEY_REUSED', instance: ORDERS, detail: REUSED })
    await sleep(1200)
    const changed = await post(ctx, member, { ...body, memo: 'changed' }, 'short-lived')
    assert.equal(changed.statusCode, 201, changed.body)
    assert.notEqual(changed.json().data.orderId, first.json().data.orderId)
    assert.equal(changed.json().data.memo, 'changed')
    assert.equal(await rows(ctx, 'orders'), 2)
  })

  it('stores expires_at one TTL after the key was claimed', async () => {
    const { member, body } = await setUp(ctx)
    const before = Date.now()
    assert.equal((await post(ctx, member, body, 'ttl')).statusCode, 201)
    const after = Date.now()
    const row = await ctx.api.app.db.selectFrom('idempotency_keys').select(['created_at', 'expires_at']).executeTakeFirstOrThrow()
    const expiresAt = new Date(row.expires_at).getTime()
    assert.ok(Math.abs(expiresAt - new Date(row.created_at).getTime() - 1000) <= 1, `${row.created_at} → ${row.expires_at}`)
    assert.ok(expiresAt >= before + 1000 - 50 && expiresAt <= after + 1000 + 50, new Date(expiresAt).toISOString())
  })

  it('purges keys after their TTL and keeps the live ones', async () => {
    const { member, body } = await setUp(ctx)
    assert.equal((await post(ctx, member, body, 'expires')).statusCode, 201)
    await sleep(1200)
    assert.equal((await post(ctx, member, body, 'live')).statusCode, 201)
    // The background purge may have got there first; either way only the live key is left.
    await purgeExpiredKeys(ctx.api.app.db)
    assert.deepEqual(await storedKeys(ctx), ['live'])
    assert.equal(await rows(ctx, 'orders'), 2)
  })
}, { env: { IDEMPOTENCY_TTL: '1s' } })
