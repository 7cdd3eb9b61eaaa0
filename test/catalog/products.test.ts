import assert from 'node:assert/strict'
import { it } from 'node:test'
import { assertError, describeEachBackend } from '../helper.js'

const INVALID = 'The request body has invalid parameters.'
const URL = '/api/v1/admin/products'

describeEachBackend('products', (ctx) => {
  it('lets an admin create a product: 201, the product, Location', async () => {
    const admin = await ctx.api.admin()
    const res = await ctx.api.inject({
      method: 'POST', url: URL, headers: admin.headers, payload: { name: 'Beans', description: 'Dark roast', price: 2450, stockQuantity: 7 },
    })
    assert.equal(res.statusCode, 201, res.body)
    const { productId, createdAt, updatedAt, ...product } = res.json().data
    assert.deepEqual(product, { name: 'Beans', description: 'Dark roast', price: 2450, currency: 'USD', stockQuantity: 7, status: 'ACTIVE' })
    assert.equal(createdAt, updatedAt)
    assert.equal(res.headers.location, `/api/v1/admin/products/${productId}`)
    const back = await ctx.api.inject({ url: res.headers.location as string, headers: admin.headers })
    assert.deepEqual(back.json().data, res.json().data)
  })

  it('refuses members with 403 and anonymous callers with 401', async () => {
    const member = await ctx.api.member()
    const payload = { name: 'Beans', price: 1, stockQuantity: 1 }
    assertError(await ctx.api.inject({ method: 'POST', url: URL, headers: member.headers, payload }), {
      code: 'ACCESS_DENIED', instance: URL, detail: 'This operation requires the ADMIN role.',
    })
    assertError(await ctx.api.inject({ method: 'POST', url: URL, payload }), {
      code: 'UNAUTHORIZED', instance: URL, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
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
  })
})
