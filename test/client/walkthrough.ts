/**
 * The README's walk-through, written with the typed client (client/) instead of curl. It is compiled
 * with `tsc --strict` against types generated from the live document and run against a running
 * service by test/client/generated.test.ts; the root typecheck compiles it against the checked-in types.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { createOrderClient, OrderServiceError, pathId, type Order, type OrderSummary } from '../../client/src/index.js'

export async function walkThrough (baseUrl: string, admin: { email: string, password: string }): Promise<void> {
  const api = createOrderClient({ baseUrl })
  const email = `ada-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'

  // Register (the verification mail goes to the service's log), then log in: the client keeps the token.
  const registered = await api.call(api.client.POST('/api/v1/members', { body: { email, password, name: 'Ada' } }))
  assert.equal(registered.status, 201)
  const login = await api.login({ email, password })
  assert.equal(login.data.tokenType, 'Bearer')
  const me = (await api.call(api.client.GET('/api/v1/members/me'))).data
  assert.equal(me.email, email)

  // As the admin, create a product (prices in minor units).
  const back = createOrderClient({ baseUrl })
  await back.login(admin)
  const product = (await back.call(back.client.POST('/api/v1/admin/products', {
    body: { name: 'Espresso beans, 1 kg', price: 2450, stockQuantity: 100 },
  }))).data
  assert.equal(product.stockQuantity, 100)

  // Place an order with an idempotency key: 201 and its Location.
  const key = randomUUID()
  const order = { customerId: me.memberId, items: [{ productId: product.productId, quantity: 2 }] }
  const placed = await api.placeOrder(order, { idempotencyKey: key })
  assert.equal(placed.status, 201)
  assert.equal(placed.replayed, false)
  assert.equal(placed.location, `/api/v1/orders/${placed.data.orderId}`)
  const placedOrder: Order = placed.data
  assert.equal(placedOrder.status, 'PLACED')
  assert.equal(placedOrder.totalAmount, 4900)

  // Send it again: 200, the same order, replayed; stock taken once.
  const replay = await api.placeOrder(order, { idempotencyKey: key })
  assert.equal(replay.status, 200)
  assert.equal(replay.replayed, true)
  assert.equal(replay.data.orderId, placedOrder.orderId)
  assert.equal((await api.call(api.client.GET('/api/v1/products/{id}', { params: { path: { id: pathId(product.productId) } } }))).data.stockQuantity, 98)

  // A refused request is an OrderServiceError with the catalogue's code.
  await assert.rejects(api.placeOrder({ customerId: me.memberId, items: [{ productId: product.productId, quantity: 1000 }] }), (error: unknown) => {
    assert.ok(error instanceof OrderServiceError)
    assert.equal(error.code, 'INSUFFICIENT_STOCK')
    assert.equal(error.status, 409)
    assert.equal(error.title, 'Insufficient Stock')
    return true
  })

  // Confirm it (this opens its payment) with the ETag it has now, then list my orders.
  const slice = (await api.listOrders({ size: 1 })).data
  const first: OrderSummary | undefined = slice.content[0]
  assert.equal(first?.orderId, placedOrder.orderId)
  const current = await api.getOrder(placedOrder.orderId)
  assert.ok(current.etag)
  const confirmed = await api.confirmOrder(placedOrder.orderId, { ifMatch: current.etag })
  assert.equal(confirmed.data, null)
  assert.ok(confirmed.etag && confirmed.etag !== current.etag, 'the verb answers with the new ETag')
  await assert.rejects(api.cancelOrder(placedOrder.orderId, { ifMatch: current.etag }), { code: 'PRECONDITION_FAILED', status: 412 })
  const listed = (await api.listOrders({ size: 10 })).data
  assert.deepEqual(listed.content.map(o => [o.orderId, o.status]), [[placedOrder.orderId, 'CONFIRMED']])
  const seen: number[] = []
  for await (const summary of api.eachOrder({ size: 1 })) seen.push(summary.orderId)
  assert.deepEqual(seen, [placedOrder.orderId])
  const history = (await api.call(api.client.GET('/api/v1/orders/{id}/history', { params: { path: { id: pathId(placedOrder.orderId) } } }))).data
  assert.deepEqual(history.map(entry => entry.action), ['create', 'confirm'])

  // Pay: tok_declined is declined (402), anything else approved.
  const paymentId = (await api.getOrder(placedOrder.orderId)).data.paymentId
  assert.ok(paymentId !== null)
  await assert.rejects(api.pay(paymentId, 'tok_declined'), (error: unknown) => {
    assert.ok(error instanceof OrderServiceError)
    assert.equal(error.code, 'PAYMENT_DECLINED')
    assert.equal(error.status, 402)
    return true
  })
  const paid = await api.pay(paymentId, 'tok_visa', { idempotencyKey: randomUUID() })
  assert.equal(paid.data.status, 'COMPLETED')

  // The back office: refund part of it, deliver the order, export every delivered order as CSV.
  const refunded = await back.call(back.client.PATCH('/api/v1/payments/{id}/refund', { params: { path: { id: pathId(paymentId) } }, body: { amount: 450 } }))
  assert.equal(refunded.data.status, 'PARTIALLY_REFUNDED')
  assert.equal(refunded.data.refundedAmount, 450)
  const delivered = await back.call(back.client.PATCH('/api/v1/admin/orders/{id}', { params: { path: { id: pathId(placedOrder.orderId) } }, body: { status: 'DELIVERED' } }))
  assert.equal(delivered.data.status, 'DELIVERED')
  const csv = await back.client.GET('/api/v1/admin/orders/export', { params: { query: { status: 'DELIVERED' } }, parseAs: 'text' })
  assert.equal(csv.response.status, 200)
  assert.match(String(csv.response.headers.get('content-type')), /^text\/csv/)
  assert.ok(typeof csv.data === 'string' && csv.data.includes(String(placedOrder.orderId)))

  // Trade the refresh token for a new pair.
  const renewed = await api.call(api.client.POST('/api/v1/auth/refresh', { body: { refreshToken: login.data.refreshToken } }))
  api.setToken(renewed.data.accessToken)

  // An API key for a script: the secret is shown once, then sent as X-API-Key.
  const created = await api.call(api.client.POST('/api/v1/members/me/api-keys', { body: { name: 'nightly export' } }))
  const script = createOrderClient({ baseUrl, apiKey: created.data.secret })
  assert.equal((await script.listOrders()).data.content.length, 1)

  // Log out: this session's tokens stop working at once.
  await api.call(api.client.POST('/api/v1/auth/logout'))
  await assert.rejects(api.call(api.client.GET('/api/v1/members/me')), { code: 'UNAUTHORIZED', status: 401 })
}
