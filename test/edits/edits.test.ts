import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { OrderEdit } from '../../src/edits/schemas.js'
import { assertError, describeEachBackend, successData } from '../helper.js'
import { get, patch } from '../payments/fixtures.js'
import { adminOrder, assertEdit, edit, everything, eventsOf, placedOrder, type Placed } from './fixtures.js'

// POST/GET /api/v1/orders/{id}/edits before confirmation (CONTRACT §15.2, §15.7): what an edit
// changes, the preview, the preconditions, who may edit, and every refusal leaving everything as it was.

const BODY_INVALID = 'The request body has invalid parameters.'
const REQUEST_INVALID = 'The request has invalid parameters.'

/** The first edit of a fresh order: A 2 → 3, B added once (1000 → 1800). */
const firstEdit = (o: Placed, actorId: number, actorRole = 'USER') => ({
  orderId: o.orderId,
  fromVersion: 1,
  toVersion: 2,
  changes: [
    { productId: o.a, productName: 'Beans', quantityBefore: 2, quantityAfter: 3, unitPrice: 500 },
    { productId: o.b, productName: 'Filters', quantityBefore: 0, quantityAfter: 1, unitPrice: 300 },
  ],
  shippingAddressChanged: false,
  totalBefore: 1000,
  totalAfter: 1800,
  settlement: { kind: 'NONE' as const, amount: 0, paymentId: null },
  actorId,
  actorRole: actorRole as 'USER' | 'ADMIN',
})

describeEachBackend('editing an order before confirmation', (ctx) => {
  it('the owner edits a PLACED order: 201 with the edit, Location and the new ETag; lines, total, stock, history, event and reads follow', async () => {
    const o = await placedOrder(ctx.api)
    const before = await adminOrder(ctx.api, o)
    const res = await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 3 }, { productId: o.b, quantity: 1 }] })
    const done = assertEdit(res, 201, firstEdit(o, o.owner.id))
    assert.equal(res.headers.location, `${o.editsUrl}/${done.editId}`)
    assert.equal(res.headers.etag, '"2"')
    assert.equal(res.headers['idempotent-replayed'], undefined)

    const order = await adminOrder(ctx.api, o)
    assert.deepEqual(order, {
      ...before,
      items: [
        { productId: o.a, productName: 'Beans', quantity: 3, unitPrice: 500, lineTotal: 1500, fulfilledQuantity: 0, returnedQuantity: 0 },
        { productId: o.b, productName: 'Filters', quantity: 1, unitPrice: 300, lineTotal: 300, fulfilledQuantity: 0, returnedQuantity: 0 },
      ],
      totalAmount: 1800,
      balanceDue: 1800,
      version: 2,
      updatedAt: order.updatedAt,
    })
    assert.deepEqual([await ctx.api.stockOf(o.a), await ctx.api.stockOf(o.b)], [7, 9])
    const history = successData<any[]>(await get(ctx.api, `${o.orderUrl}/history`, o.owner))
    assert.equal(history.length, 2)
    assert.deepEqual({ ...history[1], at: undefined }, {
      from: 'PLACED', to: 'PLACED', action: 'edit', actorId: o.owner.id, actorRole: 'USER', editId: done.editId, at: undefined,
    })
    const events = await eventsOf(ctx.api, o)
    assert.deepEqual(events.map(event => event.type), ['order.placed', 'order.edited'])
    assert.deepEqual(events[1].data.edit, done)
    assert.equal(events[1].data.payment, null)
    assert.deepEqual(events[1].data.order.items, order.items)
    assert.equal(events[1].data.order.totalAmount, 1800)

    assert.deepEqual(successData<OrderEdit[]>(await get(ctx.api, o.editsUrl, o.owner)), [done])
    assert.deepEqual(successData<OrderEdit>(await get(ctx.api, `${o.editsUrl}/${done.editId}`, o.owner)), done)
    assert.deepEqual(successData<OrderEdit>(await get(ctx.api, `${o.editsUrl}/${done.editId}`, o.admin)), done)
  })

  it('removes a line with 0, keeps the others in place, appends new lines, and changes the address; the edits list oldest first', async () => {
    const o = await placedOrder(ctx.api)
    const first = assertEdit(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.b, quantity: 2 }] }), 201, {
      ...firstEdit(o, o.owner.id),
      changes: [{ productId: o.b, productName: 'Filters', quantityBefore: 0, quantityAfter: 2, unitPrice: 300 }],
      totalAfter: 1600,
    })
    // The price of A changes in the catalogue: the line on the order keeps the price it was ordered at.
    successData(await patch(ctx.api, `/api/v1/admin/products/${o.a}`, o.admin, { price: 900 }))
    const second = assertEdit(await edit(ctx.api, o, o.admin, {
      changes: [{ productId: o.a, quantity: 1 }, { productId: o.b, quantity: 0 }], shippingAddress: '2 Side St',
    }, { ifMatch: '"2"' }), 201, {
      orderId: o.orderId,
      fromVersion: 2,
      toVersion: 3,
      changes: [
        { productId: o.a, productName: 'Beans', quantityBefore: 2, quantityAfter: 1, unitPrice: 500 },
        { productId: o.b, productName: 'Filters', quantityBefore: 2, quantityAfter: 0, unitPrice: 300 },
      ],
      shippingAddressChanged: true,
      totalBefore: 1600,
      totalAfter: 500,
      settlement: { kind: 'NONE', amount: 0, paymentId: null },
      actorId: o.admin.id,
      actorRole: 'ADMIN',
    })
    const order = await adminOrder(ctx.api, o)
    assert.deepEqual(order.items, [{ productId: o.a, productName: 'Beans', quantity: 1, unitPrice: 500, lineTotal: 500, fulfilledQuantity: 0, returnedQuantity: 0 }])
    assert.equal(order.shippingAddress, '2 Side St')
    assert.deepEqual([await ctx.api.stockOf(o.a), await ctx.api.stockOf(o.b)], [9, 10])
    // B comes back as a new line, at its current price, after A.
    successData(await patch(ctx.api, `/api/v1/admin/products/${o.b}`, o.admin, { price: 350 }))
    const third = assertEdit(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.b, quantity: 1 }] }, { ifMatch: '"3"' }), 201, {
      ...firstEdit(o, o.owner.id),
      fromVersion: 3,
      toVersion: 4,
      changes: [{ productId: o.b, productName: 'Filters', quantityBefore: 0, quantityAfter: 1, unitPrice: 350 }],
      totalBefore: 500,
      totalAfter: 850,
    })
    assert.deepEqual((await adminOrder(ctx.api, o)).items.map((item: any) => [item.productId, item.quantity, item.unitPrice]), [[o.a, 1, 500], [o.b, 1, 350]])
    assert.deepEqual(successData<OrderEdit[]>(await get(ctx.api, o.editsUrl, o.owner)), [first, second, third])
  })

  it('?dryRun=true answers 200 with the edit as it would be (editId null) and changes nothing: stock, money, version, history, events, edits', async () => {
    const o = await placedOrder(ctx.api)
    const before = await everything(ctx.api, o)
    const res = await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 3 }, { productId: o.b, quantity: 1 }] }, {
      query: '?dryRun=true', headers: { 'idempotency-key': 'preview-1' },
    })
    assertEdit(res, 200, { ...firstEdit(o, o.owner.id), editId: null })
    assert.equal(res.headers.etag, '"1"')
    assert.equal(res.headers.location, undefined)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assert.deepEqual(await everything(ctx.api, o), before)
    // The preview took no key: the same key applies the edit afterwards.
    assertEdit(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 3 }, { productId: o.b, quantity: 1 }] }, {
      headers: { 'idempotency-key': 'preview-1' },
    }), 201, firstEdit(o, o.owner.id))
  })

  it('If-Match is required: absent or * → 428, stale → 412; nothing changes', async () => {
    const o = await placedOrder(ctx.api)
    const before = await everything(ctx.api, o)
    const payload = { changes: [{ productId: o.a, quantity: 3 }] }
    for (const ifMatch of [null, '*']) {
      assertError(await edit(ctx.api, o, o.owner, payload, { ifMatch }), {
        code: 'PRECONDITION_REQUIRED',
        instance: o.editsUrl,
        detail: 'An edit needs If-Match with the order\'s ETag (now "1"), so that it applies to the version it was made against.',
      })
    }
    for (const ifMatch of ['"2"', '"0", "3"']) {
      for (const query of ['', '?dryRun=true']) {
        assertError(await edit(ctx.api, o, o.owner, payload, { ifMatch, query }), {
          code: 'PRECONDITION_FAILED', instance: o.editsUrl, detail: 'If-Match does not match the order\'s current ETag "1"; fetch it again.',
        })
      }
    }
    assert.deepEqual(await everything(ctx.api, o), before)
    // A weak tag or a list naming the current one matches.
    assert.equal((await edit(ctx.api, o, o.owner, payload, { ifMatch: '"7", W/"1"' })).statusCode, 201)
  })

  it('who may edit: another member 403, anonymous 401, an unknown order 404, a deleted one 404 for its owner and 400 for an admin', async () => {
    const o = await placedOrder(ctx.api)
    const stranger = await ctx.api.member('stranger')
    const payload = { changes: [{ productId: o.a, quantity: 3 }] }
    const before = await everything(ctx.api, o)
    assertError(await edit(ctx.api, o, stranger, payload), { code: 'ACCESS_DENIED', instance: o.editsUrl, detail: 'Only the owner of this order or an admin may do this.' })
    assertError(await ctx.api.inject({ method: 'POST', url: o.editsUrl, headers: { 'if-match': '"1"' }, payload }), {
      code: 'UNAUTHORIZED', instance: o.editsUrl, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
    const missing = '/api/v1/orders/9223372036854775807/edits'
    assertError(await ctx.api.inject({ method: 'POST', url: missing, headers: { ...o.admin.headers, 'if-match': '"1"' }, payload }), {
      code: 'ORDER_NOT_FOUND', instance: missing, detail: 'Order 9223372036854775807 does not exist.',
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    for (const url of [o.editsUrl, `${o.editsUrl}/1`]) {
      assertError(await get(ctx.api, url, stranger), { code: 'ACCESS_DENIED', instance: url, detail: 'Only the owner of this order or an admin may do this.' })
    }

    successData(await patch(ctx.api, `${o.orderUrl}/delete`, o.owner))
    const deleted = await everything(ctx.api, o)
    assertError(await edit(ctx.api, o, o.owner, payload, { ifMatch: '"2"' }), { code: 'ORDER_NOT_FOUND', instance: o.editsUrl, detail: `Order ${o.orderId} does not exist.` })
    assertError(await get(ctx.api, o.editsUrl, o.owner), { code: 'ORDER_NOT_FOUND', instance: o.editsUrl, detail: `Order ${o.orderId} does not exist.` })
    assertError(await edit(ctx.api, o, o.admin, payload, { ifMatch: '"2"' }), {
      code: 'INVALID_ORDER_STATUS', instance: o.editsUrl, detail: 'Cannot edit an order that is DELETED.',
    })
    assert.deepEqual(successData(await get(ctx.api, o.editsUrl, o.admin)), [])
    assert.deepEqual(await everything(ctx.api, o), deleted)
  })

  it('status: the owner cannot edit a CONFIRMED order (staff can), nobody a CANCELLED one; nothing changes', async () => {
    const o = await placedOrder(ctx.api)
    const payload = { changes: [{ productId: o.a, quantity: 3 }] }
    successData(await patch(ctx.api, `${o.orderUrl}/confirm`, o.owner))
    const before = await everything(ctx.api, o)
    assertError(await edit(ctx.api, o, o.owner, payload, { ifMatch: '"2"' }), {
      code: 'INVALID_ORDER_STATUS', instance: o.editsUrl, detail: 'Cannot edit an order that is CONFIRMED: after confirmation only staff edit an order.',
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    successData(await patch(ctx.api, `${o.orderUrl}/cancel`, o.owner))
    const cancelled = await everything(ctx.api, o)
    for (const who of [o.owner, o.admin]) {
      assertError(await edit(ctx.api, o, who, payload, { ifMatch: '"3"' }), {
        code: 'INVALID_ORDER_STATUS', instance: o.editsUrl, detail: 'Cannot edit an order that is CANCELLED.',
      })
    }
    assert.deepEqual(await everything(ctx.api, o), cancelled)
  })

  it('refuses bad changes with 400 naming them, and changes nothing', async () => {
    const o = await placedOrder(ctx.api)
    const inactive = await ctx.api.product(o.admin, { price: 100, status: 'INACTIVE' })
    const before = await everything(ctx.api, o)
    const cases: Array<[object, string, Array<{ field: string, message: string }>]> = [
      [{ changes: [] }, BODY_INVALID, [{ field: 'changes', message: 'must not be empty' }]],
      [{ changes: [{ productId: o.a, quantity: 10001 }] }, BODY_INVALID, [{ field: 'changes[0].quantity', message: 'must be at most 10000' }]],
      [{ changes: [{ productId: o.a, quantity: -1 }] }, BODY_INVALID, [{ field: 'changes[0].quantity', message: 'must be at least 0' }]],
      [{ changes: [{ productId: o.a, quantity: 1, price: 1 }] }, BODY_INVALID, [{ field: 'changes[0].price', message: 'is not a recognised field' }]],
      [{ changes: [{ productId: o.a, quantity: 1 }], memo: 'x' }, BODY_INVALID, [{ field: 'memo', message: 'is not a recognised field' }]],
      [{ changes: [{ productId: o.a, quantity: 1 }], shippingAddress: 'x'.repeat(501) }, BODY_INVALID, [{ field: 'shippingAddress', message: 'must be at most 500 characters' }]],
      [{ changes: [{ productId: o.a, quantity: 1 }, { productId: o.a, quantity: 2 }] }, 'Each product may appear only once in an edit.',
        [{ field: 'changes[1].productId', message: 'repeats changes[0].productId; list each product once' }]],
      [{ changes: [{ productId: inactive.productId, quantity: 1 }, { productId: 999999, quantity: 1 }] }, REQUEST_INVALID, [
        { field: 'changes[0].productId', message: 'is not an active product' },
        { field: 'changes[1].productId', message: 'is not an active product' },
      ]],
      [{ changes: [{ productId: o.a, quantity: 2 }, { productId: o.b, quantity: 0 }] }, REQUEST_INVALID,
        [{ field: 'changes', message: 'change nothing: every quantity is already as asked and the shipping address is unchanged' }]],
      [{ changes: [{ productId: o.a, quantity: 2 }], shippingAddress: null }, REQUEST_INVALID,
        [{ field: 'changes', message: 'change nothing: every quantity is already as asked and the shipping address is unchanged' }]],
      [{ changes: [{ productId: o.a, quantity: 0 }] }, REQUEST_INVALID, [{ field: 'changes', message: 'would leave the order without lines; cancel the order instead' }]],
    ]
    for (const [payload, detail, invalidParams] of cases) {
      for (const query of ['', '?dryRun=true']) {
        assertError(await edit(ctx.api, o, o.owner, payload, { query }), { code: 'VALIDATION_FAILED', instance: o.editsUrl, detail, invalidParams })
      }
    }
    assertError(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 1 }] }, { query: '?dryRun=maybe' }), {
      code: 'VALIDATION_FAILED', instance: o.editsUrl, detail: 'The query has invalid parameters.', invalidParams: [{ field: 'dryRun', message: 'must be a boolean' }],
    })
    assert.deepEqual(await everything(ctx.api, o), before)
  })

  it('keeps at most 100 lines: an edit that would leave 101 is 400 naming changes', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const products = []
    for (let i = 0; i < 101; i++) products.push((await ctx.api.product(admin, { price: 10, stockQuantity: 5 })).productId)
    const placed = await ctx.api.order(owner, products.slice(0, 100).map(productId => ({ productId, quantity: 1 })))
    const o = { admin, owner, a: products[0]!, b: products[100]!, orderId: placed.orderId, orderUrl: `/api/v1/orders/${placed.orderId}`, editsUrl: `/api/v1/orders/${placed.orderId}/edits` }
    const before = await everything(ctx.api, o)
    assertError(await edit(ctx.api, o, owner, { changes: [{ productId: o.b, quantity: 1 }] }), {
      code: 'VALIDATION_FAILED',
      instance: o.editsUrl,
      detail: REQUEST_INVALID,
      invalidParams: [{ field: 'changes', message: 'would leave the order with 101 lines; an order has at most 100' }],
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    assert.equal((await edit(ctx.api, o, owner, { changes: [{ productId: o.a, quantity: 0 }, { productId: o.b, quantity: 1 }] })).statusCode, 201)
  })

  it('more stock is reserved all or nothing: 409 INSUFFICIENT_STOCK, nothing changed, also in a preview', async () => {
    const o = await placedOrder(ctx.api)
    const before = await everything(ctx.api, o)
    for (const query of ['', '?dryRun=true']) {
      assertError(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.b, quantity: 1 }, { productId: o.a, quantity: 11 }] }, { query }), {
        code: 'INSUFFICIENT_STOCK', instance: o.editsUrl, detail: `Not enough stock, nothing was changed (product ${o.a}: 9 more requested, 8 in stock).`,
      })
    }
    assert.deepEqual(await everything(ctx.api, o), before)
    // Exactly what is left is enough.
    assert.equal((await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 10 }] })).statusCode, 201)
    assert.equal(await ctx.api.stockOf(o.a), 0)
  })

  it('an unknown edit is 404 EDIT_NOT_FOUND, also one of another order', async () => {
    const o = await placedOrder(ctx.api)
    const other = await ctx.api.order(o.owner, [{ productId: o.b, quantity: 1 }])
    const done = assertEdit(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 3 }, { productId: o.b, quantity: 1 }] }), 201, firstEdit(o, o.owner.id))
    const url = `/api/v1/orders/${other.orderId}/edits/${done.editId}`
    assertError(await get(ctx.api, url, o.owner), { code: 'EDIT_NOT_FOUND', instance: url, detail: `Order ${other.orderId} has no edit ${done.editId}.` })
    assert.deepEqual(successData(await get(ctx.api, `/api/v1/orders/${other.orderId}/edits`, o.owner)), [])
    assertError(await get(ctx.api, `${o.editsUrl}/abc`, o.owner), {
      code: 'VALIDATION_FAILED', instance: `${o.editsUrl}/abc`, detail: 'The path has invalid parameters.', invalidParams: [{ field: 'editId', message: /./ }],
    })
  })

  it('Idempotency-Key: a retry replays the 201 as 200 with Idempotent-Replayed although its If-Match is stale now; another body under the key is 422', async () => {
    const o = await placedOrder(ctx.api)
    const payload = { changes: [{ productId: o.a, quantity: 3 }, { productId: o.b, quantity: 1 }] }
    const key = { 'idempotency-key': 'edit-1' }
    const first = await edit(ctx.api, o, o.owner, payload, { headers: key })
    const done = assertEdit(first, 201, firstEdit(o, o.owner.id))
    const after = await everything(ctx.api, o)
    const repeat = await edit(ctx.api, o, o.owner, payload, { headers: key })
    assert.equal(repeat.statusCode, 200, repeat.body)
    assert.equal(repeat.headers['idempotent-replayed'], 'true')
    assert.equal(repeat.headers.location, `${o.editsUrl}/${done.editId}`)
    assert.equal(repeat.headers.etag, '"2"')
    assert.deepEqual(repeat.json(), first.json())
    const byBody = await edit(ctx.api, o, o.owner, { ...payload, idempotencyKey: 'edit-1' })
    assert.equal(byBody.statusCode, 200, byBody.body)
    assert.deepEqual(byBody.json(), first.json())
    assertError(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 4 }] }, { headers: key, ifMatch: '"2"' }), {
      code: 'IDEMPOTENCY_KEY_REUSED', instance: o.editsUrl, detail: 'This idempotency key was already used with a different request body.',
    })
    assertError(await edit(ctx.api, o, o.owner, payload, { headers: { 'idempotency-key': 'edit-1' }, ifMatch: null }), {
      code: 'PRECONDITION_REQUIRED',
      instance: o.editsUrl,
      detail: 'An edit needs If-Match with the order\'s ETag (now "2"), so that it applies to the version it was made against.',
    })
    assert.deepEqual(await everything(ctx.api, o), after)
  })

  it('of two concurrent edits with the same If-Match exactly one applies; the other is 412', async () => {
    const o = await placedOrder(ctx.api)
    const answers = await Promise.all([
      edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 3 }] }),
      edit(ctx.api, o, o.admin, { changes: [{ productId: o.b, quantity: 2 }] }),
    ])
    assert.deepEqual(answers.map(res => res.statusCode).toSorted(), [201, 412], answers.map(res => res.body).join('\n'))
    const applied = answers.find(res => res.statusCode === 201)!.json().data as OrderEdit
    assert.deepEqual(successData(await get(ctx.api, o.editsUrl, o.owner)), [applied])
    assert.equal((await adminOrder(ctx.api, o)).version, 2)
    assert.deepEqual([await ctx.api.stockOf(o.a), await ctx.api.stockOf(o.b)], applied.changes[0]!.productId === o.a ? [7, 10] : [8, 8])
    assert.deepEqual((await eventsOf(ctx.api, o)).map(event => event.type), ['order.placed', 'order.edited'])
  })

  it('a line cannot go below what shipped: 400 naming changes[i].quantity', async () => {
    const o = await placedOrder(ctx.api)
    // A shipment of one of the two: written directly, as the shipping verb is not served yet.
    const { id } = await ctx.api.app.db.insertInto('fulfillments')
      .values({ order_id: o.orderId, carrier: null, tracking_number: null, tracking_url: null }).returning('id').executeTakeFirstOrThrow()
    await ctx.api.app.db.insertInto('fulfillment_items').values({ fulfillment_id: id, product_id: o.a, quantity: 1 }).execute()
    const before = await everything(ctx.api, o)
    assertError(await edit(ctx.api, o, o.owner, { changes: [{ productId: o.b, quantity: 1 }, { productId: o.a, quantity: 0 }] }), {
      code: 'VALIDATION_FAILED',
      instance: o.editsUrl,
      detail: REQUEST_INVALID,
      invalidParams: [{ field: 'changes[1].quantity', message: 'must be at least 1, the quantity already shipped' }],
    })
    assert.deepEqual(await everything(ctx.api, o), before)
    assert.equal((await edit(ctx.api, o, o.owner, { changes: [{ productId: o.a, quantity: 1 }] })).statusCode, 201)
    assert.equal((await adminOrder(ctx.api, o)).fulfillmentStatus, 'FULFILLED')
  })
})
