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
/** What a name with a control character is told (the validator's message for a pattern). */
const CONTROL = 'must not contain control characters'
/** One control character of each kind: C0 (line feed, carriage return, tab, escape), DEL, C1 (NEL, CSI). */
const CONTROLS = ['\n', '\r', '\t', '\u001B', '\u007F', '\u0085', '\u009B']

describe('PlainName', () => {
  it('refuses exactly the Unicode Cc characters, but leaves U+0000 to the wire rule', () => {
    const pattern = new RegExp((PlainName() as { pattern?: string }).pattern!, 'u')
    for (let code = 1; code <= 0xFFFF; code++) {
      if (code >= 0xD800 && code <= 0xDFFF) continue
      const char = String.fromCharCode(code)
      assert.equal(pattern.test(`a${char}b`), !/\p{Cc}/u.test(char), `U+${code.toString(16).padStart(4, '0')}`)
    }
    assert.ok(pattern.test('Zoë 😀 \u2028 名前'), 'letters, emoji and other separators are not Cc')
  })

  it('keeps the options it is given', () => {
    assert.deepEqual({ ...PlainName({ minLength: 1, maxLength: 100 }) }, {
      ...Type.String({ minLength: 1, maxLength: 100, description: 'Any text without control characters (Unicode Cc)' }),
      pattern: '^[^\\u0001-\\u001F\\u007F-\\u009F]*$',
    })
  })
})

describeEachBackend('member and API-key names refuse control characters', (ctx) => {
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
}, { env: { SMTP_URL: smtpUrl } })
