import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { it } from 'node:test'
import { describeEachBackend, waitFor } from '../helper.js'

interface LoggedMail { to: string, subject: string, text: string }

// Without SMTP_URL, mail is written to the log (CONTRACT §4): what a developer reads there must work.
const lines: string[] = []
const stream = new Writable({
  write (chunk, _encoding, done) {
    lines.push(String(chunk))
    done()
  },
})

/** The mails logged so far to `to`. */
function loggedMails (to: string): LoggedMail[] {
  return lines.map(line => JSON.parse(line))
    .filter(entry => entry.msg === 'mail not sent (SMTP_URL is not set); its content follows' && entry.mail?.to === to)
    .map(entry => entry.mail)
}

describeEachBackend('mail without SMTP_URL', (ctx) => {
  it('writes the verification mail to the log, and the token in it verifies the address', async () => {
    const email = `logged-${randomBytes(4).toString('hex')}@example.com`
    const registered = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name: 'Logged' } })
    assert.equal(registered.statusCode, 201, registered.body)
    await waitFor(async () => loggedMails(email).length === 1)
    const [mail] = loggedMails(email)
    assert.equal(mail!.subject, 'Verify your email address')
    const token = /^([A-Za-z0-9_-]{43})$/m.exec(mail!.text)?.[1]
    assert.ok(token, mail!.text)
    const verified = await ctx.api.inject({ method: 'POST', url: '/api/v1/members/email/verify', payload: { token } })
    assert.equal(verified.statusCode, 201, verified.body)
  })
}, { build: { logger: { level: 'info', stream } } })
