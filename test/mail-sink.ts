import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { STUCK_AFTER_MS } from './helper.js'

export interface ReceivedMail {
  to: string[]
  /** The message as it arrived: headers and encoded body. */
  raw: string
  /** The body as a mail client shows it (quoted-printable decoded). */
  text: string
}

/** The body of a single-part message, decoded if it is quoted-printable (nodemailer's choice for long lines). */
function bodyText (raw: string): string {
  const split = raw.indexOf('\r\n\r\n')
  const headers = raw.slice(0, split)
  const body = raw.slice(split + 4)
  if (!/^content-transfer-encoding:\s*quoted-printable/im.test(headers)) return body
  // Soft line breaks go; =XX is a byte. Literal % is escaped first so that decodeURIComponent reads only our bytes.
  const escaped = body.replace(/=\r?\n/g, '').replaceAll('%', '%25').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => `%${hex}`)
  return decodeURIComponent(escaped)
}

/** A real SMTP server on a free local port that keeps what it receives, for tests of mailed tokens. */
export class MailSink {
  readonly #mails: ReceivedMail[] = []
  readonly #waiters: Array<() => void> = []
  readonly #taken = new Set<ReceivedMail>()
  readonly #server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        this.#mails.push({ to: session.envelope.rcptTo.map(r => r.address), raw, text: bodyText(raw) })
        for (const wake of this.#waiters.splice(0)) wake()
        callback()
      })
    },
  })

  async start (): Promise<string> {
    this.#server.listen(0, '127.0.0.1')
    await once(this.#server.server, 'listening')
    return `smtp://127.0.0.1:${(this.#server.server.address() as AddressInfo).port}`
  }

  stop (): Promise<void> {
    return new Promise(resolve => this.#server.close(() => resolve()))
  }

  received (to: string): ReceivedMail[] {
    return this.#mails.filter(mail => mail.to.includes(to))
  }

  /** Waits (until stuck: STUCK_AFTER_MS) for the first mail to `to` matching `pattern` that no earlier call returned. */
  async next (to: string, pattern: RegExp): Promise<ReceivedMail> {
    const deadline = Date.now() + STUCK_AFTER_MS
    for (;;) {
      const mail = this.received(to).find(m => !this.#taken.has(m) && pattern.test(m.raw))
      if (mail) {
        this.#taken.add(mail)
        return mail
      }
      if (Date.now() > deadline) throw new Error(`still no mail to ${to} matching ${pattern} after ${STUCK_AFTER_MS / 60_000} min`)
      await new Promise<void>(resolve => {
        this.#waiters.push(resolve)
        setTimeout(resolve, 100)
      })
    }
  }
}

/** The one-time token in a mail: a line of 43 base64url characters, as the reader sees it. */
export function tokenIn (mail: ReceivedMail): string {
  const match = /^([A-Za-z0-9_-]{43})\r?$/m.exec(mail.text)
  if (!match) throw new Error(`no token in mail:\n${mail.raw}`)
  return match[1]!
}
