import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { DATA_DIR_LOCK } from '../../src/db/data-dir-lock.js'
import { createTestDatabase, testConfig, freePort, waitFor as waitUntil, waitForChild } from '../helper.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

type LogLine = Record<string, unknown> & { msg?: string, pid?: number }

describe('request ids and access log', () => {
  let app: FastifyInstance
  const lines: LogLine[] = []

  before(async () => {
    const stream = new Writable({
      write (chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line))
        done()
      },
    })
    app = await buildApp(testConfig(), { logger: { level: 'info', stream } })
  })
  after(() => app?.close())

  it('echoes a sane X-Request-Id and logs one completion line carrying it, without the query string', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': 'trace-42.a:b_C' } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['x-request-id'], 'trace-42.a:b_C')

    await app.inject({ method: 'GET', url: '/api/v1/products?token=secret-in-query', headers: { 'x-request-id': 'with-query' } })
    const mine = lines.filter(line => line.requestId === 'with-query')
    assert.equal(mine.length, 1, JSON.stringify(mine))
    assert.equal(mine[0]!.msg, 'request completed')
    assert.equal(mine[0]!.method, 'GET')
    assert.equal(mine[0]!.url, '/api/v1/products')
    assert.equal(typeof mine[0]!.statusCode, 'number')
    assert.equal(typeof mine[0]!.responseTime, 'number')
    assert.ok(!JSON.stringify(lines).includes('secret-in-query'), 'the query string never reaches the log')
    assert.ok(!lines.some(line => line.msg === 'incoming request'), 'no separate incoming-request line')
  })

  it('generates a UUID when the header is absent or not a plain token', async () => {
    const absent = await app.inject({ method: 'GET', url: '/api/v1/health' })
    assert.match(String(absent.headers['x-request-id']), UUID)
    for (const bad of ['has space', 'x'.repeat(201), 'line\\nbreak', '{"json":1}', '']) {
      const res = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': bad } })
      assert.match(String(res.headers['x-request-id']), UUID, `for ${JSON.stringify(bad)}`)
    }
    const longest = 'a'.repeat(200)
    const res = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': longest } })
    assert.equal(res.headers['x-request-id'], longest)
  })

  it('logs a request whose path is not valid percent-encoding like any other, with its request id', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/orders/%E0%A4%A', headers: { 'x-request-id': 'bad-url-1' } })
    assert.equal(res.statusCode, 400)
    assert.equal(res.headers['x-request-id'], 'bad-url-1')
    const mine = lines.filter(line => line.requestId === 'bad-url-1' && line.msg === 'request completed')
    assert.equal(mine.length, 1, JSON.stringify(lines.filter(line => line.requestId === 'bad-url-1')))
    assert.equal(mine[0]!.statusCode, 400)
  })

  it('gives every request its own generated id', async () => {
    const [a, b] = await Promise.all([1, 2].map(() => app.inject({ method: 'GET', url: '/api/v1/health' })))
    assert.notEqual(a!.headers['x-request-id'], b!.headers['x-request-id'])
  })

  for (const [what, method, url, status] of [
    ['an unknown path (404)', 'GET', '/api/v1/nowhere', 404],
    ['a wrong method (405)', 'DELETE', '/api/v1/health', 405],
    ['a missing credential (401)', 'GET', '/api/v1/orders', 401],
    ['malformed JSON (400)', 'POST', '/api/v1/members', 400],
  ] as const) {
    it(`echoes the id on ${what} and logs it`, async () => {
      const id = `err-${status}-${randomBytes(3).toString('hex')}`
      const res = await app.inject({
        method, url, headers: { 'x-request-id': id, 'content-type': 'application/json' }, ...(method === 'POST' ? { payload: '{oops' } : {}),
      })
      assert.equal(res.statusCode, status, res.body)
      assert.equal(res.headers['x-request-id'], id)
      const line = lines.find(l => l.requestId === id && l.msg === 'request completed')
      assert.equal(line?.statusCode, status)
    })
  }
})

/** A free TCP port on 127.0.0.1 (the config accepts PORT=0, but then the test would have to parse the port). */

interface Server {
  child: ChildProcess
  port: number
  lines: LogLine[]
  stderr: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  waitFor: (predicate: (lines: LogLine[]) => boolean, what?: string) => Promise<void>
}

/** Starts `src/server.ts` as a real process on a free port and collects its JSON log lines. */
async function startServer (env: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: LogLine[] = []
  let buffered = ''
  let stderr = ''
  child.stdout!.on('data', chunk => {
    buffered += String(chunk)
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const part of parts) {
      try { lines.push(JSON.parse(part)) } catch { lines.push({ msg: part }) }
    }
  })
  child.stderr!.on('data', chunk => { stderr += String(chunk) })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>(resolve =>
    child.once('exit', (code, signal) => resolve({ code, signal })))
  // Waits for the log line itself, or fails when the process ends first: never on a busy machine's slowness.
  const waitFor = (predicate: (lines: LogLine[]) => boolean, what = 'the log line') =>
    waitForChild(child, () => predicate(lines), what, () => `stderr: ${stderr}\nstdout: ${lines.map(l => JSON.stringify(l)).join('\n')}`)
  return { child, port, lines, stderr: () => stderr, exited, waitFor }
}

const listening = (lines: LogLine[]) => lines.filter(line => String(line.msg).startsWith('Server listening'))

/** GET over a fresh connection; resolves with the status and body. */
function get (port: number, path: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, res => {
      let body = ''
      res.on('data', chunk => { body += String(chunk) })
      res.on('end', () => resolve({ status: res.statusCode!, body }))
    }).on('error', reject)
  })
}

/**
 * A POST whose body is sent in two halves: the request is in flight (headers read, body pending)
 * until `finish` is called. `read` resolves once the server has read its headers: it asks for
 * `100 Continue`, which the server sends on reading them (an event, not a guess at how long it takes).
 */
function slowPost (port: number, path: string, payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload))
  const req = http.request({
    host: '127.0.0.1',
    port,
    path,
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' },
  })
  const read = new Promise<void>(resolve => req.once('continue', () => { req.write(body.subarray(0, 10)); resolve() }))
  const response = new Promise<{ status: number, body: string }>((resolve, reject) => {
    req.on('response', res => {
      let text = ''
      res.on('data', chunk => { text += String(chunk) })
      res.on('end', () => resolve({ status: res.statusCode!, body: text }))
    })
    req.on('error', reject)
  })
  req.flushHeaders()
  return { response, read, finish: () => req.end(body.subarray(10)) }
}

function connect (port: number): Promise<'connected' | string> {
  return new Promise(resolve => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve('connected') })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

describe('graceful shutdown of the real server', () => {
  it('on SIGTERM refuses new connections, finishes in-flight requests and exits 0 within the grace period', async () => {
    const server = await startServer({ DATA_DIR: 'memory' })
    try {
      await server.waitFor(lines => listening(lines).length === 1)
      assert.equal((await get(server.port, '/api/v1/health')).status, 200)

      const inFlight = [1, 2, 3].map(i => slowPost(server.port, '/api/v1/members', {
        email: `slow-${i}-${randomBytes(3).toString('hex')}@example.com`, password: 'correct horse', name: `Slow ${i}`,
      }))
      await Promise.all(inFlight.map(request => request.read)) // the server has read their headers
      server.child.kill('SIGTERM')
      await server.waitFor(lines => lines.some(line => line.msg === 'shutting down' && line.signal === 'SIGTERM'))

      // The listener closes as the shutdown begins; new connections are refused from then on.
      await waitUntil(async () => await connect(server.port) === 'ECONNREFUSED', 'new connections refused')
      assert.equal(server.child.exitCode, null, 'still running while requests are in flight')

      for (const request of inFlight) request.finish()
      const responses = await Promise.all(inFlight.map(request => request.response))
      for (const res of responses) assert.equal(res.status, 201, res.body)

      // close-with-grace exits 1 when the grace period runs out, so exit code 0 shows it ended in time
      // (a bound on the elapsed time would only measure how busy the machine is).
      const { code, signal } = await server.exited
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, server.stderr())
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
    }
  })

  it('exits 0 promptly on SIGTERM when idle', async () => {
    const server = await startServer({ DATA_DIR: 'memory' })
    try {
      await server.waitFor(lines => listening(lines).length === 1)
      server.child.kill('SIGTERM')
      // close-with-grace exits 1 when the grace period runs out, so exit code 0 shows it ended in time
      // (a bound on the elapsed time would only measure how busy the machine is).
      const { code } = await server.exited
      assert.equal(code, 0, server.stderr())
      assert.ok(server.lines.some(line => line.msg === 'shutting down'))
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
    }
  })

  it('refuses to start on a bad variable, naming it', async () => {
    const server = await startServer({ DATA_DIR: 'memory', WORKERS: '2' })
    const { code } = await server.exited
    assert.equal(code, 1)
    assert.match(server.stderr(), /WORKERS > 1 needs DATABASE_URL: the embedded database serves one process/)
  })

  it('refuses to start a second process on the same DATA_DIR, and takes over the claim of one that died', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'order-data-'))
    const first = await startServer({ DATA_DIR: dataDir })
    try {
      await first.waitFor(lines => listening(lines).length === 1)
      const second = await startServer({ DATA_DIR: dataDir })
      const { code } = await second.exited
      assert.equal(code, 1, second.stderr())
      const failed = second.lines.find(line => line.msg === 'start-up failed')
      assert.ok(failed, JSON.stringify(second.lines))
      assert.match(String(failed.err), new RegExp(`DATA_DIR .* is in use by process ${first.child.pid}`))
      assert.equal((await get(first.port, '/api/v1/health')).status, 200, 'the first process serves on')

      first.child.kill('SIGTERM')
      assert.equal((await first.exited).code, 0, first.stderr())
      // A claim left by a process that is gone (kill -9) does not block the next start.
      await writeFile(join(dataDir, DATA_DIR_LOCK), '2147483646')
      const third = await startServer({ DATA_DIR: dataDir })
      await third.waitFor(lines => listening(lines).length === 1)
      third.child.kill('SIGTERM')
      assert.equal((await third.exited).code, 0, third.stderr())
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL')
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  it('reports a database it cannot reach in one JSON line naming DATABASE_URL, and exits 1', async () => {
    const port = await freePort() // nothing listens there
    const server = await startServer({ DATABASE_URL: `postgres://app:S3cretPw@127.0.0.1:${port}/orders` })
    const { code } = await server.exited
    assert.equal(code, 1)
    const failed = server.lines.find(line => line.msg === 'start-up failed')
    assert.ok(failed, `stdout: ${JSON.stringify(server.lines)} stderr: ${server.stderr()}`)
    assert.equal(failed.level, 60)
    assert.equal(failed.database, 'DATABASE_URL')
    assert.match(String(failed.err), /is the database reachable\?/)
    assert.equal(server.stderr(), '')
    assert.ok(!JSON.stringify(server.lines).includes('S3cretPw'))
  })
})

describe('WORKERS > 1 (node:cluster, PostgreSQL)', () => {
  const skip = process.env.TEST_DATABASE_URL ? false : 'set TEST_DATABASE_URL to run the cluster test'

  it('serves from two worker processes, replaces a dead one and stops them all on SIGTERM', { skip }, async () => {
    const database = await createTestDatabase('postgres')
    const server = await startServer({ WORKERS: '2', DATABASE_URL: database.url! })
    try {
      await server.waitFor(lines => listening(lines).length === 2)
      const workerPids = [...new Set(listening(server.lines).map(line => line.pid))]
      assert.equal(workerPids.length, 2, 'two distinct worker processes')
      assert.ok(!workerPids.includes(server.child.pid), 'the primary itself does not serve')
      for (let i = 0; i < 4; i++) assert.equal((await get(server.port, '/api/v1/health')).status, 200)

      // A worker that dies unexpectedly is replaced.
      process.kill(workerPids[0]!, 'SIGKILL')
      await server.waitFor(lines => listening(lines).length === 3)
      assert.equal((await get(server.port, '/api/v1/health')).status, 200)

      server.child.kill('SIGTERM')
      const { code } = await server.exited
      assert.equal(code, 0, server.stderr())
      const alive = listening(server.lines).map(line => line.pid!).filter(pid => pid !== workerPids[0])
      for (const pid of alive) {
        assert.ok(server.lines.some(line => line.pid === pid && line.msg === 'shutting down'), `worker ${pid} shut down gracefully`)
        assert.throws(() => process.kill(pid, 0), 'worker process is gone')
      }
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
      await database.close()
    }
  })

  it('on SIGTERM while its workers are still starting, the primary exits 0 in time and no worker starts serving', { skip }, async () => {
    const database = await createTestDatabase('postgres')
    const server = await startServer({ WORKERS: '2', DATABASE_URL: database.url! })
    try {
      await server.waitFor(lines => lines.some(line => line.msg === 'starting workers'))
      server.child.kill('SIGTERM')
      // The primary (close-with-grace) exits 1 when the grace period runs out, so exit code 0 shows it ended in time
      // (a bound on the elapsed time would only measure how busy the machine is).
      const { code } = await server.exited
      assert.equal(code, 0, `${server.stderr()}\n${JSON.stringify(server.lines)}`)
      assert.deepEqual(listening(server.lines), [], 'a worker started serving after the signal')
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
      await database.close()
    }
  })

  it('the primary honours LOG_LEVEL: silent prints nothing', { skip }, async () => {
    const database = await createTestDatabase('postgres')
    const server = await startServer({ WORKERS: '2', DATABASE_URL: database.url!, LOG_LEVEL: 'silent' })
    try {
      await waitUntil(async () => {
        if (server.child.exitCode !== null) throw new Error(`the server exited (${server.child.exitCode}): ${server.stderr()}`)
        return (await get(server.port, '/api/v1/health').catch(() => ({ status: 0 }))).status === 200
      }, 'the health answer', 50)
      server.child.kill('SIGTERM')
      assert.equal((await server.exited).code, 0, server.stderr())
      assert.deepEqual(server.lines, [])
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
      await database.close()
    }
  })
})
