import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { Category, Product } from '../../src/catalog/schemas.js'
import { assertError, describeEachBackend, type Member } from '../helper.js'

const INVALID = 'The request body has invalid parameters.'
const NOT_A_CATEGORY = { field: 'categoryId', message: 'is not an existing category' }
const URL = '/api/v1/admin/products'
const NOT_ADMIN = 'This operation requires the ADMIN role.'
const NO_CREDENTIAL = 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.'
/** A time well before any test runs, so that a change visibly moves updatedAt. */
const LONG_AGO = '2026-01-01T00:00:00.000Z'

describeEachBackend('products', (ctx) => {
  const send = (method: 'PUT' | 'PATCH', caller: Pick<Member, 'headers'> | undefined, id: number | string, payload: object): Promise<LightMyRequestResponse> =>
    ctx.api.inject({ method, url: `${URL}/${id}`, payload, ...(caller ? { headers: caller.headers } : {}) })

  async function category (admin: Member, name: string): Promise<Category> {
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/products/categories', headers: admin.headers, payload: { name } })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data
  }

  /** A product created, and last changed, LONG_AGO; returns what the API now shows. */
  async function agedProduct (admin: Member, payload: object = { name: 'Beans', description: 'Dark roast', price: 1250, stockQuantity: 40 }): Promise<Product> {
    const res = await ctx.api.inject({ method: 'POST', url: URL, headers: admin.headers, payload })
    assert.equal(res.statusCode, 201, res.body)
    const product = res.json().data as Product
    await ctx.api.app.db.updateTable('products')
      .set({ created_at: new Date(LONG_AGO), updated_at: new Date(LONG_AGO) })
      .where('id', '=', product.productId).execute()
    return { ...product, createdAt: LONG_AGO, updatedAt: LONG_AGO }
  }

  /** The product as an admin sees it now. */
  async function current (admin: Member, id: number): Promise<Product> {
    const res = await ctx.api.inject({ url: `${URL}/${id}`, headers: admin.headers })
    assert.equal(res.statusCode, 200, res.body)
    return res.json().data
  }

  /** A 200 envelope holding the changed product, whose updatedAt moved on from LONG_AGO. */
  function changed (res: LightMyRequestResponse): Product {
    assert.equal(res.statusCode, 200, res.body)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const { data, ...envelope } = res.json()
    assert.deepEqual(envelope, { success: true, error: null })
    assert.ok(data.updatedAt > LONG_AGO, `updatedAt ${data.updatedAt} did not move`)
    return data
  }

  it('lets an admin create a product: 201, the product, Location', async () => {
    const admin = await ctx.api.admin()
    const res = await ctx.api.inject({
      method: 'POST', url: URL, headers: admin.headers, payload: { name: 'Beans', description: 'Dark roast', price: 2450, stockQuantity: 7 },
    })
    assert.equal(res.statusCode, 201, res.body)
    const { productId, createdAt, updatedAt, ...product } = res.json().data
    assert.deepEqual(product, { name: 'Beans', description: 'Dark roast', price: 2450, currency: 'USD', stockQuantity: 7, categoryId: null, status: 'ACTIVE' })
    assert.equal(createdAt, updatedAt)
    assert.equal(res.headers.location, `/api/v1/admin/products/${productId}`)
    const back = await ctx.api.inject({ url: res.headers.location as string, headers: admin.headers })
    assert.deepEqual(back.json().data, res.json().data)
  })

  it('creates a product in a category, inactive if asked', async () => {
    const admin = await ctx.api.admin()
    const coffee = await category(admin, 'Coffee')
    const res = await ctx.api.inject({
      method: 'POST', url: URL, headers: admin.headers, payload: { name: 'Beans', price: 0, stockQuantity: 0, categoryId: coffee.categoryId, status: 'INACTIVE' },
    })
    assert.equal(res.statusCode, 201, res.body)
    const { productId: _id, createdAt: _created, updatedAt: _updated, ...product } = res.json().data
    assert.deepEqual(product, { name: 'Beans', description: null, price: 0, currency: 'USD', stockQuantity: 0, categoryId: coffee.categoryId, status: 'INACTIVE' })
  })

  it('refuses members with 403 and anonymous callers with 401', async () => {
    const member = await ctx.api.member()
    const payload = { name: 'Beans', price: 1, stockQuantity: 1 }
    assertError(await ctx.api.inject({ method: 'POST', url: URL, headers: member.headers, payload }), {
      code: 'ACCESS_DENIED', instance: URL, detail: NOT_ADMIN,
    })
    assertError(await ctx.api.inject({ method: 'POST', url: URL, payload }), {
      code: 'UNAUTHORIZED', instance: URL, detail: NO_CREDENTIAL,
    })
  })

  const invalid: Array<[string, object, Array<{ field: string, message: string }>]> = [
    ['an empty name', { name: '', price: 1, stockQuantity: 1 }, [{ field: 'name', message: 'must not be empty' }]],
    ['a 201-character name', { name: 'n'.repeat(201), price: 1, stockQuantity: 1 }, [{ field: 'name', message: 'must be at most 200 characters' }]],
    ['a negative price', { name: 'N', price: -1, stockQuantity: 1 }, [{ field: 'price', message: 'must be at least 0' }]],
    ['a fractional price', { name: 'N', price: 12.5, stockQuantity: 1 }, [{ field: 'price', message: 'must be an integer' }]],
    ['a negative stock', { name: 'N', price: 1, stockQuantity: -1 }, [{ field: 'stockQuantity', message: 'must be at least 0' }]],
    ['an unknown status', { name: 'N', price: 1, stockQuantity: 1, status: 'GONE' }, [{ field: 'status', message: 'must be one of ACTIVE, INACTIVE' }]],
    ['a currency (it is the deployment\'s)', { name: 'N', price: 1, stockQuantity: 1, currency: 'EUR' }, [{ field: 'currency', message: 'is not a recognised field' }]],
    ['a missing price', { name: 'N', stockQuantity: 1 }, [{ field: 'price', message: 'is required' }]],
    ['categoryId 0', { name: 'N', price: 1, stockQuantity: 1, categoryId: 0 }, [{ field: 'categoryId', message: 'must be at least 1' }]],
    ['a 5001-character description', { name: 'N', description: 'd'.repeat(5001), price: 1, stockQuantity: 1 }, [{ field: 'description', message: 'must be at most 5000 characters' }]],
  ]
  for (const [what, payload, invalidParams] of invalid) {
    it(`refuses ${what} with 400 and creates nothing`, async () => {
      const admin = await ctx.api.admin()
      assertError(await ctx.api.inject({ method: 'POST', url: URL, headers: admin.headers, payload }), {
        code: 'VALIDATION_FAILED', instance: URL, detail: INVALID, invalidParams,
      })
      assert.deepEqual(await ctx.api.app.db.selectFrom('products').select('id').execute(), [])
    })
  }

  it('refuses an unknown categoryId on create, PUT and PATCH with 400 naming categoryId, and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const coffee = await category(admin, 'Coffee')
    const unknown = coffee.categoryId + 1
    const expected = { code: 'VALIDATION_FAILED', detail: 'The request has invalid parameters.', invalidParams: [NOT_A_CATEGORY] }
    assertError(await ctx.api.inject({ method: 'POST', url: URL, headers: admin.headers, payload: { name: 'N', price: 1, stockQuantity: 1, categoryId: unknown } }), {
      ...expected, instance: URL,
    })
    assert.deepEqual(await ctx.api.app.db.selectFrom('products').select('id').execute(), [])

    const beans = await agedProduct(admin, { name: 'Beans', price: 1250, stockQuantity: 40, categoryId: coffee.categoryId })
    const put = { name: 'Other', description: null, price: 1, stockQuantity: 1, categoryId: unknown, status: 'INACTIVE' }
    assertError(await send('PUT', admin, beans.productId, put), { ...expected, instance: `${URL}/${beans.productId}` })
    assertError(await send('PATCH', admin, beans.productId, { price: 1, categoryId: unknown }), { ...expected, instance: `${URL}/${beans.productId}` })
    assert.deepEqual(await current(admin, beans.productId), beans)
  })

  it('shows an active product to anyone', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin, { name: 'Mug' })
    const res = await ctx.api.inject({ url: `/api/v1/products/${product.productId}` })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json().data, product)
  })

  it('hides inactive and unknown products from public paths with 404, but not from admins', async () => {
    const admin = await ctx.api.admin()
    const retired = await ctx.api.product(admin, { status: 'INACTIVE' })
    for (const id of [retired.productId, 999999]) {
      assertError(await ctx.api.inject({ url: `/api/v1/products/${id}` }), {
        code: 'PRODUCT_NOT_FOUND', instance: `/api/v1/products/${id}`, detail: `Product ${id} does not exist.`,
      })
    }
    const seen = await ctx.api.inject({ url: `/api/v1/admin/products/${retired.productId}`, headers: admin.headers })
    assert.equal(seen.json().data.status, 'INACTIVE')
    assertError(await ctx.api.inject({ url: `${URL}/999999`, headers: admin.headers }), {
      code: 'PRODUCT_NOT_FOUND', instance: `${URL}/999999`, detail: 'Product 999999 does not exist.',
    })
  })

  it('refuses a product id that is not a positive 64-bit integer with 400 naming id', async () => {
    const admin = await ctx.api.admin()
    const requests = [
      { url: '/api/v1/products/abc' },
      { url: `${URL}/abc`, headers: admin.headers },
      { method: 'PUT' as const, url: `${URL}/0`, headers: admin.headers, payload: { price: 1 } },
      { method: 'PATCH' as const, url: `${URL}/9223372036854775808`, headers: admin.headers, payload: { price: 1 } },
    ]
    for (const request of requests) {
      assertError(await ctx.api.inject(request), {
        code: 'VALIDATION_FAILED',
        instance: request.url,
        detail: 'The path has invalid parameters.',
        invalidParams: [{ field: 'id', message: 'must be a positive 64-bit integer' }],
      })
    }
  })

  it('replaces every field with PUT: 200, the updated product, a new updatedAt', async () => {
    const admin = await ctx.api.admin()
    const coffee = await category(admin, 'Coffee')
    const beans = await agedProduct(admin)
    const res = await send('PUT', admin, beans.productId, {
      name: 'Espresso beans', description: null, price: 1990, stockQuantity: 12, categoryId: coffee.categoryId, status: 'INACTIVE',
    })
    const product = changed(res)
    assert.deepEqual(product, {
      ...beans, name: 'Espresso beans', description: null, price: 1990, stockQuantity: 12, categoryId: coffee.categoryId, status: 'INACTIVE', updatedAt: product.updatedAt,
    })
    assert.deepEqual(await current(admin, beans.productId), product)

    // And back: description and category set again, categoryId to null.
    const again = changed(await send('PUT', admin, beans.productId, {
      name: 'Beans', description: 'Dark roast', price: 1250, stockQuantity: 40, categoryId: null, status: 'ACTIVE',
    }))
    assert.deepEqual(again, { ...beans, updatedAt: again.updatedAt })
  })

  it('refuses a PUT that leaves out any of the six fields, or sends currency, and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const beans = await agedProduct(admin)
    const full = { name: 'Other', description: 'Other', price: 1, stockQuantity: 1, categoryId: null, status: 'ACTIVE' }
    for (const field of Object.keys(full)) {
      const { [field as keyof typeof full]: _left, ...payload } = full
      assertError(await send('PUT', admin, beans.productId, payload), {
        code: 'VALIDATION_FAILED', instance: `${URL}/${beans.productId}`, detail: INVALID, invalidParams: [{ field, message: 'is required' }],
      })
    }
    assertError(await send('PUT', admin, beans.productId, { ...full, currency: 'USD' }), {
      code: 'VALIDATION_FAILED', instance: `${URL}/${beans.productId}`, detail: INVALID, invalidParams: [{ field: 'currency', message: 'is not a recognised field' }],
    })
    assert.deepEqual(await current(admin, beans.productId), beans)
  })

  it('changes only the fields a PATCH names', async () => {
    const admin = await ctx.api.admin()
    const coffee = await category(admin, 'Coffee')
    const beans = await agedProduct(admin)
    const cases: Array<[object, Partial<Product>]> = [
      [{ stockQuantity: 0 }, { stockQuantity: 0 }],
      [{ name: 'Beans, 1 kg', price: 2400 }, { name: 'Beans, 1 kg', price: 2400 }],
      [{ categoryId: coffee.categoryId }, { categoryId: coffee.categoryId }],
      [{ categoryId: null, description: null }, { categoryId: null, description: null }],
    ]
    let expected = beans
    for (const [payload, change] of cases) {
      const product = changed(await send('PATCH', admin, beans.productId, payload))
      expected = { ...expected, ...change, updatedAt: product.updatedAt }
      assert.deepEqual(product, expected, JSON.stringify(payload))
    }
    assert.equal(await ctx.api.stockOf(beans.productId), 0)
    assert.deepEqual(await current(admin, beans.productId), expected)
  })

  it('answers an empty PATCH with the product as it is, updatedAt included', async () => {
    const admin = await ctx.api.admin()
    const beans = await agedProduct(admin)
    const res = await send('PATCH', admin, beans.productId, {})
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json().data, beans)
    assert.deepEqual(await current(admin, beans.productId), beans)
  })

  it('takes a product off the public catalog with PATCH status INACTIVE, and back with ACTIVE', async () => {
    const admin = await ctx.api.admin()
    const beans = await agedProduct(admin)
    const publicIds = async () => (await ctx.api.inject({ url: '/api/v1/products' })).json().data.content.map((p: Product) => p.productId)
    assert.deepEqual(await publicIds(), [beans.productId])

    const inactive = changed(await send('PATCH', admin, beans.productId, { status: 'INACTIVE' }))
    assert.deepEqual(inactive, { ...beans, status: 'INACTIVE', updatedAt: inactive.updatedAt })
    assertError(await ctx.api.inject({ url: `/api/v1/products/${beans.productId}` }), {
      code: 'PRODUCT_NOT_FOUND', instance: `/api/v1/products/${beans.productId}`, detail: `Product ${beans.productId} does not exist.`,
    })
    assert.deepEqual(await publicIds(), [])

    changed(await send('PATCH', admin, beans.productId, { status: 'ACTIVE' }))
    assert.deepEqual(await publicIds(), [beans.productId])
  })

  it('leaves placed orders at the price they were placed at when the price changes', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await ctx.api.product(admin, { price: 1250 })
    const before = await ctx.api.order(member, [{ productId: beans.productId, quantity: 2 }])
    changed(await send('PATCH', admin, beans.productId, { price: 999 }))
    const after = await ctx.api.order(member, [{ productId: beans.productId, quantity: 2 }])

    const prices = async (orderId: number) => {
      const res = await ctx.api.inject({ url: `/api/v1/orders/${orderId}`, headers: member.headers })
      assert.equal(res.statusCode, 200, res.body)
      const { items: [item], totalAmount } = res.json().data
      return { unitPrice: item.unitPrice, lineTotal: item.lineTotal, totalAmount }
    }
    assert.deepEqual(await prices(before.orderId), { unitPrice: 1250, lineTotal: 2500, totalAmount: 2500 })
    assert.deepEqual(await prices(after.orderId), { unitPrice: 999, lineTotal: 1998, totalAmount: 1998 })
  })

  it('refuses PATCH values that break the product rules, or currency, and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const beans = await agedProduct(admin)
    const invalidPatches: Array<[object, { field: string, message: string }]> = [
      [{ price: -1 }, { field: 'price', message: 'must be at least 0' }],
      [{ stockQuantity: 1.5 }, { field: 'stockQuantity', message: 'must be an integer' }],
      [{ name: '' }, { field: 'name', message: 'must not be empty' }],
      [{ name: null }, { field: 'name', message: 'must be a string' }],
      [{ status: 'DELETED' }, { field: 'status', message: 'must be one of ACTIVE, INACTIVE' }],
      [{ currency: 'EUR' }, { field: 'currency', message: 'is not a recognised field' }],
    ]
    for (const [payload, param] of invalidPatches) {
      assertError(await send('PATCH', admin, beans.productId, payload), {
        code: 'VALIDATION_FAILED', instance: `${URL}/${beans.productId}`, detail: INVALID, invalidParams: [param],
      })
    }
    assert.deepEqual(await current(admin, beans.productId), beans)
  })

  it('refuses a control character in the name on create, PUT and PATCH with 400 naming name, and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const beans = await agedProduct(admin)
    const nameRefused = (instance: string) => ({
      code: 'VALIDATION_FAILED', instance, detail: INVALID, invalidParams: [{ field: 'name', message: 'must not contain control characters, format characters (such as U+200B or U+202E) or line separators' }],
    })
    for (const name of ['Beans\nFREE SHIPPING', 'Beans\r', '\u001B[31mBeans', 'Beans\u007F', 'Beans\u0085']) {
      assertError(await ctx.api.inject({ method: 'POST', url: URL, headers: admin.headers, payload: { name, price: 1, stockQuantity: 1 } }), nameRefused(URL))
      const put = { name, description: null, price: 1, stockQuantity: 1, categoryId: null, status: 'ACTIVE' }
      assertError(await send('PUT', admin, beans.productId, put), nameRefused(`${URL}/${beans.productId}`))
      assertError(await send('PATCH', admin, beans.productId, { name }), nameRefused(`${URL}/${beans.productId}`))
    }
    assert.deepEqual(await current(admin, beans.productId), beans)
    const count = await ctx.api.app.db.selectFrom('products').select(eb => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    assert.equal(Number(count.n), 1)
    const renamed = await send('PATCH', admin, beans.productId, { name: 'Beans — 1 kg, “dark” 😀' })
    assert.equal(changed(renamed).name, 'Beans — 1 kg, “dark” 😀', 'other characters are fine')
  })

  it('answers 404 PRODUCT_NOT_FOUND to a PUT or PATCH of an unknown product', async () => {
    const admin = await ctx.api.admin()
    const put = { name: 'N', description: null, price: 1, stockQuantity: 1, categoryId: null, status: 'ACTIVE' }
    for (const [method, payload] of [['PUT', put], ['PATCH', { price: 1 }]] as const) {
      assertError(await send(method, admin, 424242, payload), {
        code: 'PRODUCT_NOT_FOUND', instance: `${URL}/424242`, detail: 'Product 424242 does not exist.',
      })
    }
  })

  it('lets only admins PUT or PATCH: members get 403, anonymous callers 401', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    const beans = await agedProduct(admin)
    const put = { name: 'N', description: null, price: 1, stockQuantity: 1, categoryId: null, status: 'ACTIVE' }
    for (const [method, payload] of [['PUT', put], ['PATCH', { price: 1 }]] as const) {
      const instance = `${URL}/${beans.productId}`
      assertError(await send(method, member, beans.productId, payload), { code: 'ACCESS_DENIED', instance, detail: NOT_ADMIN })
      assertError(await send(method, undefined, beans.productId, payload), { code: 'UNAUTHORIZED', instance, detail: NO_CREDENTIAL })
    }
    assert.deepEqual(await current(admin, beans.productId), beans)
  })
})
