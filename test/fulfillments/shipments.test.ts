import assert from 'node:assert/strict'
import { after, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Event } from '../../src/events/schemas.js'
import type { Fulfillment } from '../../src/fulfillments/schemas.js'
import type { HistoryEntry, OrderDetail } from '../../src/orders/schemas.js'
import { MailSink } from '../mail-sink.js'
import { assertError, describeEachBackend, feedSettled, successData, type Member } from '../helper.js'
import { TIMESTAMP, get, patch } from '../payments/fixtures.js'

// Shipping in parts with tracking (CONTRACT §15.3, §15.7): staff ship, deliver and cancel shipments;
// the order follows, and the customer is mailed each shipment over real SMTP.

const sink = new MailSink()
const smtpUrl = await sink.start()
after(() => sink.stop())

const TRACKING = { carrier: 'UPS', trackingNumber: '1Z999AA10123456784', trackingUrl: 'https://www.ups.com/track?tracknum=1Z999AA10123456784' }

describeEachBackend('shipments with tracking', (ctx) => {
  /** A paid CONFIRMED order of 3 × beans (500) and 1 × filters (200): stock 10 → 7 and 5 → 4. */
  async function paidOrder () {
    const api = ctx.api
    const admin = await api.admin()
    const owner = await api.member('owner')
    const beans = await api.product(admin, { price: 500, stockQuantity: 10, name: 'Beans' })
    const filters = await api.product(admin, { price: 200, stockQuantity: 5, name: 'Filters' })
    const order = await api.order(owner, [{ productId: beans.productId, quantity: 3 }, { productId: filters.productId, quantity: 1 }])
    const orderUrl = `/api/v1/orders/${order.orderId}`
    successData(await patch(api, `${orderUrl}/confirm`, owner))
    const paymentId = successData<OrderDetail>(await get(api, orderUrl, owner)).paymentId!
    successData(await patch(api, `/api/v1/payments/${paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' }))
    return { admin, owner, beans: beans.productId, filters: filters.productId, orderId: order.orderId, orderUrl, paymentId }
  }
  type Paid = Awaited<ReturnType<typeof paidOrder>>

  const shipUrl = (o: Paid) => `/api/v1/admin/orders/${o.orderId}/fulfillments`
  const ship = (o: Paid, payload: object, who: Member = o.admin, headers: Record<string, string> = {}) =>
    ctx.api.inject({ method: 'POST', url: shipUrl(o), headers: { ...who.headers, ...headers }, payload })
  const verb = (o: Paid, id: number | string, name: 'deliver' | 'cancel', who: Member = o.admin) =>
    patch(ctx.api, `${shipUrl(o)}/${id}/${name}`, who)

  /** Everything a refusal must leave as it was: the order (version, items, money), its shipments, history, events and stock. */
  async function state (o: Paid) {
    const api = ctx.api
    await feedSettled(api.app)
    return {
      order: successData<OrderDetail>(await get(api, `/api/v1/admin/orders/${o.orderId}`, o.admin)),
      history: successData<HistoryEntry[]>(await get(api, `${o.orderUrl}/history`, o.owner)),
      events: successData<{ content: Event[] }>(await get(api, `/api/v1/admin/events?orderId=${o.orderId}&size=100`, o.admin)).content.map(e => e.eventId),
      stock: await Promise.all([o.beans, o.filters].map(async id => successData<{ stockQuantity: number }>(await get(api, `/api/v1/products/${id}`)).stockQuantity)),
    }
  }

  function created (res: LightMyRequestResponse): Fulfillment {
    assert.equal(res.statusCode, 201, res.body)
    const body = res.json()
    assert.deepEqual({ success: body.success, error: body.error }, { success: true, error: null })
    assert.equal(res.headers.location, `/api/v1/orders/${body.data.orderId}/fulfillments/${body.data.fulfillmentId}`)
    return body.data
  }

  const stamps = (f: Fulfillment) => {
    const { shippedAt, createdAt, deliveredAt, ...rest } = f
    assert.match(shippedAt, TIMESTAMP)
    assert.equal(createdAt, shippedAt)
    if (deliveredAt !== null) assert.match(deliveredAt, TIMESTAMP)
    return { ...rest, delivered: deliveredAt !== null }
  }

  it('ships part of an order with tracking, mails the customer, and shows it on the order, its history and its events', async () => {
    const o = await paidOrder()
    const first = created(await ship(o, { items: [{ productId: o.beans, quantity: 2 }], ...TRACKING }))
    assert.deepEqual(stamps(first), {
      fulfillmentId: first.fulfillmentId, orderId: o.orderId, status: 'SHIPPED', items: [{ productId: o.beans, quantity: 2 }], ...TRACKING, delivered: false,
    })

    const detail = successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner))
    assert.deepEqual(detail.items.map(i => [i.productId, i.quantity, i.fulfilledQuantity, i.returnedQuantity]), [[o.beans, 3, 2, 0], [o.filters, 1, 0, 0]])
    assert.equal(detail.fulfillmentStatus, 'PARTIALLY_FULFILLED')
    assert.equal(detail.status, 'CONFIRMED')
    assert.equal(detail.version, 3)
    assert.deepEqual(detail.fulfillments, [first])
    // Goods left: the owner can no longer cancel; staff may ship the rest or deliver, not cancel.
    assert.deepEqual(detail.allowedActions, [])
    assert.deepEqual(successData<OrderDetail>(await get(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin)).allowedActions, ['deliver', 'edit', 'fulfil'])
    assert.deepEqual(successData<Fulfillment[]>(await get(ctx.api, `${o.orderUrl}/fulfillments`, o.owner)), [first])
    assert.deepEqual(successData<Fulfillment>(await get(ctx.api, `${o.orderUrl}/fulfillments/${first.fulfillmentId}`, o.owner)), first)

    const history = successData<HistoryEntry[]>(await get(ctx.api, `${o.orderUrl}/history`, o.owner))
    const { at, ...last } = history.at(-1)!
    assert.match(at, TIMESTAMP)
    assert.deepEqual(last, { from: 'CONFIRMED', to: 'CONFIRMED', action: 'fulfil', actorId: o.admin.id, actorRole: 'ADMIN', fulfillmentId: first.fulfillmentId })

    await feedSettled(ctx.api.app)
    const events = successData<{ content: Event[] }>(await get(ctx.api, `/api/v1/admin/events?orderId=${o.orderId}`, o.admin)).content
    const event = events.at(-1)!
    assert.deepEqual([event.type, event.sequence, event.data.fulfillment, event.data.order.fulfillmentStatus, event.data.order.version, event.data.payment?.paymentId],
      ['fulfillment.created', 5, first, 'PARTIALLY_FULFILLED', 3, o.paymentId])

    const mail = await sink.next(o.owner.email, /has shipped/)
    assert.match(mail.raw, new RegExp(`^Subject: Your order ${o.orderId} has shipped\\r?$`, 'm'))
    assert.equal(mail.text.trimEnd().replaceAll('\r\n', '\n'), [
      `Goods of your order ${o.orderId} are on their way:`,
      '',
      '  2 × Beans',
      '',
      'Carrier: UPS',
      'Tracking number: 1Z999AA10123456784',
      'Follow your parcel: https://www.ups.com/track?tracknum=1Z999AA10123456784',
      '',
      `Shipment ${first.fulfillmentId}, shipped at ${first.shippedAt}.`,
    ].join('\n'))
  })

  it('ships the rest without items, delivers shipment by shipment, and delivers the order with the last one, in one step', async () => {
    const o = await paidOrder()
    const first = created(await ship(o, { items: [{ productId: o.filters, quantity: 1 }, { productId: o.beans, quantity: 1 }] }))
    // Listed in the order's line order, whatever the request's; no tracking given → null.
    assert.deepEqual(first.items, [{ productId: o.beans, quantity: 1 }, { productId: o.filters, quantity: 1 }])
    assert.deepEqual([first.carrier, first.trackingNumber, first.trackingUrl], [null, null, null])
    const rest = created(await ship(o, {}))
    assert.deepEqual(rest.items, [{ productId: o.beans, quantity: 2 }])
    let detail = successData<OrderDetail>(await get(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin))
    assert.equal(detail.fulfillmentStatus, 'FULFILLED')
    assert.deepEqual(detail.allowedActions, ['deliver', 'edit'])
    // Nothing left to ship.
    assertError(await ship(o, {}), {
      code: 'INVALID_ORDER_STATUS', instance: shipUrl(o), detail: 'Cannot ship: every line of the order has shipped already.',
    })

    const res = await verb(o, first.fulfillmentId, 'deliver')
    const delivered = successData<Fulfillment>(res)
    assert.deepEqual(stamps(delivered), { ...stamps(first), status: 'DELIVERED', delivered: true })
    assert.equal(res.headers.etag, '"5"')
    detail = successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner))
    assert.deepEqual([detail.status, detail.version], ['CONFIRMED', 5])

    const last = await verb(o, rest.fulfillmentId, 'deliver')
    assert.equal(successData<Fulfillment>(last).status, 'DELIVERED')
    assert.equal(last.headers.etag, '"6"')
    detail = successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner))
    assert.deepEqual([detail.status, detail.fulfillmentStatus, detail.version], ['DELIVERED', 'FULFILLED', 6])
    assert.deepEqual(detail.items.map(i => i.fulfilledQuantity), [3, 1])

    // Delivering again changes nothing.
    const again = await verb(o, rest.fulfillmentId, 'deliver')
    assert.deepEqual(successData<Fulfillment>(again), successData<Fulfillment>(last))
    assert.equal(again.headers.etag, '"6"')

    await feedSettled(ctx.api.app)
    const events = successData<{ content: Event[] }>(await get(ctx.api, `/api/v1/admin/events?orderId=${o.orderId}`, o.admin)).content
    assert.deepEqual(events.slice(4).map(e => [e.type, e.sequence, e.data.order.status, e.data.fulfillment?.fulfillmentId ?? null, e.data.fulfillment?.status ?? null]), [
      ['fulfillment.created', 5, 'CONFIRMED', first.fulfillmentId, 'SHIPPED'],
      ['fulfillment.created', 6, 'CONFIRMED', rest.fulfillmentId, 'SHIPPED'],
      ['fulfillment.delivered', 7, 'CONFIRMED', first.fulfillmentId, 'DELIVERED'],
      ['fulfillment.delivered', 8, 'DELIVERED', rest.fulfillmentId, 'DELIVERED'],
      ['order.delivered', 9, 'DELIVERED', null, null],
    ])
    const history = successData<HistoryEntry[]>(await get(ctx.api, `${o.orderUrl}/history`, o.owner))
    assert.deepEqual(history.slice(2).map(h => [h.action, h.from, h.to, h.fulfillmentId]), [
      ['fulfil', 'CONFIRMED', 'CONFIRMED', first.fulfillmentId],
      ['fulfil', 'CONFIRMED', 'CONFIRMED', rest.fulfillmentId],
      ['deliver_fulfillment', 'CONFIRMED', 'CONFIRMED', first.fulfillmentId],
      ['deliver_fulfillment', 'CONFIRMED', 'DELIVERED', rest.fulfillmentId],
    ])
  })

  it('cancels a shipment: its quantities ship again; a cancelled one is not delivered, a delivered one not cancelled; the order delivers without it', async () => {
    const o = await paidOrder()
    const lost = created(await ship(o, { items: [{ productId: o.beans, quantity: 3 }], ...TRACKING }))
    const cancelled = await verb(o, lost.fulfillmentId, 'cancel')
    assert.deepEqual(stamps(successData<Fulfillment>(cancelled)), { ...stamps(lost), status: 'CANCELLED' })
    assert.equal(cancelled.headers.etag, '"4"')
    let detail = successData<OrderDetail>(await get(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin))
    assert.deepEqual([detail.fulfillmentStatus, detail.items.map(i => i.fulfilledQuantity)], ['UNFULFILLED', [0, 0]])
    // Nothing shipped any more: the order may be cancelled again.
    assert.deepEqual(detail.allowedActions, ['cancel', 'deliver', 'delete', 'edit', 'fulfil'])

    const before = await state(o)
    const again = await verb(o, lost.fulfillmentId, 'cancel')
    assert.equal(successData<Fulfillment>(again).status, 'CANCELLED')
    assert.equal(again.headers.etag, '"4"')
    assertError(await verb(o, lost.fulfillmentId, 'deliver'), {
      code: 'INVALID_FULFILLMENT_STATUS', instance: `${shipUrl(o)}/${lost.fulfillmentId}/deliver`, detail: `Cannot deliver fulfilment ${lost.fulfillmentId}: it is CANCELLED.`,
    })
    assert.deepEqual(await state(o), before)

    const all = created(await ship(o, {}))
    assert.deepEqual(all.items, [{ productId: o.beans, quantity: 3 }, { productId: o.filters, quantity: 1 }])
    successData(await verb(o, all.fulfillmentId, 'deliver'))
    detail = successData<OrderDetail>(await get(ctx.api, o.orderUrl, o.owner))
    assert.deepEqual([detail.status, detail.fulfillments.map(f => f.status)], ['DELIVERED', ['CANCELLED', 'DELIVERED']])

    const done = await state(o)
    assertError(await verb(o, all.fulfillmentId, 'cancel'), {
      code: 'INVALID_FULFILLMENT_STATUS',
      instance: `${shipUrl(o)}/${all.fulfillmentId}/cancel`,
      detail: `Cannot cancel fulfilment ${all.fulfillmentId}: it is DELIVERED; goods that arrived come back through a return.`,
    })
    assert.deepEqual(await state(o), done)
  })

  it('refuses to cancel or delete an order whose goods left, and a shipment of an order that is not paid, not CONFIRMED or DELETED', async () => {
    const o = await paidOrder()
    created(await ship(o, { items: [{ productId: o.filters, quantity: 1 }] }))
    const before = await state(o)
    const detail = 'Cannot cancel an order that is CONFIRMED with goods shipped (fulfillmentStatus PARTIALLY_FULFILLED); cancel its shipments first, or take goods back through a return.'
    assertError(await patch(ctx.api, `${o.orderUrl}/cancel`, o.owner), { code: 'INVALID_ORDER_STATUS', instance: `${o.orderUrl}/cancel`, detail })
    assertError(await patch(ctx.api, `/api/v1/admin/orders/${o.orderId}`, o.admin, { status: 'CANCELLED' }), {
      code: 'INVALID_ORDER_STATUS', instance: `/api/v1/admin/orders/${o.orderId}`, detail,
    })
    assertError(await patch(ctx.api, `${o.orderUrl}/delete`, o.admin), {
      code: 'INVALID_ORDER_STATUS', instance: `${o.orderUrl}/delete`, detail: detail.replace('Cannot cancel', 'Cannot delete'),
    })
    assert.deepEqual(await state(o), before)

    // Not paid yet.
    const api = ctx.api
    const unpaid = await api.order(o.owner, [{ productId: o.beans, quantity: 1 }])
    const unpaidUrl = `/api/v1/admin/orders/${unpaid.orderId}/fulfillments`
    const post = (url: string, payload: object = {}) => api.inject({ method: 'POST', url, headers: o.admin.headers, payload })
    assertError(await post(unpaidUrl), {
      code: 'INVALID_ORDER_STATUS', instance: unpaidUrl, detail: 'Cannot ship an order that is PLACED; only CONFIRMED orders ship.',
    })
    successData(await patch(api, `/api/v1/orders/${unpaid.orderId}/confirm`, o.owner))
    assertError(await post(unpaidUrl), {
      code: 'INVALID_ORDER_STATUS',
      instance: unpaidUrl,
      detail: 'Cannot ship an order that is CONFIRMED: its balanceDue is 500 (paymentStatus UNPAID); shipping needs it paid in full.',
    })
    successData(await patch(api, `/api/v1/orders/${unpaid.orderId}/delete`, o.owner))
    assertError(await post(unpaidUrl), { code: 'INVALID_ORDER_STATUS', instance: unpaidUrl, detail: 'Cannot ship an order that is DELETED.' })
    const shipments = await api.app.db.selectFrom('fulfillments').select('id').where('order_id', '=', unpaid.orderId).execute()
    assert.deepEqual(shipments, [])
  })

  it('refuses bad shipments with 400 naming the field, and changes nothing', async () => {
    const o = await paidOrder()
    const before = await state(o)
    const cases: Array<[object, Array<{ field: string, message: string | RegExp }>, string]> = [
      [{ items: [{ productId: o.beans, quantity: 4 }] }, [{ field: 'items[0].quantity', message: 'must not exceed the 3 left to ship' }], 'The request has invalid parameters.'],
      [{ items: [{ productId: o.filters, quantity: 1 }, { productId: 999999, quantity: 1 }] }, [{ field: 'items[1].productId', message: 'is not a line of the order' }], 'The request has invalid parameters.'],
      [{ items: [{ productId: o.beans, quantity: 1 }, { productId: o.beans, quantity: 1 }] }, [{ field: 'items[1].productId', message: 'appears more than once; list each product once' }], 'The request has invalid parameters.'],
      [{ trackingUrl: 'http://carrier.example/track/1' }, [{ field: 'trackingUrl', message: 'has an invalid format' }], 'The request body has invalid parameters.'],
      [{ trackingUrl: 'https://' }, [{ field: 'trackingUrl', message: 'has an invalid format' }], 'The request body has invalid parameters.'],
      [{ trackingUrl: 'https://user:secret@carrier.example/track' }, [{ field: 'trackingUrl', message: 'must be an absolute https:// URL' }], 'The request has invalid parameters.'],
      [{ carrier: 'x'.repeat(101) }, [{ field: 'carrier', message: /100/ }], 'The request body has invalid parameters.'],
      [{ trackingNumber: 'AB\u0007CD' }, [{ field: 'trackingNumber', message: /control characters/ }], 'The request body has invalid parameters.'],
      [{ items: [] }, [{ field: 'items', message: 'must not be empty' }], 'The request body has invalid parameters.'],
      [{ items: [{ productId: o.beans, quantity: 0 }] }, [{ field: 'items[0].quantity', message: /at least 1|>= 1/ }], 'The request body has invalid parameters.'],
      [{ shipTo: 'elsewhere' }, [{ field: 'shipTo', message: /not a recognised|not allowed|additional/ }], 'The request body has invalid parameters.'],
    ]
    for (const [payload, invalidParams, detail] of cases) {
      const res = await ship(o, payload)
      if (res.statusCode !== 400) assert.fail(`${JSON.stringify(payload)}: ${res.body}`)
      const body = res.json().error
      assertError(res, { code: 'VALIDATION_FAILED', instance: shipUrl(o), detail: body.detail === detail ? detail : detail.replace('request body', 'request'), invalidParams })
    }
    assert.deepEqual(await state(o), before)
  })

  it('answers 404 for unknown orders and shipments, 403 to members on staff paths and to other members, and replays a keyed shipment', async () => {
    const o = await paidOrder()
    const other = await ctx.api.member('other')
    const shipment = created(await ship(o, { items: [{ productId: o.beans, quantity: 1 }] }, o.admin, { 'idempotency-key': 'ship-1' }))
    const before = await state(o)
    // The same key and body: the first answer again, nothing shipped twice.
    const replay = await ship(o, { items: [{ productId: o.beans, quantity: 1 }] }, o.admin, { 'idempotency-key': 'ship-1' })
    assert.equal(replay.statusCode, 200)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.deepEqual(replay.json().data, shipment)
    assert.deepEqual(await state(o), before)

    assertError(await ctx.api.inject({ method: 'POST', url: '/api/v1/admin/orders/999999/fulfillments', headers: o.admin.headers, payload: {} }), {
      code: 'ORDER_NOT_FOUND', instance: '/api/v1/admin/orders/999999/fulfillments', detail: 'Order 999999 does not exist.',
    })
    for (const name of ['deliver', 'cancel'] as const) {
      assertError(await verb(o, 999999, name), {
        code: 'FULFILLMENT_NOT_FOUND', instance: `${shipUrl(o)}/999999/${name}`, detail: 'Fulfillment 999999 does not exist on this order.',
      })
      assertError(await verb(o, shipment.fulfillmentId, name, o.owner), {
        code: 'ACCESS_DENIED', instance: `${shipUrl(o)}/${shipment.fulfillmentId}/${name}`, detail: 'This operation requires the ADMIN role.',
      })
    }
    assertError(await ship(o, {}, o.owner), { code: 'ACCESS_DENIED', instance: shipUrl(o), detail: 'This operation requires the ADMIN role.' })
    assertError(await get(ctx.api, `${o.orderUrl}/fulfillments/999999`, o.owner), {
      code: 'FULFILLMENT_NOT_FOUND', instance: `${o.orderUrl}/fulfillments/999999`, detail: 'Fulfillment 999999 does not exist on this order.',
    })
    for (const url of [`${o.orderUrl}/fulfillments`, `${o.orderUrl}/fulfillments/${shipment.fulfillmentId}`]) {
      assertError(await get(ctx.api, url, other), { code: 'ACCESS_DENIED', instance: url, detail: 'Only the owner of this order or an admin may do this.' })
    }
    assert.deepEqual(await state(o), before)
  })
}, { env: { SMTP_URL: smtpUrl } })
