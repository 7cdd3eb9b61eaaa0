import assert from 'node:assert/strict'
import { it } from 'node:test'
import { assertError, describeEachBackend } from '../helper.js'

const BODY_INVALID = 'The request body has invalid parameters.'

describeEachBackend('POST /api/v1/orders', (ctx) => {
  it('places an order: 201, PLACED, price snapshot and totals, Location, stock reserved', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { name: 'Beans', price: 1250, stockQuantity: 10 })
    const mugs = await ctx.api.product(admin, { name: 'Mug', price: 899, stockQuantity: 3 })

    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: {
        customerId: member.id,
        items: [{ productId: mugs.productId, quantity: 3 }, { productId: beans.productId, quantity: 2 }],
        shippingAddress: '1 Main St',
        memo: 'ring twice',
      },
    })
    assert.equal(res.statusCode, 201, res.body)
    const order = res.json().data
    assert.equal(res.headers.location, `/api/v1/orders/${order.orderId}`)
    assert.equal(res.headers.etag, '"1"')
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assert.deepEqual({ ...order, orderId: 0, createdAt: '', updatedAt: '' }, {
      orderId: 0,
      customerId: member.id,
      status: 'PLACED',
      items: [
        { productId: mugs.productId, productName: 'Mug', quantity: 3, unitPrice: 899, lineTotal: 2697, fulfilledQuantity: 0, returnedQuantity: 0 },
        { productId: beans.productId, productName: 'Beans', quantity: 2, unitPrice: 1250, lineTotal: 2500, fulfilledQuantity: 0, returnedQuantity: 0 },
      ],
      totalAmount: 5197,
      currency: 'USD',
      shippingAddress: '1 Main St',
      memo: 'ring twice',
      paymentId: null,
      payments: [],
      paidAmount: 0,
      refundedAmount: 0,
      balanceDue: 5197,
      paymentStatus: 'UNPAID',
      fulfillmentStatus: 'UNFULFILLED',
      fulfillments: [],
      version: 1,
      allowedActions: ['confirm', 'cancel', 'delete', 'edit'],
      createdAt: '',
      updatedAt: '',
    })
    assert.match(order.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    assert.equal(await ctx.api.stockOf(beans.productId), 8)
    assert.equal(await ctx.api.stockOf(mugs.productId), 0)
  })

  it('answers with the order exactly as GET /orders/{id} then shows it, to the member and to an admin ordering for them', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { name: 'Beans', price: 1250, stockQuantity: 10 })
    const mugs = await ctx.api.product(admin, { name: 'Mug', price: 899, stockQuantity: 3 })
    const items = [{ productId: mugs.productId, quantity: 1 }, { productId: beans.productId, quantity: 2 }]
    for (const [caller, extra] of [[member, { memo: 'ring twice' }], [admin, { shippingAddress: '1 Main St' }]] as const) {
      const created = await ctx.api.inject({
        method: 'POST', url: '/api/v1/orders', headers: caller.headers, payload: { customerId: member.id, items, ...extra },
      })
      assert.equal(created.statusCode, 201, created.body)
      const read = await ctx.api.inject({ url: created.headers.location as string, headers: caller.headers })
      assert.equal(read.statusCode, 200, read.body)
      assert.deepEqual(created.json().data, read.json().data)
      assert.equal(created.headers.etag, read.headers.etag)
    }
  })

  it('refuses an order whose total is not a safe integer with 400 naming items, reserving nothing', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const dear = await ctx.api.product(admin, { price: Number.MAX_SAFE_INTEGER, stockQuantity: 10 })
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: member.id, items: [{ productId: dear.productId, quantity: 2 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'items', message: 'the order total is too large' }],
    })
    assert.equal(await ctx.api.stockOf(dear.productId), 10)
  })

  it('keeps the price it was placed at when the product price changes later', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { price: 1000 })
    const order = await ctx.api.order(member, [{ productId: beans.productId, quantity: 1 }])
    await ctx.api.app.db.updateTable('products').set({ price: 5000 }).where('id', '=', beans.productId).execute()
    const res = await ctx.api.inject({ url: `/api/v1/orders/${order.orderId}`, headers: member.headers })
    assert.equal(res.json().data.items[0].unitPrice, 1000)
    assert.equal(res.json().data.totalAmount, 1000)
  })

  it('lets an admin order for an existing member', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin)
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: admin.headers, payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 1 }] },
    })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().data.customerId, member.id)
    const history = await ctx.api.inject({ url: `/api/v1/orders/${res.json().data.orderId}/history`, headers: member.headers })
    assert.deepEqual(history.json().data.map((h: { actorId: number, actorRole: string }) => [h.actorId, h.actorRole]), [[admin.id, 'ADMIN']])
  })

  it('refuses an admin order for an unknown member with 400 naming customerId', async () => {
    const admin = await ctx.api.admin()
    const beans = await ctx.api.product(admin)
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: admin.headers, payload: { customerId: 987654, items: [{ productId: beans.productId, quantity: 1 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'customerId', message: 'is not a registered member' }],
    })
    assert.equal(await ctx.api.stockOf(beans.productId), 100)
  })

  it('refuses a member ordering for someone else with 403, reserving nothing', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const other = await ctx.api.member('other')
    const beans = await ctx.api.product(admin)
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: other.id, items: [{ productId: beans.productId, quantity: 1 }] },
    })
    assertError(res, { code: 'ACCESS_DENIED', instance: '/api/v1/orders', detail: 'A member may only place orders for itself.' })
    assert.equal(await ctx.api.stockOf(beans.productId), 100)
  })

  it('refuses anonymous callers with 401 and WWW-Authenticate', async () => {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/orders', payload: { customerId: 1, items: [{ productId: 1, quantity: 1 }] } })
    assertError(res, { code: 'UNAUTHORIZED', instance: '/api/v1/orders', detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.' })
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="order-service"')
  })

  const invalidBodies: Array<[string, Record<string, unknown>, Array<{ field: string, message: string }>]> = [
    ['a missing customerId', { items: [{ productId: 1, quantity: 1 }] }, [{ field: 'customerId', message: 'is required' }]],
    ['a null customerId', { customerId: null, items: [{ productId: 1, quantity: 1 }] }, [{ field: 'customerId', message: 'must be an integer' }]],
    ['a string customerId', { customerId: '1', items: [{ productId: 1, quantity: 1 }] }, [{ field: 'customerId', message: 'must be an integer' }]],
    ['an empty items array', { customerId: 1, items: [] }, [{ field: 'items', message: 'must not be empty' }]],
    ['missing items', { customerId: 1 }, [{ field: 'items', message: 'is required' }]],
    ['101 items', { customerId: 1, items: Array.from({ length: 101 }, (_, i) => ({ productId: i + 1, quantity: 1 })) }, [{ field: 'items', message: 'must have at most 100 items' }]],
    ['a zero quantity', { customerId: 1, items: [{ productId: 1, quantity: 0 }] }, [{ field: 'items[0].quantity', message: 'must be at least 1' }]],
    ['a quantity over 10000', { customerId: 1, items: [{ productId: 1, quantity: 10001 }] }, [{ field: 'items[0].quantity', message: 'must be at most 10000' }]],
    ['a fractional quantity', { customerId: 1, items: [{ productId: 1, quantity: 1.5 }] }, [{ field: 'items[0].quantity', message: 'must be an integer' }]],
    ['a missing productId', { customerId: 1, items: [{ quantity: 1 }] }, [{ field: 'items[0].productId', message: 'is required' }]],
    ['an unknown item field', { customerId: 1, items: [{ productId: 1, quantity: 1, price: 1 }] }, [{ field: 'items[0].price', message: 'is not a recognised field' }]],
    ['an unknown field', { customerId: 1, items: [{ productId: 1, quantity: 1 }], status: 'DELIVERED' }, [{ field: 'status', message: 'is not a recognised field' }]],
    ['a memo over 1000 characters', { customerId: 1, items: [{ productId: 1, quantity: 1 }], memo: 'm'.repeat(1001) }, [{ field: 'memo', message: 'must be at most 1000 characters' }]],
    ['a shipping address over 500 characters', { customerId: 1, items: [{ productId: 1, quantity: 1 }], shippingAddress: 'a'.repeat(501) }, [{ field: 'shippingAddress', message: 'must be at most 500 characters' }]],
    ['an empty idempotencyKey', { customerId: 1, items: [{ productId: 1, quantity: 1 }], idempotencyKey: '' }, [{ field: 'idempotencyKey', message: 'must be 1 to 255 printable ASCII characters' }]],
  ]
  for (const [what, payload, invalidParams] of invalidBodies) {
    it(`rejects ${what} with 400 and changes nothing`, async () => {
      const member = await ctx.api.member()
      const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/orders', headers: member.headers, payload })
      assertError(res, { code: 'VALIDATION_FAILED', instance: '/api/v1/orders', detail: BODY_INVALID, invalidParams })
      const count = await ctx.api.app.db.selectFrom('orders').select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
      assert.equal(Number(count.n), 0)
    })
  }

  it('lists every problem at once', async () => {
    const member = await ctx.api.member()
    const res = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { items: [{ productId: 0, quantity: 0 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: BODY_INVALID,
      invalidParams: [
        { field: 'customerId', message: 'is required' },
        { field: 'items[0].productId', message: 'must be at least 1' },
        { field: 'items[0].quantity', message: 'must be at least 1' },
      ],
    })
  })

  it('refuses the same product twice with 400 naming the repeat', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin)
    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 1 }, { productId: beans.productId, quantity: 2 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'Each product may appear only once in an order.',
      invalidParams: [{ field: 'items[1].productId', message: 'repeats items[0].productId; list each product once' }],
    })
    assert.equal(await ctx.api.stockOf(beans.productId), 100)
  })

  it('refuses unknown and inactive products with 400 naming each, reserving nothing', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { stockQuantity: 5 })
    const retired = await ctx.api.product(admin, { status: 'INACTIVE' })
    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 1 }, { productId: 424242, quantity: 1 }, { productId: retired.productId, quantity: 1 }] },
    })
    assertError(res, {
      code: 'VALIDATION_FAILED',
      instance: '/api/v1/orders',
      detail: 'Every item must be an active product.',
      invalidParams: [
        { field: 'items[1].productId', message: 'is not an active product' },
        { field: 'items[2].productId', message: 'is not an active product' },
      ],
    })
    assert.equal(await ctx.api.stockOf(beans.productId), 5)
  })

  it('refuses an order whose quantity exceeds the stock with 409, reserving nothing for any item', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { stockQuantity: 5 })
    const mugs = await ctx.api.product(admin, { stockQuantity: 2 })
    const res = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 5 }, { productId: mugs.productId, quantity: 3 }] },
    })
    assertError(res, {
      code: 'INSUFFICIENT_STOCK',
      instance: '/api/v1/orders',
      detail: `Not enough stock, nothing was reserved (product ${mugs.productId}: 3 requested, 2 in stock).`,
    })
    assert.equal(await ctx.api.stockOf(beans.productId), 5)
    assert.equal(await ctx.api.stockOf(mugs.productId), 2)
  })

  it('checks in the contract order: body (400) before customer (403) before products (400) before stock (409)', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const other = await ctx.api.member('other')
    const scarce = await ctx.api.product(admin, { stockQuantity: 0 })
    const forOther = await ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: other.id, items: [{ productId: 99999, quantity: 1 }] },
    })
    assert.equal(forOther.statusCode, 403)
    // A repeated product is body validation, which comes before the customer check (CONTRACT §10).
    const repeatedForOther = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: other.id, items: [{ productId: scarce.productId, quantity: 1 }, { productId: scarce.productId, quantity: 1 }] },
    })
    assert.equal(repeatedForOther.statusCode, 400, repeatedForOther.body)
    assert.equal(repeatedForOther.json().error.code, 'VALIDATION_FAILED')
    const both = await ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: [{ productId: scarce.productId, quantity: 1 }, { productId: 99999, quantity: 1 }] },
    })
    assert.equal(both.statusCode, 400)
    assert.equal(both.json().error.code, 'VALIDATION_FAILED')
  })

  it('reserves stock exactly: 12 concurrent orders for a stock of 5 → exactly 5 succeed, stock ends at 0', async () => {
    const admin = await ctx.api.admin()
    const beans = await ctx.api.product(admin, { stockQuantity: 5 })
    const members = await Promise.all(Array.from({ length: 12 }, (_, i) => ctx.api.member(`buyer${i}`)))
    const results = await Promise.all(members.map(member => ctx.api.inject({
      method: 'POST', url: '/api/v1/orders', headers: member.headers, payload: { customerId: member.id, items: [{ productId: beans.productId, quantity: 1 }] },
    })))
    const statuses = results.map(res => res.statusCode).sort()
    assert.deepEqual(statuses, [...Array(5).fill(201), ...Array(7).fill(409)], results.map(r => r.body).join('\n'))
    for (const res of results.filter(r => r.statusCode === 409)) assert.equal(res.json().error.code, 'INSUFFICIENT_STOCK')
    assert.equal(await ctx.api.stockOf(beans.productId), 0)
    const orders = await ctx.api.app.db.selectFrom('orders').select('id').execute()
    assert.equal(orders.length, 5)
  })

  it('never deadlocks when concurrent orders lock the same products in opposite order', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const a = await ctx.api.product(admin, { stockQuantity: 1000 })
    const b = await ctx.api.product(admin, { stockQuantity: 1000 })
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items: i % 2 ? [{ productId: a.productId, quantity: 1 }, { productId: b.productId, quantity: 1 }] : [{ productId: b.productId, quantity: 1 }, { productId: a.productId, quantity: 1 }] },
    })))
    assert.deepEqual(results.map(r => r.statusCode), Array(20).fill(201))
    assert.equal(await ctx.api.stockOf(a.productId), 980)
    assert.equal(await ctx.api.stockOf(b.productId), 980)
  })
}, { env: { MAX_UNPAID_ORDERS: '0' } }) // one member places 20 unpaid orders at once (the limit has its own tests: unpaid.test.ts)
