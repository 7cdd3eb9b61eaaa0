import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { Fulfillment } from '../../src/fulfillments/schemas.js'
import { assertError, describeEachBackend, successData } from '../helper.js'
import { TIMESTAMP, confirmedOrder, get, patch } from '../payments/fixtures.js'

// GET /api/v1/orders/{id}/fulfillments (CONTRACT §15.3, §15.7): the owner or an admin reads an
// order's shipments, oldest first; others are told as §3 tells them.

describeEachBackend('reading an order\'s fulfilments', (ctx) => {
  it('answers [] before anything shipped, then the one-step deliver\'s shipment, to the owner and to an admin', async () => {
    const o = await confirmedOrder(ctx.api)
    const url = `${o.orderUrl}/fulfillments`
    assert.deepEqual(successData<Fulfillment[]>(await get(ctx.api, url, o.owner)), [])
    successData(await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' }))
    successData(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'DELIVERED' }))

    const [shipment, ...others] = successData<Fulfillment[]>(await get(ctx.api, url, o.owner))
    assert.deepEqual(others, [])
    const { fulfillmentId, shippedAt, deliveredAt, createdAt, ...fields } = shipment!
    assert.ok(Number.isSafeInteger(fulfillmentId) && fulfillmentId > 0)
    assert.deepEqual(fields, {
      orderId: o.orderId,
      status: 'DELIVERED',
      items: [{ productId: o.productId, quantity: 2 }],
      carrier: null,
      trackingNumber: null,
      trackingUrl: null,
    })
    assert.match(shippedAt, TIMESTAMP)
    assert.equal(deliveredAt, shippedAt)
    assert.equal(createdAt, shippedAt)
    assert.deepEqual(successData<Fulfillment[]>(await get(ctx.api, url, o.admin)), [shipment])
  })

  it('refuses others as §3 does: another member 403, anonymous 401, an unknown or deleted order 404', async () => {
    const o = await confirmedOrder(ctx.api)
    const url = `${o.orderUrl}/fulfillments`
    const stranger = await ctx.api.member('stranger')
    assertError(await get(ctx.api, url, stranger), { code: 'ACCESS_DENIED', instance: url, detail: 'Only the owner of this order or an admin may do this.' })
    assertError(await get(ctx.api, url), {
      code: 'UNAUTHORIZED', instance: url, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
    const missing = '/api/v1/orders/9223372036854775807/fulfillments'
    assertError(await get(ctx.api, missing, o.admin), { code: 'ORDER_NOT_FOUND', instance: missing, detail: 'Order 9223372036854775807 does not exist.' })
    successData(await patch(ctx.api, `${o.orderUrl}/delete`, o.owner))
    assertError(await get(ctx.api, url, o.owner), { code: 'ORDER_NOT_FOUND', instance: url, detail: `Order ${o.orderId} does not exist.` })
    assert.deepEqual(successData<Fulfillment[]>(await get(ctx.api, url, o.admin)), [])
  })
})
