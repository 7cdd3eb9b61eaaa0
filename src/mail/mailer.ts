import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'

export interface Mail {
  to: string
  subject: string
  text: string
}

export interface Mailer {
  send (mail: Mail): Promise<void>
  close (): void
}

/**
 * Outgoing mail: over SMTP when SMTP_URL is set; otherwise written to the log at info level, which
 * is meant for development only (the log then holds the mailed one-time tokens). nodemailer is
 * loaded only with SMTP_URL: most deployments never send mail from here, and it costs ~3 MB of heap
 * (issue 22).
 */
export async function createMailer (config: Pick<Config, 'smtpUrl' | 'mailFrom'>, log: FastifyBaseLogger): Promise<Mailer> {
  if (!config.smtpUrl) {
    return {
      async send (mail) { log.info({ mail }, 'mail not sent (SMTP_URL is not set); its content follows') },
      close () {},
    }
  }
  const { default: nodemailer } = await import('nodemailer')
  const transport = nodemailer.createTransport(config.smtpUrl)
  return {
    async send (mail) {
      await transport.sendMail({ from: config.mailFrom, to: mail.to, subject: mail.subject, text: mail.text })
    },
    close () { transport.close() },
  }
}
