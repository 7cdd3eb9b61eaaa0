/**
 * What announcing events costs a create (CONTRACT §12; the events issue's target): `POST /orders`
 * with one webhook endpoint registered (a receiver on this machine answering 200) against the same
 * load with none, measured as the service's CPU per create read from /proc, in the same run; and
 * whether the events reach the receiver at the create rate, with `events_undelivered` sampled every
 * half second while the load runs.
 *
 *   npm run bench:webhooks              # 4 alternating runs of 10 s each
 *   npm run bench:webhooks -- --quick   # 2 runs of 5 s
 *   npm run bench:webhooks -- --quick --profile
 *                                       # the service under --cpu-prof; bench/profile-top.mjs then
 *                                       # prints each run's window, in µs per create
 *
 * Beside them, the floor of a delivery: a process that does nothing but sign bodies of an event's
 * size and POST them to the same receiver with undici (keep-alive, 64 in flight), its CPU per
 * request read the same way. No dispatcher can deliver an event for less than one such request
 * (Standard Webhooks sends one signed event per request), so its ratio to a create is the least an
 * endpoint can cost.
 *
 * DATABASE_URL names the server to create the scratch database on (default
 * postgres://postgres@127.0.0.1:5432/postgres); it is dropped afterwards.
 */
import autocannon from 'autocannon'
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import os from 'node:os'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { hashPassword } from '../src/members/passwords.js'
import { newSecret, signatureHeader } from '../src/webhooks/signing.js'
import { Agent, request } from 'undici'
import { cpuOf } from './proc.js'
import { MEMBER_ID_BASE, SEED_PASSWORD, memberEmail, productOf, seed } from './seed.js'

const quick = process.argv.includes('--quick')
const profiling = process.argv.includes('--profile')
const PROFILES = fileURLToPath(new URL('./profiles', import.meta.url))
const PROFILE_NAME = `webhooks-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`
const SECONDS = quick ? 5 : 10
const ROUNDS = quick ? 1 : 2
const CONNECTIONS = 32
const SIZES = { members: 200, products: 300, orders: 10_000 }
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password' }
const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => console.error(line)

const freePort = () => new Promise<number>((resolve, reject) => {
  const server = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resolve(port))
  }).on('error', reject)
})

/** The process's CPU time so far (user + system, every thread), in milliseconds. */
const cpuMs = (pid: number): number => (cpuOf(pid) ?? NaN) / 1000

async function main (): Promise<void> {
  const name = `order_bench_webhooks_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  const DATABASE_URL = url.toString()
  let child: ChildProcess | undefined
  let receiver: http.Server | undefined
  /** Stops the service (SIGTERM, so that a profile is written); when it stopped, in performance.now() ms. */
  const stop = async (): Promise<number> => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise(resolve => child!.once('exit', resolve))
      child.kill('SIGTERM')
      const at = performance.now()
      await exited
      return at
    }
    return performance.now()
  }
  try {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' })
    // The service migrates on start; then the set-based seed fills the catalogue and members.
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const start = () => spawn(process.execPath, [
      ...(profiling ? ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`, `--cpu-prof-name=${PROFILE_NAME}`] : []),
      'dist/server.js',
    ], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        LOG_LEVEL: 'warn',
        AUTH_RATE_LIMIT: '1000000',
        MAX_UNPAID_ORDERS: '0', // its members place many orders and pay for none
        WEBHOOK_ALLOW_PRIVATE: 'true',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    })
    const healthy = async () => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
        try { if ((await fetch(`${base}/api/v1/health`)).status === 200) return } catch {}
        await new Promise(resolve => setTimeout(resolve, 50))
      }
      throw new Error('the service did not become healthy within 60 s')
    }
    child = start()
    await healthy()
    const client = new pg.Client({ connectionString: DATABASE_URL })
    await client.connect()
    await seed(client, SIZES, await hashPassword(SEED_PASSWORD), log)
    await client.end()

    const post = async (path: string, body: unknown, token?: string) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      })
      if (res.status !== 201) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`)
      return (await res.json() as { data: any }).data
    }
    const adminToken = (await post('/api/v1/auth/login', ADMIN)).accessToken as string
    const members: Array<{ id: number, token: string }> = []
    for (let i = 0; i < 40; i++) {
      members.push({ id: MEMBER_ID_BASE + i, token: (await post('/api/v1/auth/login', { email: memberEmail(i), password: SEED_PASSWORD })).accessToken })
    }

    // The receiver: answers 200 to every delivery and counts them.
    let received = 0
    let receivedBytes = 0
    receiver = http.createServer((req, res) => {
      req.on('data', (chunk: Buffer) => { receivedBytes += chunk.length })
      req.on('end', () => { received++; res.writeHead(200).end() })
    })
    const receiverPort = await freePort()
    await new Promise<void>(resolve => receiver!.listen(receiverPort, '127.0.0.1', resolve))

    const third = Math.floor(SIZES.products / 3)
    // Built per request (setupRequest), not from a list autocannon cycles through: every create needs
    // an idempotency key of its own, or the repeats would be replays that announce nothing.
    const create = (req: autocannon.Request): autocannon.Request => {
      const m = members[Math.floor(Math.random() * members.length)]!
      return {
        ...req,
        method: 'POST',
        path: '/api/v1/orders',
        headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ customerId: m.id, items: [0, 1, 2].map(k => ({ productId: productOf(Math.floor(Math.random() * third), k, SIZES.products), quantity: 1 })) }),
      }
    }
    const undelivered = async () => {
      const text = await (await fetch(`${base}/actuator/prometheus`, { headers: { authorization: `Bearer ${adminToken}` } })).text()
      return Number(/^events_undelivered (\d+)/m.exec(text)?.[1] ?? NaN)
    }

    const pid = child.pid!
    /** Each measured run's window (performance.now() ms) and creates, for the profile's summary. */
    const windows: Array<{ label: string, from: number, to: number, creates: number }> = []
    const run = async (label: string) => {
      const from = performance.now()
      const before = cpuMs(pid)
      const samples: number[] = []
      const sampler = setInterval(() => { undelivered().then(n => samples.push(n), () => {}) }, 500)
      const result = await autocannon({ url: base, connections: CONNECTIONS, duration: SECONDS, requests: [{ setupRequest: create }] })
      clearInterval(sampler)
      const creates = result['2xx'] // 201s: every key is new
      const perCreate = (cpuMs(pid) - before) / creates * 1000
      windows.push({ label, from, to: performance.now(), creates })
      log(`${label}: ${creates} creates (${(creates / SECONDS).toFixed(0)}/s), ${result.non2xx + result.errors} errors, ` +
        `service CPU ${perCreate.toFixed(0)} µs per create${samples.length ? `, events_undelivered max ${Math.max(...samples)} (samples ${samples.join(' ')})` : ''}`)
      return { creates, perCreate, errors: result.non2xx + result.errors, maxUndelivered: samples.length ? Math.max(...samples) : 0 }
    }

    // Warm-up, then alternate: none, one endpoint (disabled between its runs), so drift hits both alike.
    await run('warm-up (no endpoint)')
    const endpoint = await post('/api/v1/admin/webhook-endpoints', { url: `http://127.0.0.1:${receiverPort}/hooks` }, adminToken)
    const setStatus = async (status: 'ACTIVE' | 'DISABLED') => {
      const res = await fetch(`${base}/api/v1/admin/webhook-endpoints/${endpoint.endpointId}`, {
        method: 'PATCH', headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` }, body: JSON.stringify({ status }),
      })
      if (res.status !== 200) throw new Error(`PATCH the endpoint's status answered ${res.status}: ${await res.text()}`)
    }
    const without: number[] = []
    const withHook: number[] = []
    let drained = true
    for (let round = 0; round < ROUNDS; round++) {
      await setStatus('DISABLED')
      without.push((await run(`round ${round + 1}, no endpoint`)).perCreate)
      await setStatus('ACTIVE')
      const receivedBefore = received
      const hooked = await run(`round ${round + 1}, one endpoint`)
      withHook.push(hooked.perCreate)
      // Every create's order.placed must reach the receiver, soon after the load stops.
      const deadline = Date.now() + 10_000
      while (received - receivedBefore < hooked.creates && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100))
      const lag = received - receivedBefore - hooked.creates
      log(`  delivered ${received - receivedBefore} of ${hooked.creates} events${lag < 0 ? ` (${-lag} missing after 10 s)` : ''}; undelivered now ${await undelivered()}`)
      if (lag < 0) drained = false
    }
    const check = new pg.Client({ connectionString: DATABASE_URL })
    await check.connect()
    const statuses = await check.query('select status, count(*)::int as n, max(last_error) as error from webhook_deliveries group by status order by status')
    log(`events: ${(await check.query('select count(*)::int as n from events')).rows[0].n}; endpoint: ${JSON.stringify((await check.query('select status, updated_at from webhook_endpoints')).rows)}`)
    await check.end()
    log(`deliveries: ${statuses.rows.map(row => `${row.status} ${row.n}${row.error ? ` (${row.error})` : ''}`).join(', ')}`)
    // The floor of a delivery, on the same receiver, bodies of the events' average size.
    const eventBytes = Math.round(receivedBytes / Math.max(1, received))
    // Asynchronously: the receiver answering it runs in this process.
    const { stdout: floorOut } = await promisify(execFile)(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--floor-sender',
      `http://127.0.0.1:${receiverPort}/floor`, String(quick ? 5_000 : 20_000), String(eventBytes)], { cwd: ROOT, encoding: 'utf8' })
    const floor = (JSON.parse(floorOut.trim().split('\n').at(-1)!) as { perRequestUs: number }).perRequestUs
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
    const ratio = median(withHook) / median(without)
    console.log(`\nmachine: ${os.cpus().length} × ${os.cpus()[0]?.model}, node ${process.version}`)
    console.log(`service CPU per create: ${median(without).toFixed(0)} µs without an endpoint, ${median(withHook).toFixed(0)} µs with one: ` +
      `${((ratio - 1) * 100).toFixed(1)}% more (target ≤ 15%): ${ratio <= 1.15 ? 'PASS' : 'FAIL'}`)
    console.log(`events delivered at the create rate, backlog drained within 10 s of each run: ${drained ? 'PASS' : 'FAIL'}`)
    console.log(`floor of a delivery: a process that only signs ${eventBytes}-byte bodies and POSTs them with undici spends ${floor.toFixed(0)} µs per request, ` +
      `${(floor / median(without) * 100).toFixed(1)}% of a create's service CPU in this run: the least one endpoint can add`)
    if (profiling) {
      // The profile is written when the service exits; each window is placed from the profile's end
      // (later than the SIGTERM by the time the service takes to stop: a fraction of a second).
      const stoppedAt = await stop()
      for (const window of windows.filter(w => !w.label.startsWith('warm-up'))) {
        console.log(`\n## ${window.label}: ${window.creates} creates`)
        console.log(execFileSync(process.execPath, [fileURLToPath(new URL('./profile-top.mjs', import.meta.url)), `${PROFILES}/${PROFILE_NAME}`, '30',
          `--requests=${window.creates}`, `--window=${((stoppedAt - window.from) / 1000).toFixed(2)},${((stoppedAt - window.to) / 1000).toFixed(2)}`], { encoding: 'utf8' }))
      }
    }
  } finally {
    receiver?.close()
    await stop()
    const cleanup = new pg.Client({ connectionString: SERVER_URL })
    await cleanup.connect()
    await cleanup.query(`drop database if exists ${name} with (force)`)
    await cleanup.end()
  }
}

/**
 * The floor sender (run as its own process): POSTs `count` bodies of `size` bytes to `url`, each
 * signed as Standard Webhooks requires (src/webhooks/signing.ts), and prints its CPU per request.
 */
async function sendFloor (url: string, count: number, size: number): Promise<void> {
  const agent = new Agent({ keepAliveTimeout: 4_000 })
  const body = JSON.stringify({ padding: 'x'.repeat(Math.max(0, size - 14)) })
  const secret = newSecret()
  let id = 0
  const post = async () => {
    const webhookId = String(++id)
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader([secret], webhookId, timestamp, body),
    }
    const answer = await request(url, { method: 'POST', dispatcher: agent, headers, body, signal: AbortSignal.timeout(10_000) })
    await answer.body.dump()
  }
  let next = 0
  const burst = (n: number) => Promise.all(Array.from({ length: 64 }, async () => { while (next++ < n) await post() }))
  await burst(Math.min(1000, count)) // warm-up: connections open, code compiled
  next = 0
  const before = process.cpuUsage()
  await burst(count)
  const used = process.cpuUsage(before)
  console.log(JSON.stringify({ perRequestUs: (used.user + used.system) / count }))
  await agent.close()
}

const floorAt = process.argv.indexOf('--floor-sender')
const run = floorAt >= 0
  ? sendFloor(process.argv[floorAt + 1]!, Number(process.argv[floorAt + 2]), Number(process.argv[floorAt + 3]))
  : main()
run.catch(error => { console.error(error); process.exitCode = 1 })
