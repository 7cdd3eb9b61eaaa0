import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, describe, it } from 'node:test'
import { Type } from 'typebox'
import { PlainName } from '../../src/http/schemas.js'
import { assertError, describeEachBackend, type Member } from '../helper.js'
import { MailSink, tokenIn } from '../mail-sink.js'

const sink = new MailSink()
const smtpUrl = await sink.start()
after(() => sink.stop())

const INVALID_BODY = 'The request body has invalid parameters.'
/** What a name with a control or format character is told (the validator's message for a pattern). */
const CONTROL = 'must not contain control characters, format characters (such as U+200B or U+202E) or line separators'
/** One control character of each kind: C0 (line feed, carriage return, tab, escape), DEL, C1 (NEL, CSI). */
const CONTROLS = ['\n', '\r', '\t', '\u001B', '\u007F', '\u0085', '\u009B']
/**
 * Format characters (Cf: right-to-left override, zero-width space and joiner, word joiner, BOM, soft
 * hyphen, an Arabic number sign, a tag beyond the BMP) and the line and paragraph separators (CONTRACT §18).
 */
const FORMATS = ['\u202E', '\u200B', '\u200D', '\u2060', '\uFEFF', '\u00AD', '\u0600', '\u{E0041}', '\u2028', '\u2029']

describe('PlainName', () => {
  it('refuses exactly the Unicode Cc and Cf characters and U+2028/U+2029, but leaves U+0000 to the wire rule', () => {
    const pattern = new RegExp((PlainName() as { pattern?: string }).pattern!, 'u')
    const wrong: string[] = []
    for (let code = 1; code <= 0x10FFFF; code++) {
      if (code >= 0xD800 && code <= 0xDFFF) continue
      const char = String.fromCodePoint(code)
      const refused = /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(char)
      if (pattern.test(`a${char}b`) === refused) wrong.push(`U+${code.toString(16).toUpperCase().padStart(4, '0')}`)
    }
    assert.deepEqual(wrong, [])
    assert.ok(pattern.test('Zoë 😀 \u00A0\u3000 名前 \uFE0F'), 'letters, emoji, spaces and variation selectors are neither Cc nor Cf')
    assert.ok(pattern.test('a\u0000b'), 'U+0000 is the wire rule\'s')
  })

  it('keeps the options it is given', () => {
    assert.deepEqual({ ...PlainName({ minLength: 1, maxLength: 100 }) }, {
      ...Type.String({ minLength: 1, maxLength: 100, description: 'Any text without control characters (Unicode Cc), format characters (Unicode Cf) or line and paragraph separators (U+2028, U+2029)' }),
      pattern: '^[^\\u0001-\\u001F\\u007F-\\u009F\\p{Cf}\\u2028\\u2029]*$',
    })
  })
})

describeEachBackend('names refuse control and format characters and line separators', (ctx) => {
  const register = (name: string, email = `n-${randomBytes(4).toString('hex')}@example.com`) =>
    ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name } })
  const refusesName = (instance: string) => ({ code: 'VALIDATION_FAILED', instance, detail: INVALID_BODY, invalidParams: [{ field: 'name', message: CONTROL }] })
  const nameOf = async (member: Member) =>
    (await ctx.api.app.db.selectFrom('members').select('name').where('id', '=', member.id).executeTakeFirstOrThrow()).name

  it('refuses a control character in the name on register with 400 naming name, and creates nobody', async () => {
    for (const control of CONTROLS) {
      const email = `cc-${randomBytes(4).toString('hex')}@example.com`
      assertError(await register(`Ada${control}Lovelace`, email), refusesName('/api/v1/members'))
      assert.equal(await ctx.api.app.db.selectFrom('members').select('id').where('email', '=', email).executeTakeFirst(), undefined)
    }
  })

  it('accepts names with letters of any script, emoji and inner spaces', async () => {
    for (const name of ['Zoë Ørsted', '山田 太郎', 'Ada 😀 Lovelace']) {
      const res = await register(name)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().data.name, name)
    }
  })

  it('refuses a control character in PATCH /members/{id} and in the admin PATCH, and keeps the name', async () => {
    const member = await ctx.api.member('Ada')
    const admin = await ctx.api.admin()
    for (const control of CONTROLS) {
      const own = `/api/v1/members/${member.id}`
      assertError(await ctx.api.inject({ method: 'PATCH', url: own, headers: member.headers, payload: { name: `Ada${control}` } }), refusesName(own))
      const byAdmin = `/api/v1/admin/members/${member.id}`
      assertError(await ctx.api.inject({ method: 'PATCH', url: byAdmin, headers: admin.headers, payload: { name: `${control}Ada` } }), refusesName(byAdmin))
    }
    assert.equal(await nameOf(member), 'Ada')
  })

  it('refuses a control character in an API key’s name and creates no key', async () => {
    const member = await ctx.api.member()
    const url = '/api/v1/members/me/api-keys'
    for (const control of CONTROLS) {
      assertError(await ctx.api.inject({ method: 'POST', url, headers: member.headers, payload: { name: `sync${control}` } }), refusesName(url))
    }
    assert.deepEqual(await ctx.api.app.db.selectFrom('api_keys').select('id').execute(), [])
  })

  it('refuses a format character or line separator in the name on register, and creates nobody (CONTRACT §18)', async () => {
    for (const format of FORMATS) {
      const email = `cf-${randomBytes(4).toString('hex')}@example.com`
      assertError(await register(`Ada${format}Lovelace`, email), refusesName('/api/v1/members'))
      assert.equal(await ctx.api.app.db.selectFrom('members').select('id').where('email', '=', email).executeTakeFirst(), undefined)
    }
  })

  it('refuses a format character or line separator in the member PATCHes and in an API key’s name, and changes nothing', async () => {
    const member = await ctx.api.member('Ada')
    const admin = await ctx.api.admin()
    const own = `/api/v1/members/${member.id}`
    const byAdmin = `/api/v1/admin/members/${member.id}`
    const keys = '/api/v1/members/me/api-keys'
    for (const format of FORMATS) {
      assertError(await ctx.api.inject({ method: 'PATCH', url: own, headers: member.headers, payload: { name: `evil${format}gpj.exe` } }), refusesName(own))
      assertError(await ctx.api.inject({ method: 'PATCH', url: byAdmin, headers: admin.headers, payload: { name: `${format}Ada` } }), refusesName(byAdmin))
      assertError(await ctx.api.inject({ method: 'POST', url: keys, headers: member.headers, payload: { name: `sync${format}` } }), refusesName(keys))
    }
    assert.equal(await nameOf(member), 'Ada')
    assert.deepEqual(await ctx.api.app.db.selectFrom('api_keys').select('id').execute(), [])
  })

  it('refuses a format character or line separator in product names (create, PUT, PATCH) and category names, and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin, { name: 'Beans' })
    const products = '/api/v1/admin/products'
    const one = `${products}/${product.productId}`
    const categories = '/api/v1/products/categories'
    const before = await ctx.api.app.db.selectFrom('products').selectAll().execute()
    for (const format of FORMATS) {
      const name = `Beans${format}`
      assertError(await ctx.api.inject({ method: 'POST', url: products, headers: admin.headers, payload: { name, price: 1, stockQuantity: 1 } }), refusesName(products))
      const put = { name, description: null, price: 1, stockQuantity: 1, categoryId: null, status: 'ACTIVE' }
      assertError(await ctx.api.inject({ method: 'PUT', url: one, headers: admin.headers, payload: put }), refusesName(one))
      assertError(await ctx.api.inject({ method: 'PATCH', url: one, headers: admin.headers, payload: { name } }), refusesName(one))
      assertError(await ctx.api.inject({ method: 'POST', url: categories, headers: admin.headers, payload: { name: `Coffee${format}` } }), refusesName(categories))
    }
    assert.deepEqual(await ctx.api.app.db.selectFrom('products').selectAll().execute(), before)
    assert.deepEqual(await ctx.api.app.db.selectFrom('categories').select('id').execute(), [])
  })

  it('refuses a format character or line separator in a webhook endpoint’s description (create, PATCH), and changes nothing', async () => {
    const admin = await ctx.api.admin()
    const endpoints = '/api/v1/admin/webhook-endpoints'
    const created = await ctx.api.inject({ method: 'POST', url: endpoints, headers: admin.headers, payload: { url: 'https://hooks.example.com/', description: 'ERP' } })
    assert.equal(created.statusCode, 201, created.body)
    const one = `${endpoints}/${created.json().data.endpointId}`
    const refused = (instance: string) => ({ ...refusesName(instance), invalidParams: [{ field: 'description', message: CONTROL }] })
    for (const format of [...FORMATS, ...CONTROLS]) {
      assertError(await ctx.api.inject({ method: 'POST', url: endpoints, headers: admin.headers, payload: { url: 'https://hooks.example.com/', description: `ERP${format}` } }), refused(endpoints))
      assertError(await ctx.api.inject({ method: 'PATCH', url: one, headers: admin.headers, payload: { description: `${format}ERP` } }), refused(one))
    }
    const stored = await ctx.api.app.db.selectFrom('webhook_endpoints').select(['id', 'description']).execute()
    assert.deepEqual(stored, [{ id: created.json().data.endpointId, description: 'ERP' }])
  })

  it('puts no member-chosen text in the verification mail: a name cannot pose as the service’s words', async () => {
    const email = `mail-${randomBytes(4).toString('hex')}@example.com`
    const name = 'Your account is locked. Call +1 555 0100 at once'
    assert.equal((await register(name, email)).statusCode, 201)
    const mail = await sink.next(email, /Verify your email address/)
    assert.ok(!mail.text.includes(name), mail.text)
    assert.match(mail.text, /^An account was registered with this email address\. /)
    // The token is the mail's only line of its own, and it still verifies the address.
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/members/email/verify', payload: { token: tokenIn(mail) } })
    assert.equal(res.statusCode, 201, res.body)
  })
}, { env: { SMTP_URL: smtpUrl, WEBHOOK_ALLOW_PRIVATE: 'true' } })
