import assert from 'node:assert/strict'
import { beforeEach, it } from 'node:test'
import { sql } from 'kysely'
import { simulatedProvider, type PaymentProvider } from '../../src/payments/provider.js'
import type { Return } from '../../src/returns/schemas.js'
import { assertError, describeEachBackend, successData } from '../helper.js'
import { patch } from '../payments/fixtures.js'
import { adminOrder, assertReturn, deliveredOrder, everything, post } from './fixtures.js'

// CONTRACT §15.4, §15.6, §15.7: who may ask for, see and move a return; the owner's window; what a
// request or receipt may hold; a provider that cannot refund. Every refusal changes nothing.

const INVALID = 'The request has invalid parameters.'
const BODY_INVALID = 'The request body has invalid parameters.'

describeEachBackend('return refusals', (ctx) => {
  it('who sees what: an unknown order 404, another member 403, an owner\'s DELETED order 404, an admin\'s 400; members on /admin/returns 403', async () => {
    const o = await deliveredOrder(ctx.api)
    const stranger = await ctx.api.member('stranger')
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    const before = await everything(ctx.api, o)
    const body = { items: [{ productId: o.cups, quantity: 1 }] }

    const unknown = '/api/v1/orders/999999/returns'
    assertError(await post(ctx.api, unknown, o.owner, body), { code: 'ORDER_NOT_FOUND', instance: unknown, detail: 'Order 999999 does not exist.' })
    assertError(await post(ctx.api, unknown, o.admin, body), { code: 'ORDER_NOT_FOUND', instance: unknown, detail: 'Order 999999 does not exist.' })
    for (const [method, url, payload] of [
      ['POST', o.returnsUrl, body], ['GET', o.returnsUrl, undefined], ['GET', `${o.returnsUrl}/1`, undefined], ['PATCH', `${o.returnsUrl}/1/cancel`, undefined],
    ] as const) {
      assertError(await ctx.api.inject({ method, url, headers: stranger.headers, ...(payload ? { payload } : {}) }), {
        code: 'ACCESS_DENIED', instance: url, detail: 'Only the owner of this order or an admin may do this.',
      })
      assertError(await ctx.api.inject({ method, url: url.replace(`/${o.orderId}/`, '/999999/'), headers: o.owner.headers, ...(payload ? { payload } : {}) }), {
        code: 'ORDER_NOT_FOUND', instance: url.replace(`/${o.orderId}/`, '/999999/'), detail: 'Order 999999 does not exist.',
      })
    }
    for (const [url, payload] of [
      ['/api/v1/admin/returns/1/reject', {}], ['/api/v1/admin/returns/1/receive', { items: [{ productId: o.cups, quantity: 1, restock: true }] }],
    ] as const) {
      assertError(await patch(ctx.api, url, o.owner, payload), { code: 'ACCESS_DENIED', instance: url, detail: 'This operation requires the ADMIN role.' })
    }
    // Unknown returns, and a return asked for under another order's path.
    const p = await deliveredOrder(ctx.api)
    for (const [method, url, who, payload] of [
      ['GET', `${o.returnsUrl}/2`, o.owner, undefined],
      ['PATCH', `${o.returnsUrl}/2/cancel`, o.owner, undefined],
      ['GET', `${p.returnsUrl}/1`, p.owner, undefined],
      ['PATCH', `${p.returnsUrl}/1/cancel`, p.admin, undefined],
      ['PATCH', '/api/v1/admin/returns/2/reject', o.admin, {}],
      ['PATCH', '/api/v1/admin/returns/2/receive', o.admin, { items: [{ productId: o.cups, quantity: 1, restock: true }] }],
    ] as const) {
      const id = url.includes('/returns/1') ? 1 : 2
      assertError(await ctx.api.inject({ method, url, headers: who.headers, ...(payload ? { payload } : {}) }), {
        code: 'RETURN_NOT_FOUND', instance: url, detail: `Return ${id} does not exist.`,
      })
    }
    assert.deepEqual(await everything(ctx.api, o), before)

    // A DELETED order: absent for its owner, and no return for an admin; its open return can still be moved by an admin.
    assert.equal((await patch(ctx.api, `${o.orderUrl}/delete`, o.owner)).statusCode, 200)
    const deleted = await everything(ctx.api, o)
    assertError(await post(ctx.api, o.returnsUrl, o.owner, body), { code: 'ORDER_NOT_FOUND', instance: o.returnsUrl, detail: `Order ${o.orderId} does not exist.` })
    assertError(await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.owner), {
      code: 'ORDER_NOT_FOUND', instance: `${o.returnsUrl}/1/cancel`, detail: `Order ${o.orderId} does not exist.`,
    })
    assertError(await post(ctx.api, o.returnsUrl, o.admin, body), { code: 'INVALID_ORDER_STATUS', instance: o.returnsUrl, detail: 'A DELETED order takes no return.' })
    assert.deepEqual(await everything(ctx.api, o), deleted)
    assert.equal(successData<Return>(await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.admin)).status, 'CANCELLED')
  })

  it('what a request may hold: lines of the order, each once, within what was delivered; the body\'s own rules', async () => {
    const o = await deliveredOrder(ctx.api)
    const before = await everything(ctx.api, o)
    const refused: Array<[object, Array<{ field: string, message: string }>, string?]> = [
      [{ items: [{ productId: o.cups, quantity: 1 }, { productId: o.cups, quantity: 1 }] }, [{ field: 'items[1].productId', message: 'repeats items[0].productId; list each product once' }]],
      [{ items: [{ productId: 999, quantity: 1 }] }, [{ field: 'items[0].productId', message: 'is not a line of this order' }]],
      [{ items: [{ productId: o.cups, quantity: 4 }] }, [{ field: 'items[0].quantity', message: 'must be at most 3: 3 delivered, 0 returned, 0 in open returns' }]],
      [{ items: [] }, [{ field: 'items', message: 'must not be empty' }], BODY_INVALID],
      [{ items: [{ productId: o.cups, quantity: 0 }] }, [{ field: 'items[0].quantity', message: 'must be at least 1' }], BODY_INVALID],
      [{ items: [{ productId: o.cups, quantity: 1, reason: 'BORED' }] }, [{ field: 'items[0].reason', message: 'must be one of DAMAGED, WRONG_ITEM, NOT_AS_DESCRIBED, NO_LONGER_NEEDED, OTHER' }], BODY_INVALID],
      [{ items: [{ productId: o.cups, quantity: 1 }], note: 'x'.repeat(1001) }, [{ field: 'note', message: 'must be at most 1000 characters' }], BODY_INVALID],
      [{ items: [{ productId: o.cups, quantity: 1 }], refund: true }, [{ field: 'refund', message: 'is not a recognised field' }], BODY_INVALID],
    ]
    for (const [payload, invalidParams, detail] of refused) {
      assertError(await post(ctx.api, o.returnsUrl, o.owner, payload), { code: 'VALIDATION_FAILED', instance: o.returnsUrl, detail: detail ?? INVALID, invalidParams })
    }
    // Nothing delivered yet: nothing can go back, whoever asks.
    const q = await deliveredOrder(ctx.api, { deliver: false })
    for (const who of [q.owner, q.admin]) {
      assertError(await post(ctx.api, q.returnsUrl, who, { items: [{ productId: q.beans, quantity: 1 }] }), {
        code: 'VALIDATION_FAILED',
        instance: q.returnsUrl,
        detail: INVALID,
        invalidParams: [{ field: 'items[0].quantity', message: 'must be at most 0: 0 delivered, 0 returned, 0 in open returns' }],
      })
    }
    assert.deepEqual(await everything(ctx.api, o), before)
  })

  it('what a receipt and a rejection may hold', async () => {
    const o = await deliveredOrder(ctx.api)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 2 }] })).statusCode, 201)
    const before = await everything(ctx.api, o)
    const url = '/api/v1/admin/returns/1/receive'
    for (const [payload, invalidParams, detail] of [
      [{ items: [{ productId: o.cups, quantity: 3, restock: true }] }, [{ field: 'items[0].quantity', message: 'must be at most 2, the quantity the return asked for' }], INVALID],
      [{ items: [{ productId: o.beans, quantity: 1, restock: true }] }, [{ field: 'items[0].productId', message: 'is not a line of this return' }], INVALID],
      [{ items: [{ productId: o.cups, quantity: 1, restock: true }, { productId: o.cups, quantity: 1, restock: true }] },
        [{ field: 'items[1].productId', message: 'repeats items[0].productId; list each product once' }], INVALID],
      [{ items: [{ productId: o.cups, quantity: 1 }] }, [{ field: 'items[0].restock', message: 'is required' }], BODY_INVALID],
      [{ items: [{ productId: o.cups, quantity: 1, restock: true }], refundAmount: -1 }, [{ field: 'refundAmount', message: 'must be at least 0' }], BODY_INVALID],
      [{}, [{ field: 'items', message: 'is required' }], BODY_INVALID],
    ] as const) {
      assertError(await patch(ctx.api, url, o.admin, payload), { code: 'VALIDATION_FAILED', instance: url, detail, invalidParams: [...invalidParams] })
    }
    assertError(await patch(ctx.api, '/api/v1/admin/returns/1/reject', o.admin, { reason: 'x'.repeat(501) }), {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/admin/returns/1/reject',
      detail: BODY_INVALID,
      invalidParams: [{ field: 'reason', message: 'must be at most 500 characters' }],
    })
    assert.deepEqual(await everything(ctx.api, o), before)
  })

  it('the owner\'s window: open until RETURN_WINDOW (30d) after the latest delivery, then 400 RETURN_WINDOW_CLOSED; admins at any time', async () => {
    const o = await deliveredOrder(ctx.api)
    // Delivered 31 days ago.
    await sql`update fulfillments set delivered_at = now() - interval '31 days' where order_id = ${o.orderId}`.execute(ctx.api.app.db)
    const { at } = await ctx.api.app.db.selectFrom('fulfillments').select('delivered_at as at').where('order_id', '=', o.orderId).executeTakeFirstOrThrow()
    const closes = new Date(at!.getTime() + 30 * 86_400_000).toISOString()
    const before = await everything(ctx.api, o)
    assertError(await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] }), {
      code: 'RETURN_WINDOW_CLOSED',
      instance: o.returnsUrl,
      detail: `The return window closed at ${closes}, 30d after the order's latest delivery; nothing was requested.`,
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    assertReturn(await post(ctx.api, o.returnsUrl, o.admin, { items: [{ productId: o.cups, quantity: 1 }] }), 201, {
      returnId: 1,
      orderId: o.orderId,
      status: 'REQUESTED',
      items: [{ productId: o.cups, quantity: 1, reason: null, receivedQuantity: null, restock: null }],
      note: null,
      rejectionReason: null,
      refundAmount: null,
    })
    // The latest delivery counts: another fulfilment delivered a day ago opens it again.
    const { id } = await ctx.api.app.db.insertInto('fulfillments')
      .values({ order_id: o.orderId, status: 'DELIVERED', carrier: null, tracking_number: null, tracking_url: null, delivered_at: sql<Date>`now() - interval '1 day'` })
      .returning('id').executeTakeFirstOrThrow()
    await ctx.api.app.db.insertInto('fulfillment_items').values({ fulfillment_id: id, product_id: o.beans, quantity: 1 }).execute()
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 1 }] })).statusCode, 201)
    // A cancelled shipment's time does not count.
    await sql`update fulfillments set status = 'CANCELLED' where id = ${id}`.execute(ctx.api.app.db)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 400)
  })

  it('receive with a provider that cannot refund: 503 with Retry-After, nothing changes; a receipt refunding 0 needs no provider', async () => {
    refundsFail = true
    const o = await deliveredOrder(ctx.api)
    assert.equal((await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.beans, quantity: 2 }] })).statusCode, 201)
    const before = await everything(ctx.api, o)
    const url = '/api/v1/admin/returns/1/receive'
    const res = await patch(ctx.api, url, o.admin, { items: [{ productId: o.beans, quantity: 2, restock: true }] })
    assertError(res, {
      code: 'SERVICE_UNAVAILABLE', instance: url, detail: 'The payment provider could not be reached or did not complete the operation; nothing was changed. Try again.',
    })
    assert.equal(res.headers['retry-after'], '5')
    assert.deepEqual(await everything(ctx.api, o), before)
    assert.equal((await adminOrder(ctx.api, o)).items[0]!.returnedQuantity, 0)

    const zero = await patch(ctx.api, url, o.admin, { items: [{ productId: o.beans, quantity: 2, restock: true }], refundAmount: 0 })
    assert.equal(successData<Return>(zero).status, 'RECEIVED')
    assert.equal(await ctx.api.stockOf(o.beans), 10)
  })
}, { build: { paymentProvider: refusingProvider() } })

describeEachBackend('returns with RETURN_WINDOW=0', (ctx) => {
  it('owners cannot ask at all, even right after delivery; admins can', async () => {
    const o = await deliveredOrder(ctx.api)
    const before = await everything(ctx.api, o)
    assertError(await post(ctx.api, o.returnsUrl, o.owner, { items: [{ productId: o.cups, quantity: 1 }] }), {
      code: 'RETURN_WINDOW_CLOSED', instance: o.returnsUrl, detail: 'Returns are taken by the shop\'s staff only; ask them to open one. Nothing was requested.',
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    assert.equal((await post(ctx.api, o.returnsUrl, o.admin, { items: [{ productId: o.cups, quantity: 1 }] })).statusCode, 201)
    // The owner may still cancel the return staff opened for them.
    assert.equal(successData<Return>(await patch(ctx.api, `${o.returnsUrl}/1/cancel`, o.owner)).status, 'CANCELLED')
  })
}, { env: { RETURN_WINDOW: '0' } })

/** Whether the provider below refuses refunds. */
let refundsFail = true

function refusingProvider (): PaymentProvider {
  const simulated = simulatedProvider()
  return {
    ...simulated,
    async refund (request) {
      if (refundsFail) throw new Error('upstream 502 from the card network')
      return simulated.refund(request)
    },
  }
}

beforeEach(() => { refundsFail = true })
