import assert from 'node:assert/strict'
import { it } from 'node:test'
import { findOrder } from '../../src/orders/repository.js'
import { assertError, describeEachBackend, type Api, type Member } from '../helper.js'

type Status = 'PENDING' | 'PLACED' | 'CONFIRMED' | 'DELIVERED' | 'CANCELLED' | 'DELETED'

describeEachBackend('order lifecycle', (ctx) => {
  /** An order of 2 units of a product with stock 10, moved to `status` directly where no v1 operation leads. */
  async function orderIn (status: Status, api: Api = ctx.api) {
    const admin = await api.admin()
    const owner = await api.member('owner')
    const product = await api.product(admin, { stockQuantity: 10 })
    const order = await api.order(owner, [{ productId: product.productId, quantity: 2 }])
    if (status !== 'PLACED') {
      await api.app.db.updateTable('orders').set({ status }).where('id', '=', order.orderId).execute()
    }
    return { admin, owner, product, id: order.orderId, url: `/api/v1/orders/${order.orderId}` }
  }

  const patch = (url: string, who: Member, payload?: object) =>
    ctx.api.inject({ method: 'PATCH', url, headers: who.headers, ...(payload ? { payload } : {}) })
  const get = (url: string, who: Member) => ctx.api.inject({ url, headers: who.headers })
  const statusOf = async (id: number) =>
    (await ctx.api.app.db.selectFrom('orders').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status
  const historyOf = (id: number) =>
    ctx.api.app.db.selectFrom('order_history').select(['from_status', 'to_status', 'action']).where('order_id', '=', id).orderBy('id').execute()

  for (const from of ['PLACED', 'PENDING'] as const) {
    it(`confirms a ${from} order for its owner: 200, data null, CONFIRMED, stock still reserved`, async () => {
      const o = await orderIn(from)
      const res = await patch(`${o.url}/confirm`, o.owner)
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json(), { success: true, data: null, error: null })
      assert.equal(await statusOf(o.id), 'CONFIRMED')
      assert.equal(await ctx.api.stockOf(o.product.productId), 8)
      assert.deepEqual((await historyOf(o.id)).at(-1), { from_status: from, to_status: 'CONFIRMED', action: 'confirm' })
    })
  }

  for (const from of ['PLACED', 'PENDING', 'CONFIRMED'] as const) {
    for (const who of ['owner', 'admin'] as const) {
      it(`cancels a ${from} order (${who}): CANCELLED and the stock released`, async () => {
        const o = await orderIn(from)
        const res = await patch(`${o.url}/cancel`, o[who])
        assert.equal(res.statusCode, 200, res.body)
        assert.deepEqual(res.json(), { success: true, data: null, error: null })
        assert.equal(await statusOf(o.id), 'CANCELLED')
        assert.equal(await ctx.api.stockOf(o.product.productId), 10)
        assert.deepEqual((await historyOf(o.id)).at(-1), { from_status: from, to_status: 'CANCELLED', action: 'cancel' })
      })
    }
  }

  it('refuses to deliver an order that has no payment with 400', async () => {
    const o = await orderIn('CONFIRMED')
    const res = await patch(o.url, o.admin, { orderId: o.id, status: 'DELIVERED' })
    assertError(res, {
      code: 'INVALID_ORDER_STATUS',
      instance: o.url,
      detail: 'Cannot deliver an order that is CONFIRMED: its balanceDue is 2500 (paymentStatus UNPAID); delivery needs it paid in full.',
    })
    assert.equal(await statusOf(o.id), 'CONFIRMED')
  })

  for (const from of ['PLACED', 'PENDING', 'CONFIRMED'] as const) {
    it(`deletes a ${from} order: DELETED, stock released, one history entry ${from} → DELETED`, async () => {
      const o = await orderIn(from)
      const res = await patch(`${o.url}/delete`, o.owner)
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json(), { success: true, data: null, error: null })
      assert.equal(await statusOf(o.id), 'DELETED')
      assert.equal(await ctx.api.stockOf(o.product.productId), 10)
      const history = await historyOf(o.id)
      assert.equal(history.length, 2)
      assert.deepEqual(history[1], { from_status: from, to_status: 'DELETED', action: 'delete' })
    })
  }

  for (const from of ['CANCELLED', 'DELIVERED'] as const) {
    it(`deletes a ${from} order without touching stock`, async () => {
      const o = await orderIn(from)
      const stock = await ctx.api.stockOf(o.product.productId)
      const res = await patch(`${o.url}/delete`, o.admin)
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(await statusOf(o.id), 'DELETED')
      assert.equal(await ctx.api.stockOf(o.product.productId), stock)
    })
  }

  it('applies a verb to an order already in its target state as a 200 no-op', async () => {
    const o = await orderIn('PLACED')
    assert.equal((await patch(`${o.url}/cancel`, o.owner)).statusCode, 200)
    const before = await get(o.url, o.owner)
    const again = await patch(`${o.url}/cancel`, o.owner)
    assert.equal(again.statusCode, 200)
    assert.deepEqual(again.json(), { success: true, data: null, error: null })
    const after = await get(o.url, o.owner)
    assert.equal(after.json().data.version, before.json().data.version)
    assert.equal(after.headers.etag, before.headers.etag)
    assert.equal((await historyOf(o.id)).length, 2)
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)

    const confirmed = await orderIn('CONFIRMED')
    assert.equal((await patch(`${confirmed.url}/confirm`, confirmed.owner)).statusCode, 200)
    assert.equal((await historyOf(confirmed.id)).length, 1)
  })

  const illegal: Array<[Status, 'confirm' | 'cancel', string]> = [
    ['DELIVERED', 'cancel', 'Cannot cancel an order that is DELIVERED.'],
    ['CANCELLED', 'confirm', 'Cannot confirm an order that is CANCELLED.'],
    ['DELIVERED', 'confirm', 'Cannot confirm an order that is DELIVERED.'],
  ]
  for (const [from, verb, detail] of illegal) {
    it(`refuses ${verb} of a ${from} order with 400 INVALID_ORDER_STATUS and changes nothing`, async () => {
      const o = await orderIn(from)
      const res = await patch(`${o.url}/${verb}`, o.owner)
      assertError(res, { code: 'INVALID_ORDER_STATUS', instance: `${o.url}/${verb}`, detail })
      assert.equal(await statusOf(o.id), from)
      assert.equal((await historyOf(o.id)).length, 1)
    })
  }

  it("refuses an admin's confirm of someone else's order with 403", async () => {
    const o = await orderIn('PLACED')
    const res = await patch(`${o.url}/confirm`, o.admin)
    assertError(res, { code: 'ACCESS_DENIED', instance: `${o.url}/confirm`, detail: 'Only the customer who placed the order may confirm it.' })
    assert.equal(await statusOf(o.id), 'PLACED')
  })

  it('refuses an owner setting DELIVERED with 403', async () => {
    const o = await orderIn('CONFIRMED')
    const res = await patch(o.url, o.owner, { orderId: o.id, status: 'DELIVERED' })
    assertError(res, { code: 'ACCESS_DENIED', instance: o.url, detail: 'Only an admin may deliver an order.' })
  })

  it('refuses another member on every /orders/{id} path with 403, and anonymous callers with 401', async () => {
    const o = await orderIn('PLACED')
    const stranger = await ctx.api.member('stranger')
    const requests = [
      { method: 'GET', url: o.url },
      { method: 'GET', url: `${o.url}/items` },
      { method: 'GET', url: `${o.url}/history` },
      { method: 'PUT', url: o.url, payload: { status: 'PLACED', memo: null, shippingAddress: null } },
      { method: 'PATCH', url: o.url, payload: { orderId: o.id, memo: 'mine now' } },
      { method: 'PATCH', url: `${o.url}/confirm` },
      { method: 'PATCH', url: `${o.url}/cancel` },
      { method: 'PATCH', url: `${o.url}/delete` },
    ] as const
    for (const request of requests) {
      const denied = await ctx.api.inject({ ...request, headers: stranger.headers })
      assertError(denied, { code: 'ACCESS_DENIED', instance: request.url, detail: 'Only the owner of this order or an admin may do this.' })
      const anonymous = await ctx.api.inject({ ...request })
      assertError(anonymous, { code: 'UNAUTHORIZED', instance: request.url, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.' })
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="order-service"')
    }
    assert.equal(await statusOf(o.id), 'PLACED')
    assert.equal((await historyOf(o.id)).length, 1)
  })

  it("lets an admin read, cancel and delete someone else's order", async () => {
    const o = await orderIn('PLACED')
    assert.equal((await get(o.url, o.admin)).statusCode, 200)
    assert.equal((await get(`${o.url}/items`, o.admin)).statusCode, 200)
    assert.equal((await patch(`${o.url}/cancel`, o.admin)).statusCode, 200)
    assert.equal((await patch(`${o.url}/delete`, o.admin)).statusCode, 200)
    const history = await ctx.api.inject({ url: `${o.url}/history`, headers: o.admin.headers })
    assert.deepEqual(history.json().data.map((h: { actorId: number, actorRole: string, action: string }) => [h.action, h.actorId, h.actorRole]), [
      ['create', o.owner.id, 'USER'],
      ['cancel', o.admin.id, 'ADMIN'],
      ['delete', o.admin.id, 'ADMIN'],
    ])
  })

  it('hides a deleted order from its owner on every path, keeps the row, and shows it to admins', async () => {
    const o = await orderIn('PLACED')
    assert.equal((await patch(`${o.url}/delete`, o.owner)).statusCode, 200)
    const requests = [
      { method: 'GET', url: o.url },
      { method: 'GET', url: `${o.url}/items` },
      { method: 'GET', url: `${o.url}/history` },
      { method: 'PUT', url: o.url, payload: { status: 'DELETED', memo: null, shippingAddress: null } },
      { method: 'PATCH', url: o.url, payload: { orderId: o.id, memo: 'x' } },
      { method: 'PATCH', url: `${o.url}/confirm` },
      { method: 'PATCH', url: `${o.url}/cancel` },
      { method: 'PATCH', url: `${o.url}/delete` },
    ] as const
    for (const request of requests) {
      const res = await ctx.api.inject({ ...request, headers: o.owner.headers })
      assertError(res, { code: 'ORDER_NOT_FOUND', instance: request.url, detail: `Order ${o.id} does not exist.` })
    }
    assert.equal(await statusOf(o.id), 'DELETED')
    const seen = await get(o.url, o.admin)
    assert.equal(seen.statusCode, 200)
    assert.equal(seen.json().data.status, 'DELETED')
    assert.deepEqual(seen.json().data.allowedActions, [])
    const again = await patch(`${o.url}/delete`, o.admin)
    assert.equal(again.statusCode, 200)
    const list = await ctx.api.inject({ url: '/api/v1/orders', headers: o.owner.headers })
    assert.deepEqual(list.json().data.content, [])
  })

  it('answers GET with the detail, an ETag from the version and the verbs this caller may apply', async () => {
    const o = await orderIn('PLACED')
    const mine = await get(o.url, o.owner)
    assert.equal(mine.statusCode, 200)
    assert.equal(mine.headers.etag, '"1"')
    assert.deepEqual(mine.json().data.allowedActions, ['confirm', 'cancel', 'delete', 'edit'])
    assert.deepEqual((await get(o.url, o.admin)).json().data.allowedActions, ['cancel', 'delete', 'edit'])
    await patch(`${o.url}/cancel`, o.owner)
    const cancelled = await get(o.url, o.owner)
    assert.equal(cancelled.headers.etag, '"2"')
    assert.deepEqual(cancelled.json().data.allowedActions, ['delete'])
  })

  it('answers each verb with the order’s new ETag, good for the next If-Match without a GET', async () => {
    const o = await orderIn('PLACED')
    const confirmed = await patch(`${o.url}/confirm`, o.owner)
    assert.deepEqual(confirmed.json(), { success: true, data: null, error: null })
    assert.equal(confirmed.headers.etag, '"2"')
    const cancelled = await ctx.api.inject({ method: 'PATCH', url: `${o.url}/cancel`, headers: { ...o.owner.headers, 'if-match': confirmed.headers.etag } })
    assert.equal(cancelled.statusCode, 200, cancelled.body)
    assert.equal(cancelled.headers.etag, '"3"')
    const deleted = await ctx.api.inject({ method: 'PATCH', url: `${o.url}/delete`, headers: { ...o.owner.headers, 'if-match': cancelled.headers.etag } })
    assert.equal(deleted.statusCode, 200, deleted.body)
    // The deleted order's version, which an admin can still read.
    assert.equal(deleted.headers.etag, (await get(o.url, o.admin)).headers.etag)
    assert.equal(deleted.headers.etag, '"4"')
  })

  it('answers concurrent GETs of several orders each for its own caller', async () => {
    const a = await orderIn('PLACED')
    const deleted = await orderIn('DELETED')
    const stranger = await ctx.api.member('stranger')
    const missing = '/api/v1/orders/9223372036854775807'
    const asked = [
      [a.url, a.owner], [a.url, a.admin], [a.url, stranger], [deleted.url, deleted.owner], [deleted.url, deleted.admin],
      [missing, a.owner], [`${a.url}/items`, a.owner], [`${deleted.url}/history`, deleted.admin],
    ] as const
    const [owner, admin, denied, hidden, shown, notFound, items, history] = await Promise.all(asked.map(([url, who]) => get(url, who)))
    assert.equal(owner!.statusCode, 200)
    assert.equal(owner!.json().data.orderId, a.id)
    assert.deepEqual(owner!.json().data.allowedActions, ['confirm', 'cancel', 'delete', 'edit'])
    assert.equal(admin!.statusCode, 200)
    assert.deepEqual(admin!.json().data.allowedActions, ['cancel', 'delete', 'edit'])
    assertError(denied!, { code: 'ACCESS_DENIED', instance: a.url, detail: 'Only the owner of this order or an admin may do this.' })
    assertError(hidden!, { code: 'ORDER_NOT_FOUND', instance: deleted.url, detail: `Order ${deleted.id} does not exist.` })
    assert.equal(shown!.statusCode, 200)
    assert.equal(shown!.json().data.status, 'DELETED')
    assertError(notFound!, { code: 'ORDER_NOT_FOUND', instance: missing, detail: 'Order 9223372036854775807 does not exist.' })
    assert.deepEqual(items!.json().data, owner!.json().data.items)
    assert.deepEqual(history!.json().data.map((h: { action: string }) => h.action), ['create'])
  })

  it('reads an order beside ids that are not bigints without failing the read', async () => {
    const o = await orderIn('PLACED')
    const found = await Promise.all([String(o.id), '9223372036854775808', '0', 'abc', String(o.id)].map(id => findOrder(ctx.api.app.db, id)))
    assert.deepEqual(found.map(order => order?.id), [o.id, undefined, undefined, undefined, o.id])
  })

  it('answers /items with the items of the detail', async () => {
    const o = await orderIn('PLACED')
    const items = await get(`${o.url}/items`, o.owner)
    assert.equal(items.statusCode, 200)
    assert.deepEqual(items.json(), { success: true, data: (await get(o.url, o.owner)).json().data.items, error: null })
    assert.deepEqual(items.json().data, [{ productId: o.product.productId, productName: 'Coffee beans', quantity: 2, unitPrice: 1250, lineTotal: 2500, fulfilledQuantity: 0, returnedQuantity: 0 }])
  })

  it('records every change in the history, oldest first, with the actor', async () => {
    const o = await orderIn('PLACED')
    await patch(`${o.url}/confirm`, o.owner)
    await patch(o.url, o.owner, { orderId: o.id, memo: 'gift wrap' })
    await patch(`${o.url}/cancel`, o.admin)
    const res = await get(`${o.url}/history`, o.owner)
    assert.equal(res.statusCode, 200)
    const entries = res.json().data
    for (const entry of entries) assert.match(entry.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    assert.deepEqual(entries.map(({ at: _at, ...rest }: { at: string }) => rest), [
      { from: null, to: 'PLACED', action: 'create', actorId: o.owner.id, actorRole: 'USER' },
      { from: 'PLACED', to: 'CONFIRMED', action: 'confirm', actorId: o.owner.id, actorRole: 'USER' },
      { from: 'CONFIRMED', to: 'CONFIRMED', action: 'update', actorId: o.owner.id, actorRole: 'USER' },
      { from: 'CONFIRMED', to: 'CANCELLED', action: 'cancel', actorId: o.admin.id, actorRole: 'ADMIN' },
    ])
  })

  it('PATCH changes the memo, bumps the version and the ETag, and leaves null or absent fields alone', async () => {
    const o = await orderIn('PLACED')
    const res = await patch(o.url, o.owner, { orderId: o.id, memo: 'ring twice' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers.etag, '"2"')
    assert.equal(res.json().data.memo, 'ring twice')
    assert.equal(res.json().data.version, 2)
    const unchanged = await patch(o.url, o.owner, { orderId: o.id, memo: null, status: null })
    assert.equal(unchanged.statusCode, 200)
    assert.equal(unchanged.json().data.memo, 'ring twice')
    assert.equal(unchanged.json().data.version, 2)
    assert.equal(unchanged.json().data.status, 'PLACED')
  })

  it('PATCH with a status obeys the same rules as the verbs', async () => {
    const o = await orderIn('PLACED')
    const cancel = await patch(o.url, o.owner, { orderId: o.id, status: 'CANCELLED' })
    assert.equal(cancel.statusCode, 200)
    assert.equal(cancel.json().data.status, 'CANCELLED')
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)
    const confirmed = await orderIn('CONFIRMED')
    const back = await patch(confirmed.url, confirmed.owner, { orderId: confirmed.id, status: 'PLACED' })
    assertError(back, { code: 'INVALID_ORDER_STATUS', instance: confirmed.url, detail: 'An order cannot be moved back to PLACED; it is CONFIRMED.' })
  })

  it('PATCH refuses an orderId that differs from the path, and unknown fields, with 400', async () => {
    const o = await orderIn('PLACED')
    const mismatch = await patch(o.url, o.owner, { orderId: o.id + 1, memo: 'x' })
    assertError(mismatch, {
      code: 'VALIDATION_FAILED',
      instance: o.url,
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'orderId', message: 'must equal the order id in the path' }],
    })
    const unknown = await patch(o.url, o.owner, { orderId: o.id, shippingAddress: 'x' })
    assertError(unknown, {
      code: 'VALIDATION_FAILED',
      instance: o.url,
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'shippingAddress', message: 'is not a recognised field' }],
    })
    const missing = await patch(o.url, o.owner, { memo: 'x' })
    assertError(missing, {
      code: 'VALIDATION_FAILED',
      instance: o.url,
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'orderId', message: 'is required' }],
    })
    assert.equal((await get(o.url, o.owner)).json().data.memo, null)
  })

  it('PUT replaces memo and address (null clears) and needs all three keys', async () => {
    const o = await orderIn('PLACED')
    const put = (payload: object) => ctx.api.inject({ method: 'PUT', url: o.url, headers: o.owner.headers, payload })
    const res = await put({ status: 'PLACED', memo: 'note', shippingAddress: '1 Main St' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers.etag, '"2"')
    assert.deepEqual([res.json().data.memo, res.json().data.shippingAddress], ['note', '1 Main St'])
    const cleared = await put({ status: 'PLACED', memo: null, shippingAddress: '1 Main St' })
    assert.equal(cleared.json().data.memo, null)
    const incomplete = await put({ status: 'PLACED', memo: 'x' })
    assertError(incomplete, {
      code: 'VALIDATION_FAILED',
      instance: o.url,
      detail: 'The request body has invalid parameters.',
      invalidParams: [{ field: 'shippingAddress', message: 'is required' }],
    })
  })

  it('PUT refuses an address change once the order is DELIVERED or CANCELLED, changing nothing at all', async () => {
    for (const status of ['DELIVERED', 'CANCELLED'] as const) {
      const o = await orderIn(status)
      const res = await ctx.api.inject({
        method: 'PUT', url: o.url, headers: o.owner.headers, payload: { status, memo: 'changed', shippingAddress: 'Elsewhere' },
      })
      assertError(res, { code: 'INVALID_ORDER_STATUS', instance: o.url, detail: `The shipping address cannot change once an order is ${status}.` })
      const order = await get(o.url, o.owner)
      assert.deepEqual([order.json().data.memo, order.json().data.shippingAddress, order.json().data.version], [null, null, 1])
    }
  })

  it('PUT judges the address against the status before the change: CONFIRMED → CANCELLED with a new address applies both', async () => {
    const o = await orderIn('CONFIRMED')
    const res = await ctx.api.inject({
      method: 'PUT', url: o.url, headers: o.owner.headers, payload: { status: 'CANCELLED', memo: null, shippingAddress: 'Return to sender' },
    })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual([res.json().data.status, res.json().data.shippingAddress], ['CANCELLED', 'Return to sender'])
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)
  })

  it('PUT refuses a status that is neither current nor a legal target', async () => {
    const o = await orderIn('CANCELLED')
    const res = await ctx.api.inject({ method: 'PUT', url: o.url, headers: o.owner.headers, payload: { status: 'CONFIRMED', memo: null, shippingAddress: null } })
    assertError(res, { code: 'INVALID_ORDER_STATUS', instance: o.url, detail: 'Cannot confirm an order that is CANCELLED.' })
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    it(`${method} honours If-Match: the current ETag or * applies, a stale one is 412 and changes nothing`, async () => {
      const o = await orderIn('PLACED')
      const payload = (memo: string) => method === 'PUT' ? { status: 'PLACED', memo, shippingAddress: null } : { orderId: o.id, memo }
      const send = (memo: string, ifMatch: string) =>
        ctx.api.inject({ method, url: o.url, headers: { ...o.owner.headers, 'if-match': ifMatch }, payload: payload(memo) })
      const first = await send('one', '"1"')
      assert.equal(first.statusCode, 200, first.body)
      assert.equal(first.headers.etag, '"2"')
      const stale = await send('two', '"1"')
      assertError(stale, {
        code: 'PRECONDITION_FAILED', instance: o.url, detail: 'If-Match does not match the order\'s current ETag "2"; fetch it again.',
      })
      assert.equal((await get(o.url, o.owner)).json().data.memo, 'one')
      const any = await send('three', '*')
      assert.equal(any.statusCode, 200)
      assert.equal(any.json().data.memo, 'three')
    })
  }

  for (const verb of ['confirm', 'cancel', 'delete'] as const) {
    it(`PATCH /orders/{id}/${verb} honours If-Match: a stale ETag is 412 and changes nothing, the current one applies`, async () => {
      const o = await orderIn('PLACED')
      assert.equal((await patch(o.url, o.owner, { orderId: o.id, memo: 'now version 2' })).statusCode, 200)
      const send = (ifMatch: string) =>
        ctx.api.inject({ method: 'PATCH', url: `${o.url}/${verb}`, headers: { ...o.owner.headers, 'if-match': ifMatch } })
      assertError(await send('"1"'), {
        code: 'PRECONDITION_FAILED', instance: `${o.url}/${verb}`, detail: 'If-Match does not match the order\'s current ETag "2"; fetch it again.',
      })
      assert.equal(await statusOf(o.id), 'PLACED')
      assert.equal(await ctx.api.stockOf(o.product.productId), 8)
      assert.equal((await historyOf(o.id)).length, 2)
      assert.equal((await send('"2"')).statusCode, 200)
      assert.equal(await statusOf(o.id), { confirm: 'CONFIRMED', cancel: 'CANCELLED', delete: 'DELETED' }[verb])
    })

    it(`PATCH /orders/{id}/${verb} takes no body: none or {} will do, a field is 400 naming it and changes nothing`, async () => {
      const o = await orderIn('PLACED')
      const url = `${o.url}/${verb}`
      for (const payload of [{ status: 'DELIVERED' }, { reason: 'changed my mind', memo: 'x' }]) {
        assertError(await patch(url, o.owner, payload), {
          code: 'VALIDATION_FAILED',
          instance: url,
          detail: 'The request body has invalid parameters.',
          invalidParams: Object.keys(payload).map(field => ({ field, message: 'is not a recognised field' })),
        })
      }
      assertError(await ctx.api.inject({ method: 'PATCH', url, headers: { ...o.owner.headers, 'content-type': 'application/json' }, payload: 'null' }), {
        code: 'MALFORMED_REQUEST', instance: url, detail: 'The request body must be a JSON object.',
      })
      assert.equal(await statusOf(o.id), 'PLACED')
      assert.equal((await historyOf(o.id)).length, 1)
      assert.equal((await patch(url, o.owner, {})).statusCode, 200)
      assert.equal(await statusOf(o.id), { confirm: 'CONFIRMED', cancel: 'CANCELLED', delete: 'DELETED' }[verb])
    })
  }

  it('cancels an order whose product an admin has since stocked to the maximum: the stock stays at the maximum', async () => {
    const o = await orderIn('PLACED')
    const url = `/api/v1/admin/products/${o.product.productId}`
    assert.equal((await ctx.api.inject({ method: 'PATCH', url, headers: o.admin.headers, payload: { stockQuantity: 2_147_483_647 } })).statusCode, 200)
    const res = await patch(`${o.url}/cancel`, o.owner)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(await statusOf(o.id), 'CANCELLED')
    assert.equal(await ctx.api.stockOf(o.product.productId), 2_147_483_647)
  })

  it('releases the stock exactly once under 10 concurrent cancels of one order', async () => {
    const o = await orderIn('PLACED')
    const results = await Promise.all(Array.from({ length: 10 }, () => patch(`${o.url}/cancel`, o.owner)))
    assert.deepEqual(results.map(r => r.statusCode), Array(10).fill(200))
    assert.equal(await ctx.api.stockOf(o.product.productId), 10)
    assert.deepEqual((await historyOf(o.id)).filter(h => h.action === 'cancel').length, 1)
  })
})
