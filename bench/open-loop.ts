/**
 * An open-loop HTTP/1.1 load generator: request i is due at `start + i / rate` whether or not earlier
 * answers have come back, and its latency is counted from when it was due, so a stall of the server
 * shows in full (no coordinated omission). It keeps a pool of keep-alive connections, one request
 * at a time on each, and opens another when every open one is busy.
 *
 * It writes each request as bytes prepared before the run and reads only the status line and the
 * length of each answer. Node's `http` client cost 130 µs of the bench process's CPU per request at
 * 4,200 req/s (bench/RESULTS.md), more than the service's read by id itself, on the same two cores
 * as the service it measures: the generator's own work delayed the requests it timed.
 */
import net from 'node:net'

export interface OpenLoopRequest { method: string, path: string, headers?: Record<string, string> }

export interface OpenLoopOptions {
  base: URL
  requests: readonly OpenLoopRequest[]
  /** Requests per second. */
  rate: number
  /** How many to send in all. */
  total: number
  /** Called once per request, when its answer is complete (status) or its connection failed (status 0). */
  answered: (index: number, status: number, latencyMs: number) => void
  /** Called as each request is sent, with how far behind its schedule the generator was (ms). */
  behind?: (index: number, ms: number) => void
  /** Connections open at most (default 64); requests due while all are busy wait for one. */
  maxConnections?: number
}

const HEADER_END = Buffer.from('\r\n\r\n')
const CHUNKED_END = Buffer.from('0\r\n\r\n')

/** One request's bytes (no body: the half-load runs read), as a client that sends nothing more than it must would write them. */
function serialise (base: URL, request: OpenLoopRequest): Buffer {
  const lines = [`${request.method} ${request.path} HTTP/1.1`, `host: ${base.host}`]
  for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`${name}: ${value}`)
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n')
}

interface InFlight { index: number, due: number }

/** Where a complete answer ends in `data`, and its status; undefined while it is incomplete. */
function completeAnswer (data: Buffer): { end: number, status: number } | undefined {
  const headerEnd = data.indexOf(HEADER_END)
  if (headerEnd === -1) return undefined
  const head = data.toString('latin1', 0, headerEnd).toLowerCase()
  const status = Number(head.slice(9, 12))
  const length = /\r\ncontent-length:\s*(\d+)/.exec(head)
  const bodyStart = headerEnd + HEADER_END.length
  if (length) {
    const end = bodyStart + Number(length[1])
    return data.length >= end ? { end, status } : undefined
  }
  if (head.includes('\r\ntransfer-encoding: chunked')) {
    const last = data.indexOf(CHUNKED_END, bodyStart)
    return last === -1 ? undefined : { end: last + CHUNKED_END.length, status }
  }
  return { end: bodyStart, status } // no body (204, 304)
}

/** Sends `total` requests at `rate`, open loop; resolves when every one is answered or failed. */
export function openLoop (options: OpenLoopOptions): Promise<void> {
  const { base, rate, total, answered } = options
  const maxConnections = options.maxConnections ?? 64
  const wire = options.requests.map(request => serialise(base, request))
  const idle: Array<{ socket: net.Socket, take: (request: InFlight) => void }> = []
  /** Requests due while every connection was busy and no more could be opened, oldest first. */
  const waiting: InFlight[] = []
  let open = 0
  let finished = 0
  let sent = 0

  return new Promise<void>(resolve => {
    const finish = (request: InFlight, status: number) => {
      answered(request.index, status, performance.now() - request.due)
      if (++finished === total) {
        for (const connection of idle) connection.socket.destroy()
        resolve()
      }
    }

    /** One keep-alive connection, one request at a time. */
    class Connection {
      readonly socket = net.connect({ host: base.hostname, port: Number(base.port), noDelay: true })
      current: InFlight | undefined
      data: Buffer = Buffer.alloc(0)

      constructor () {
        open++
        this.socket.on('data', (chunk: Buffer) => this.read(chunk))
        this.socket.on('error', () => {})
        this.socket.on('close', () => {
          open--
          const at = idle.indexOf(this)
          if (at !== -1) idle.splice(at, 1)
          const lost = this.current
          this.current = undefined
          if (lost) finish(lost, 0)
          const next = waiting.shift()
          if (next) dispatch(next)
        })
      }

      take (request: InFlight): void {
        this.current = request
        this.socket.write(wire[request.index % wire.length]!)
      }

      read (chunk: Buffer): void {
        this.data = this.data.length === 0 ? chunk : Buffer.concat([this.data, chunk])
        const answer = completeAnswer(this.data)
        if (!answer || !this.current) return
        this.data = this.data.subarray(answer.end)
        const request = this.current
        this.current = undefined
        const next = waiting.shift()
        if (next) this.take(next)
        else idle.push(this)
        finish(request, answer.status)
      }
    }

    const dispatch = (request: InFlight) => {
      const connection = idle.pop() ?? (open < maxConnections ? new Connection() : undefined)
      if (connection) connection.take(request)
      else waiting.push(request)
    }

    const start = performance.now()
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor((performance.now() - start) * rate / 1000))
      while (sent < due) {
        const dueAt = start + sent * 1000 / rate
        options.behind?.(sent, performance.now() - dueAt)
        dispatch({ index: sent, due: dueAt })
        sent++
      }
      if (sent === total) clearInterval(timer)
    }, 1)
  })
}
