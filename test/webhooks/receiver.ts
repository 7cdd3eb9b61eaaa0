import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { waitFor } from '../helper.js'

/** One delivery as the receiver got it, its signature verified by the reference package. */
export interface Received {
  id: string
  timestamp: number
  signature: string
  headers: IncomingHttpHeaders
  body: string
  event: { eventId: number, type: string, orderId: number, sequence: number, timestamp: string, data: Record<string, unknown> }
  /** When it arrived (epoch ms). */
  at: number
  /** The status the receiver answered. */
  answered: number
}

export type Responder = (event: Received['event'], request: { headers: IncomingHttpHeaders }) =>
  number | { status: number, headers?: Record<string, string>, body?: string, delayMs?: number }

/**
 * A real webhook receiver on 127.0.0.1. Every request's signature is verified with the reference
 * `standardwebhooks` package against `secrets` (any one matching, as the package does); a request
 * that does not verify is recorded in `refused` and answered 400.
 */
export class Receiver {
  readonly received: Received[] = []
  readonly refused: string[] = []
  secrets: string[] = []
  respond: Responder = () => 204
  private server: Server | undefined

  constructor (readonly port = 0) {}

  get url (): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hook`
  }

  async start (): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', chunk => chunks.push(chunk))
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        const headers = {
          'webhook-id': String(request.headers['webhook-id']),
          'webhook-timestamp': String(request.headers['webhook-timestamp']),
          'webhook-signature': String(request.headers['webhook-signature']),
        }
        const verified = this.secrets.some(secret => {
          try {
            new Webhook(secret).verify(body, headers)
            return true
          } catch {
            return false
          }
        })
        if (!verified) {
          this.refused.push(body)
          response.writeHead(400).end('bad signature')
          return
        }
        const event = JSON.parse(body) as Received['event']
        const answer = this.respond(event, { headers: request.headers })
        const { status, headers: extra, body: text, delayMs } = typeof answer === 'number' ? { status: answer, headers: undefined, body: undefined, delayMs: undefined } : answer
        const finish = () => {
          this.received.push({
            id: headers['webhook-id'],
            timestamp: Number(headers['webhook-timestamp']),
            signature: headers['webhook-signature'],
            headers: request.headers,
            body,
            event,
            at: Date.now(),
            answered: status,
          })
          response.writeHead(status, extra).end(text ?? '')
        }
        if (delayMs) setTimeout(finish, delayMs)
        else finish()
      })
    })
    await new Promise<void>(resolve => this.server!.listen(this.port, '127.0.0.1', resolve))
    return this
  }

  async stop (): Promise<void> {
    const server = this.server
    if (!server) return
    this.server = undefined
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  }

  /** The deliveries answered 2xx. */
  get succeeded (): Received[] {
    return this.received.filter(r => r.answered >= 200 && r.answered < 300)
  }

  reset (): void {
    this.received.length = 0
    this.refused.length = 0
    this.respond = () => 204
  }
}

/** Polls `check` every 20 ms until it holds: no budget, only the shared safety cap, which names `what`. */
export const eventually = (check: () => boolean | Promise<boolean>, what = 'the condition'): Promise<void> => waitFor(check, what, 20)
