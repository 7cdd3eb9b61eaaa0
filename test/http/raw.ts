import { connect } from 'node:net'
import { Writable } from 'node:stream'
import type { LightMyRequestResponse } from 'fastify'
import { STUCK_AFTER_MS } from '../helper.js'

/**
 * HTTP over a raw TCP socket, for what `inject` and real clients cannot send: broken framing,
 * oversize headers, a body cut short. Test helpers only (they drive the real, listening app).
 */

/** An answer read from a raw socket, shaped enough like `inject`'s for `assertError` and `errorBody`. */
export interface RawResponse {
  statusCode: number
  headers: Record<string, string>
  body: string
  json: () => any
}

/** Parses one HTTP/1.1 response with a Content-Length body; undefined when `text` holds no full response. */
export function parseResponse (text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n')
  if (end === -1) return undefined
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')
  if (!status) return undefined
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
  const rest = Buffer.from(text.slice(end + 4), 'latin1')
  const body = (length === undefined ? rest : rest.subarray(0, length)).toString('utf8')
  return { statusCode: Number(status[1]), headers, body, json: () => JSON.parse(body) }
}

/** The raw answer as `inject`'s type, for the shared assertion helpers. */
export const asInjected = (res: RawResponse) => res as unknown as LightMyRequestResponse

/** Whether `text` holds one whole response: its head and as many body bytes as its Content-Length says. */
function holdsWholeResponse (text: string): boolean {
  const res = parseResponse(text)
  if (!res) return false
  const length = Number(res.headers['content-length'] ?? 0)
  return Buffer.byteLength(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1') >= length
}

/**
 * Sends `bytes` on a fresh connection to 127.0.0.1:`port` and resolves with everything the server
 * wrote until it closed the connection, or until `done(text)` says what arrived is enough (or
 * `timeoutMs` passed: then the socket is destroyed). A reset by the server ends the read; what arrived
 * before it is kept.
 */
export function rawExchange (port: number, bytes: string | Buffer, timeoutMs = 5_000, done?: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => { socket.write(bytes) })
    const timer = setTimeout(() => socket.destroy(), timeoutMs)
    socket.on('data', chunk => {
      chunks.push(chunk)
      if (done?.(Buffer.concat(chunks).toString('latin1'))) socket.destroy()
    })
    socket.on('error', error => { if ((error as { code?: string }).code !== 'ECONNRESET') reject(error) })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
  })
}

/**
 * `rawExchange` until the first whole response (however long the server takes: the cap only ends a
 * stuck wait), parsed; fails when none came back.
 */
export async function rawRequest (port: number, bytes: string | Buffer): Promise<RawResponse> {
  const text = await rawExchange(port, bytes, STUCK_AFTER_MS, holdsWholeResponse)
  const res = parseResponse(text)
  if (!res) throw new Error(`no HTTP response, got: ${JSON.stringify(text.slice(0, 300))}`)
  return res
}

/**
 * Sends `bytes`, then gives up after `afterMs` (a client that aborts mid-request): `close` ends the
 * connection with a FIN, `reset` with a TCP reset (ECONNRESET on the server's side).
 */
export function abortAfter (port: number, bytes: string | Buffer, how: 'close' | 'reset', afterMs = 100): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(bytes)
      setTimeout(() => {
        if (how === 'reset') socket.resetAndDestroy()
        else socket.destroy()
        resolve()
      }, afterMs)
    })
    socket.on('error', reject)
  })
}

export type LogLine = Record<string, unknown> & { level: number, msg?: string }

/** A pino destination that keeps every line, parsed, for tests that assert on the logs. */
export function logCapture (): { stream: Writable, lines: LogLine[] } {
  const lines: LogLine[] = []
  const stream = new Writable({
    write (chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { stream, lines }
}
