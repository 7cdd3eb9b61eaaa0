/**
 * Load benchmark: the service (one process, PostgreSQL scratch database) side by side with the limits
 * that bound it, measured in the same run, with ratios and PASS/FAIL per target. The limits are a bare
 * node:http server and pgbench (bench/ceilings.ts); between them, a floor server runs the same
 * statements from Node with nothing around them (bench/floor-server.ts), which shows how much of the
 * gap to each ceiling is the machine and how much is the service's own code.
 *
 *   npm run bench                # 10,000 members, 1,000 products, 1,000,000 orders; ~12 s per scenario
 *   npm run bench -- --quick     # 100,000 orders, ~5 s per scenario (about 2 minutes)
 *   npm run bench -- --profile   # also: the measured service runs with --cpu-prof (bench/profiles/)
 *
 * DATABASE_URL names the server to create the scratch database on (default
 * postgres://postgres@127.0.0.1:5432/postgres); it is dropped afterwards, even on failure.
 * Prints a machine line and a markdown table (paste into bench/RESULTS.md).
 */
import autocannon from 'autocannon'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { hashPassword } from '../src/members/passwords.js'
import { createScript, getByIdScript, runPgbench, startReferenceServer } from './ceilings.js'
import { MEMBER_ID_BASE, SEED_PASSWORD, memberEmail, productOf, seed } from './seed.js'

const quick = process.argv.includes('--quick')
/** `--profile`: the measured service runs with --cpu-prof and leaves its profile in bench/profiles/. */
const profile = process.argv.includes('--profile')
const SIZES = quick
  ? { members: 2_000, products: 1_000, orders: 100_000 }
  : { members: 10_000, products: 1_000, orders: 1_000_000 }
const SECONDS = quick ? 5 : 12
const WARM_UP = 2 // seconds of unmeasured load before each scenario
const TOKENS = quick ? 100 : 200
const CONNECTIONS = 32
const POOL_SIZE = 10 // the service's default DATABASE_POOL_SIZE; pgbench uses as many clients
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password' }
const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const MB = 1024 * 1024
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PROFILES = fileURLToPath(new URL('./profiles', import.meta.url))
const started = performance.now()
const log = (line: string) => console.error(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`)

// ---------------------------------------------------------------- processes and cleanup
const children = new Set<ChildProcess>()
let dropScratch: (() => Promise<void>) | undefined

function stop (child: ChildProcess): Promise<void> {
  children.delete(child)
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise(resolve => {
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 10_000)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill('SIGTERM')
  })
}
process.on('exit', () => { for (const child of children) child.kill('SIGKILL') })
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`)
    Promise.all([...children].map(stop)).then(() => dropScratch?.()).finally(() => process.exit(130))
  })
}

function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    }).on('error', reject)
  })
}

async function query (url: string, statement: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try { return await client.query(statement, values) } finally { await client.end() }
}

/** Spawns the service and resolves with the time from spawn to the first 200 on /api/v1/health. */
async function startService (env: Record<string, string>, nodeOptions: string[] = []): Promise<{ child: ChildProcess, base: string, startupMs: number }> {
  const port = await freePort()
  const spawned = performance.now()
  // The built service, as `npm start` runs it in production (main() builds it first).
  const child = spawn(process.execPath, [...nodeOptions, 'dist/server.js'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'warn',
      AUTH_RATE_LIMIT: '1000000', // the largest it accepts (per minute),
      WORKERS: '1',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  children.add(child)
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode} before it was healthy`)
    try {
      if ((await fetch(`${base}/api/v1/health`)).status === 200) return { child, base, startupMs: performance.now() - spawned }
    } catch {}
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  await stop(child)
  throw new Error('the service did not become healthy within 60 s')
}

// ---------------------------------------------------------------- RSS sampling
function rssOf (pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : 0
  } catch { return 0 }
}
function sampleRss (pid: number): () => number {
  let peak = rssOf(pid)
  const timer = setInterval(() => { peak = Math.max(peak, rssOf(pid)) }, 50)
  return () => { clearInterval(timer); return Math.max(peak, rssOf(pid)) }
}

// ---------------------------------------------------------------- load
interface Row {
  scenario: string
  rps: number
  p50?: number
  p99?: number
  p999?: number
  errors?: number
  rssMb?: number
  ceiling?: string
  ratio?: number
  note?: string
}
const rows: Row[] = []
const percent = (ratio: number) => `${(ratio * 100).toFixed(0)}%`

type Setup = (req: autocannon.Request) => autocannon.Request
/**
 * What a scenario sends: a function that builds each request as it goes (needed when every request
 * must differ, like idempotency keys), or a list built up front that autocannon cycles through.
 * A list costs the load generator far less per request, which matters when it shares the machine:
 * with a function, autocannon alone halved the bare server's rate.
 */
type Requests = Setup | autocannon.Request[]
/** `count` requests built up front by `setup`, for a scenario whose requests may repeat. */
const prebuilt = (setup: Setup, count = 2_000): autocannon.Request[] => Array.from({ length: count }, () => setup({}))

async function load (name: string, url: string, requests: Requests | undefined, opts: { pid?: number, seconds?: number } = {}): Promise<Row> {
  const seconds = opts.seconds ?? SECONDS
  log(`${name}: ${WARM_UP} s warm-up, then ${seconds} s, ${CONNECTIONS} connections`)
  const options = {
    url,
    connections: CONNECTIONS,
    timeout: 10,
    ...(typeof requests === 'function' ? { requests: [{ setupRequest: requests }] } : requests ? { requests } : {}),
  }
  // One autocannon run; the first WARM_UP seconds are not measured. They compile the scenario's code
  // path and open the pool's connections, and they absorb autocannon's own start: each of its
  // connections builds every request of a list up front (32 × 2,000 here, close to a second), and
  // the first requests, already sent, wait for that in the generator, not in the service. Measured
  // from autocannon's start, those few requests were the p99.9 of every list scenario.
  const latencies: number[] = []
  let measuredFrom = 0
  let peakRss: (() => number) | undefined
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ ...options, duration: WARM_UP + seconds }, (error, result) => error ? reject(error) : resolve(result))
    instance.on('response', (_client, _status, _bytes, responseTime) => { if (measuredFrom > 0) latencies.push(responseTime) })
  })
  const warmUp = setTimeout(() => {
    measuredFrom = performance.now()
    if (opts.pid) peakRss = sampleRss(opts.pid)
  }, WARM_UP * 1000)
  const result = await finished
  clearTimeout(warmUp)
  const measuredSeconds = (performance.now() - measuredFrom) / 1000
  const rss = peakRss?.()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN)
  const row: Row = {
    scenario: name,
    rps: latencies.length / measuredSeconds,
    p50: at(0.5),
    p99: at(0.99),
    p999: at(0.999),
    // Errors count over the whole run, warm-up included.
    errors: result.non2xx + result.errors,
    ...(rss ? { rssMb: rss / MB } : {}),
  }
  rows.push(row)
  log(`  ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, p99.9 ${row.p999} ms, errors ${row.errors}` +
    ` (non2xx ${result.non2xx}, socket ${result.errors}, timeouts ${result.timeouts})${rss ? `, peak RSS ${(rss / MB).toFixed(0)} MB` : ''}`)
  return row
}

/**
 * Open-loop load at a steady rate: requests leave on a fixed schedule, spread evenly over each
 * second, whether or not earlier ones have been answered, and each latency counts from the moment
 * its request was due, so a stall counts against every request it delays. (autocannon's rate limit
 * sends each connection's quota for the second in one burst at the start of the second, and then
 * waits: that measures bursts at full speed, not a steady half load.)
 *
 * Like every scenario, the first WARM_UP seconds of the schedule are sent but not measured. The
 * start of a run is slow: partly this generator's own start, its catching up and its new connections
 * (a bare server shows it too), partly the service, most right after a full-speed run
 * (bench/RESULTS.md). The warm-up's p99 and worst latency are returned too, so that the table still
 * shows it.
 */
async function steady (name: string, base: string, requests: autocannon.Request[], rate: number, pid: number): Promise<{ row: Row, lag: number, warmUp: { p99: number, max: number } }> {
  log(`${name}: ${WARM_UP} s warm-up, then ${SECONDS} s at ${rate} req/s, open loop`)
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS * 2 })
  const url = new URL(base)
  const latencies: number[] = []
  const warmUpLatencies: number[] = []
  let errors = 0
  let sent = 0
  const warmUpCount = rate * WARM_UP
  const total = warmUpCount + rate * SECONDS
  let lag = 0 // the most the generator fell behind its own schedule in the measured part (its own pauses, not the service's)
  // The earlier scenarios left garbage in this process; collect it now rather than during the run.
  ;(globalThis as { gc?: () => void }).gc?.()
  const peakRss = sampleRss(pid)
  const start = performance.now()
  const measuredFrom = start + WARM_UP * 1000
  await new Promise<void>(resolve => {
    let answered = 0
    const done = () => { if (++answered === total) resolve() }
    const send = (index: number, due: number) => {
      const spec = requests[index % requests.length]!
      const into = index < warmUpCount ? warmUpLatencies : latencies
      const req = http.request({ agent, host: url.hostname, port: url.port, method: spec.method, path: spec.path, headers: spec.headers as http.OutgoingHttpHeaders }, res => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode !== 200) errors++
          into.push(performance.now() - due)
          done()
        })
      })
      req.on('error', () => { errors++; done() })
      req.end()
    }
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor((performance.now() - start) * rate / 1000))
      while (sent < due) {
        const dueAt = start + sent * 1000 / rate
        if (sent >= warmUpCount) lag = Math.max(lag, performance.now() - dueAt)
        send(sent, dueAt)
        sent++
      }
      if (sent === total) clearInterval(timer)
    }, 1)
  })
  const rss = peakRss()
  agent.destroy()
  const at = (list: number[], q: number) => Math.round(list[Math.min(list.length - 1, Math.floor(q * list.length))] ?? NaN)
  latencies.sort((a, b) => a - b)
  warmUpLatencies.sort((a, b) => a - b)
  const row: Row = {
    scenario: name,
    rps: latencies.length / ((performance.now() - measuredFrom) / 1000),
    p50: at(latencies, 0.5),
    p99: at(latencies, 0.99),
    p999: at(latencies, 0.999),
    // Errors count over the whole run, warm-up included.
    errors,
    rssMb: rss / MB,
  }
  const warmUp = { p99: at(warmUpLatencies, 0.99), max: at(warmUpLatencies, 1) }
  log(`  ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, p99.9 ${row.p999} ms, errors ${errors}, generator lag ≤ ${lag.toFixed(0)} ms; ` +
    `warm-up p99 ${warmUp.p99} ms, max ${warmUp.max} ms`)
  return { row, lag, warmUp }
}

/**
 * The runs of a borderline measurement, and the median one by `key`. On a shared machine one run can
 * land on a stall that the next does not; the median of three is steadier than any single run, and
 * the table's note lists all three.
 */
const REPEATS = 3
async function medianOf<T> (runs: number, measure: (run: number) => Promise<T>, key: (result: T) => number): Promise<{ median: T, all: T[] }> {
  const all: T[] = []
  for (let run = 1; run <= runs; run++) all.push(await measure(run))
  const sorted = [...all].sort((a, b) => key(a) - key(b))
  return { median: sorted[Math.floor(sorted.length / 2)]!, all }
}

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!
const int = (n: number) => Math.floor(Math.random() * n)

// ---------------------------------------------------------------- the run
interface Target { name: string, pass: boolean, detail: string }
const targets: Target[] = []
const plans: string[] = []
let machine = ''

async function main () {
  const pgVersion = (await query(SERVER_URL, 'show server_version')).rows[0]!.server_version as string
  const cpus = os.cpus()
  machine = `${cpus[0]?.model.trim() ?? 'unknown CPU'} × ${cpus.length}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, ` +
    `${os.type()} ${os.release()}, Node ${process.version}, PostgreSQL ${pgVersion}`
  console.log(`machine: ${machine}`)
  console.log(`mode: ${quick ? 'quick' : 'full'}: ${SIZES.members} members, ${SIZES.products} products, ${SIZES.orders} orders (3 items each), ` +
    `${SECONDS} s per scenario, ${CONNECTIONS} connections, ${TOKENS} member tokens`)

  log('building the service (npm run build)')
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })

  const name = `order_bench_${randomBytes(4).toString('hex')}`
  await query(SERVER_URL, `create database ${name}`)
  dropScratch = async () => { await query(SERVER_URL, `drop database if exists ${name} with (force)`); log(`dropped ${name}`) }
  const dbUrl = new URL(SERVER_URL)
  dbUrl.pathname = `/${name}`
  const DATABASE_URL = dbUrl.toString()
  log(`scratch database ${name}`)

  // 1. Migrate (the service does it at start-up, on an empty database), then seed.
  const first = await startService({ DATABASE_URL })
  log(`first start (empty database, migrations): ${first.startupMs.toFixed(0)} ms`)
  await stop(first.child)
  log('seeding')
  const passwordHash = await hashPassword(SEED_PASSWORD)
  const client = new pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  const seeding = performance.now()
  try { await seed(client, SIZES, passwordHash, log) } finally { await client.end() }
  const seedSeconds = (performance.now() - seeding) / 1000
  log(`seeded in ${seedSeconds.toFixed(1)} s`)

  // 2. Startup on PostgreSQL (seeded) — the process every scenario runs against.
  const service = await startService({ DATABASE_URL }, profile ? ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`] : [])
  const pid = service.child.pid!
  const base = service.base
  log(`service pid ${pid} healthy in ${service.startupMs.toFixed(0)} ms`)

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`)
    return (await res.json() as { data: any }).data
  }
  const adminToken = (await post('/api/v1/auth/login', ADMIN)).accessToken as string

  // Log in TOKENS distinct members (argon2 verify each; 4 at a time).
  const members: Array<{ index: number, id: number, token: string }> = []
  for (let i = 0; i < TOKENS; i += 4) {
    await Promise.all([0, 1, 2, 3].filter(j => i + j < TOKENS).map(async j => {
      const index = i + j
      const data = await post('/api/v1/auth/login', { email: memberEmail(index), password: SEED_PASSWORD })
      members.push({ index, id: MEMBER_ID_BASE + index, token: data.accessToken as string })
    }))
  }
  log(`logged in ${members.length} members`)

  // Own orders of member i: g = i + members * r (1 ≤ g ≤ orders); PLACED when r % 4 = 0.
  const perMember = Math.floor(SIZES.orders / SIZES.members)
  const ownOrder = (index: number) => { const r = 1 + int(perMember - 1); return index + SIZES.members * r }
  const ownPlaced = (index: number) => { const r = 4 * (1 + int(Math.floor((perMember - 1) / 4))); return index + SIZES.members * r }
  const auth = (token: string) => ({ authorization: `Bearer ${token}` })
  const third = Math.floor(SIZES.products / 3)
  const createBody = (member: { id: number }) => JSON.stringify({
    customerId: member.id,
    items: [0, 1, 2].map(k => ({ productId: productOf(int(third), k, SIZES.products), quantity: 1 + int(3) })),
  })
  const getById: Setup = req => {
    const m = pick(members)
    return { ...req, method: 'GET', path: `/api/v1/orders/${ownOrder(m.index)}`, headers: auth(m.token) }
  }
  const create: Setup = req => {
    const m = pick(members)
    return {
      ...req,
      method: 'POST',
      path: '/api/v1/orders',
      headers: { ...auth(m.token), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: createBody(m),
    }
  }
  const cancel: Setup = req => {
    const m = pick(members)
    return { ...req, method: 'PATCH', path: `/api/v1/orders/${ownPlaced(m.index)}/cancel`, headers: auth(m.token) }
  }
  const listFirst: Setup = req => {
    const m = pick(members)
    return { ...req, method: 'GET', path: '/api/v1/orders?size=20', headers: auth(m.token) }
  }

  // Deep cursors: 4 pages of 10 in, for up to 50 members.
  const deep: Array<{ token: string, cursor: string }> = []
  for (const m of members.slice(0, 50)) {
    let cursor: string | null = null
    for (let page = 0; page < 4; page++) {
      const res = await fetch(`${base}/api/v1/orders?size=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: auth(m.token) })
      const body = await res.json() as { data: { nextCursor: string | null } }
      cursor = body.data.nextCursor
      if (!cursor) break
    }
    if (cursor) deep.push({ token: m.token, cursor })
  }
  if (deep.length === 0) throw new Error('no member has 5 pages of orders')
  const listDeep: Setup = req => {
    const d = pick(deep)
    return { ...req, method: 'GET', path: `/api/v1/orders?size=10&cursor=${encodeURIComponent(d.cursor)}`, headers: auth(d.token) }
  }
  // Admin search: one status, a one-hour window somewhere in the seeded range, newest first.
  const now = Date.now()
  const adminSearch: Setup = req => {
    const to = now - int(SIZES.orders - 3600) * 1000
    const from = to - 3600 * 1000
    const status = pick(['PLACED', 'CONFIRMED', 'DELIVERED', 'CANCELLED'])
    return {
      ...req,
      method: 'GET',
      path: `/api/v1/admin/orders/search?status=${status}&createdFrom=${new Date(from).toISOString()}&createdTo=${new Date(to).toISOString()}&size=20&sort=createdAt,desc`,
      headers: auth(adminToken),
    }
  }
  const mix: Setup = req => {
    const r = Math.random()
    return r < 0.8 ? (r < 0.6 ? getById(req) : listFirst(req)) : r < 0.95 ? create(req) : cancel(req)
  }

  // 3. Ceilings and scenarios.
  const barePort = await freePort()
  const bare = await startReferenceServer('bare-server', barePort)
  children.add(bare)
  // The ceiling for each scenario's ratio: the bare server answering the same requests (paths,
  // tokens) from the same kind of list, so the load generator does the same work on both sides.
  const getRequests = prebuilt(getById)
  const plainRow = await load('bare node:http, one fixed request', `http://127.0.0.1:${barePort}/`, undefined)
  plainRow.note = 'separate process; no Authorization header, one path'
  const bareRow = await load('bare node:http, the GET /orders/{id} requests (Node ceiling)', `http://127.0.0.1:${barePort}/`, getRequests)
  await stop(bare)
  bareRow.note = 'separate process; same request list as GET /orders/{id}'

  log(`pgbench: GET-by-id statement, ${POOL_SIZE} clients, ${SECONDS} s`)
  const pgGet = await runPgbench(DATABASE_URL, getByIdScript(SIZES.orders), { clients: POOL_SIZE, threads: 2, seconds: SECONDS })
  rows.push({ scenario: 'pgbench: order by id with items (PG, one read per statement)', rps: pgGet.tps, errors: pgGet.failed, note: `avg latency ${pgGet.latencyMs} ms, ${POOL_SIZE} clients; the service and the floor share statements between reads` })
  log(`  ${pgGet.tps.toFixed(0)} tps`)

  // The floor: node:http and pg running pgbench's statements, nothing else (bench/floor-server.ts).
  const floorPort = await freePort()
  const floor = await startReferenceServer('floor-server', floorPort, { DATABASE_URL, POOL_SIZE: String(POOL_SIZE) })
  children.add(floor)
  const floorBase = `http://127.0.0.1:${floorPort}`
  const floorGetRow = await load('floor: node:http + pg, the by-id statement only', floorBase, getRequests)
  floorGetRow.ceiling = 'bare node:http'
  floorGetRow.ratio = floorGetRow.rps / bareRow.rps
  floorGetRow.note = `separate process; same request list as GET /orders/{id}; ${percent(floorGetRow.rps / pgGet.tps)} of pgbench by-id`

  const getRow = await load('GET /orders/{id}', base, getRequests, { pid })
  getRow.ceiling = 'bare node:http'
  getRow.ratio = getRow.rps / bareRow.rps
  getRow.note = `${percent(getRow.rps / pgGet.tps)} of pgbench by-id, ${percent(getRow.rps / floorGetRow.rps)} of the floor`

  const half = Math.max(1, Math.round(getRow.rps / 2))
  const halves = await medianOf(REPEATS, run => steady(`GET /orders/{id} at half peak, run ${run} of ${REPEATS}`, base, getRequests, half, pid), run => run.row.p99 ?? Infinity)
  const halfRow: Row = {
    ...halves.median.row,
    scenario: `GET /orders/{id} at half peak (${half} req/s, steady; median of ${REPEATS} runs by p99)`,
    rssMb: Math.max(...halves.all.map(run => run.row.rssMb ?? 0)),
    errors: halves.all.reduce((sum, run) => sum + (run.row.errors ?? 0), 0),
    note: `open loop; p99 of the runs: ${halves.all.map(run => `${run.row.p99} ms`).join(', ')}; ` +
      `the generator fell behind its schedule by at most ${halves.all.map(run => `${run.lag.toFixed(0)} ms`).join(', ')}; ` +
      `in the ${WARM_UP} s warm-ups (not measured) p99 ${halves.all.map(run => `${run.warmUp.p99}`).join(', ')} ms, ` +
      `worst ${halves.all.map(run => `${run.warmUp.max}`).join(', ')} ms`,
  }
  rows.push(halfRow)

  const listRow = await load('GET /orders (first page, 20)', base, prebuilt(listFirst), { pid })
  listRow.ceiling = 'bare node:http'
  listRow.ratio = listRow.rps / bareRow.rps
  const deepRow = await load('GET /orders (cursor, 5th page of 10)', base, prebuilt(listDeep), { pid })
  deepRow.ceiling = 'bare node:http'
  deepRow.ratio = deepRow.rps / bareRow.rps

  log(`pgbench: order-creation transaction, ${POOL_SIZE} clients, ${SECONDS} s`)
  const pgCreate = await runPgbench(DATABASE_URL, createScript(SIZES.products, MEMBER_ID_BASE, SIZES.members), { clients: POOL_SIZE, threads: 2, seconds: SECONDS })
  rows.push({ scenario: 'pgbench: order-creation transaction (PG ceiling)', rps: pgCreate.tps, errors: pgCreate.failed, note: `avg latency ${pgCreate.latencyMs} ms, ${POOL_SIZE} clients` })
  log(`  ${pgCreate.tps.toFixed(0)} tps`)

  const floorCreateRow = await load('floor: node:http + pg, the creation transaction only', floorBase, create)
  await stop(floor)
  floorCreateRow.ceiling = 'pgbench create'
  floorCreateRow.ratio = floorCreateRow.rps / pgCreate.tps
  floorCreateRow.note = 'separate process; same requests as POST /orders'

  const createRow = await load('POST /orders (3 items, Idempotency-Key)', base, create, { pid })
  createRow.ceiling = 'pgbench create'
  createRow.ratio = createRow.rps / pgCreate.tps
  createRow.note = `${percent(createRow.rps / floorCreateRow.rps)} of the floor`

  const mixRow = await load('mix 80% reads / 15% creates / 5% cancels', base, mix, { pid })
  mixRow.ceiling = 'bare node:http'
  mixRow.ratio = mixRow.rps / bareRow.rps

  const searchRow = await load('GET /admin/orders/search (status + 1 h window)', base, prebuilt(adminSearch), { pid })
  searchRow.ceiling = 'bare node:http'
  searchRow.ratio = searchRow.rps / bareRow.rps

  // Export: every order as CSV over one socket, three times (the median run counts).
  const expectedRows = Number((await query(DATABASE_URL, 'select count(*) as n from orders')).rows[0]!.n)
  const exportOnce = async (run: number) => {
    log(`export, run ${run} of ${REPEATS}: streaming every order as CSV`)
    const rss = sampleRss(pid)
    const started = performance.now()
    const exported = await new Promise<{ lines: number, bytes: number, status: number }>((resolve, reject) => {
      const req = http.get(`${base}/api/v1/admin/orders/export`, { headers: auth(adminToken) }, res => {
        let lines = 0
        let bytes = 0
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
        })
        res.on('end', () => resolve({ lines, bytes, status: res.statusCode ?? 0 }))
        res.on('error', reject)
      }).on('error', reject)
      req.setTimeout(300_000, () => req.destroy(new Error('export took over 5 minutes')))
    })
    const seconds = (performance.now() - started) / 1000
    const count = Math.max(0, exported.lines - 1) // less the header line
    log(`  ${count} rows in ${seconds.toFixed(2)} s: ${(count / seconds).toFixed(0)} rows/s`)
    return { ...exported, rows: count, seconds, rate: count / seconds, rssMb: rss() / MB }
  }
  const exports = await medianOf(REPEATS, exportOnce, run => run.rate)
  const exported = exports.median
  const exportRows = exported.rows
  const exportRate = exported.rate
  const exportErrors = exports.all.reduce((sum, run) => sum + (run.status === 200 ? 0 : 1) + (run.rows === expectedRows ? 0 : 1), 0)
  rows.push({
    scenario: `CSV export (${exportRows} rows, ${(exported.bytes / MB).toFixed(0)} MB; median of ${REPEATS} runs)`,
    rps: exportRate,
    errors: exportErrors,
    rssMb: Math.max(...exports.all.map(run => run.rssMb)),
    note: `rows/s; runs: ${exports.all.map(run => run.rate.toFixed(0)).join(', ')} rows/s; median ${exported.seconds.toFixed(2)} s; expected ${expectedRows} rows`,
  })

  // EXPLAIN of the owner's list query and the admin search query (as src/orders/repository.ts builds them).
  const customer = MEMBER_ID_BASE + 7
  const explain = async (label: string, statement: string, values: unknown[]) => {
    const { rows: [row] } = await query(DATABASE_URL, `explain (format json) ${statement}`, values)
    const scans: string[] = []
    const walk = (node: any) => {
      if (/Scan/.test(node['Node Type'])) scans.push(`${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`)
      for (const child of node.Plans ?? []) walk(child)
    }
    walk(row['QUERY PLAN'][0].Plan)
    plans.push(`- ${label}: ${scans.join('; ')}`)
    return scans
  }
  const windowTo = new Date(now - SIZES.orders * 1000 / 2)
  const windowFrom = new Date(windowTo.getTime() - 3600_000)
  const allScans = [
    ...await explain('owner list, first page', 'select * from orders where customer_id = $1 and status <> \'DELETED\' order by created_at desc, id desc limit 21 offset 0', [customer]),
    ...await explain('owner list, cursor page', 'select * from orders where customer_id = $1 and status <> \'DELETED\' and (created_at, id) < ($2, $3) order by created_at desc, id desc limit 11 offset 0', [customer, new Date(now - 3600_000 * 24), SIZES.orders]),
    ...await explain('admin search, page', 'select * from orders where status in ($1) and created_at >= $2 and created_at < $3 order by created_at desc, id desc limit 20 offset 0', ['CONFIRMED', windowFrom, windowTo]),
    ...await explain('admin search, count', 'select count(*) from orders where status in ($1) and created_at >= $2 and created_at < $3', ['CONFIRMED', windowFrom, windowTo]),
  ]

  await stop(service.child)
  if (profile) log(`CPU profile of the measured service written to ${PROFILES}; summarise it with: node bench/profile-top.mjs`)

  // 5. Startup on PGlite (in memory).
  const pglite = await startService({ DATA_DIR: 'memory' })
  await stop(pglite.child)
  log(`PGlite start: ${pglite.startupMs.toFixed(0)} ms`)

  // 4. Targets.
  // The service's own rows: those whose memory was sampled (not the reference servers or pgbench).
  const measured = rows.filter(row => row.rssMb !== undefined)
  const errorRows = measured.filter(row => (row.errors ?? 0) > 0)
  const peakRss = Math.max(...measured.map(row => row.rssMb!))
  targets.push(
    { name: 'GET /orders/{id} ≥ 40% of bare node:http req/s', pass: getRow.ratio >= 0.4, detail: `${(getRow.ratio * 100).toFixed(1)}% (${getRow.rps.toFixed(0)} / ${bareRow.rps.toFixed(0)}); the floor server: ${(floorGetRow.ratio * 100).toFixed(1)}%, pgbench: ${(pgGet.tps / bareRow.rps * 100).toFixed(1)}%` },
    { name: 'POST /orders ≥ 50% of pgbench create tps', pass: createRow.ratio >= 0.5, detail: `${(createRow.ratio * 100).toFixed(1)}% (${createRow.rps.toFixed(0)} / ${pgCreate.tps.toFixed(0)}); the floor server: ${(floorCreateRow.ratio * 100).toFixed(1)}%` },
    { name: 'p99 < 25 ms at half the peak GET-by-id rate', pass: (halfRow.p99 ?? Infinity) < 25, detail: `p99 ${halfRow.p99} ms at ${half} req/s (achieved ${halfRow.rps.toFixed(0)})` },
    { name: 'zero errors', pass: errorRows.length === 0, detail: errorRows.length === 0 ? 'none' : errorRows.map(row => `${row.scenario}: ${row.errors}`).join('; ') },
    { name: 'service RSS < 250 MB', pass: peakRss < 250, detail: `peak ${peakRss.toFixed(0)} MB` },
    { name: 'export ≥ 100,000 rows/s', pass: exportRate >= 100_000 && exportErrors === 0, detail: `${exportRate.toFixed(0)} rows/s, ${exportRows}/${expectedRows} rows` },
    { name: `list queries are index scans at ${SIZES.orders} orders`, pass: allScans.length > 0 && !allScans.some(scan => scan.startsWith('Seq Scan')), detail: allScans.some(scan => scan.startsWith('Seq Scan')) ? 'a Seq Scan appears' : 'no Seq Scan' }
  )

  // Output.
  const f = (n: number | undefined, digits = 0) => n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits)
  const out: string[] = []
  out.push('', `**Machine:** ${machine}`, '')
  out.push(`**Run:** ${quick ? 'quick' : 'full'}, ${SIZES.members} members, ${SIZES.products} products, ${SIZES.orders} seeded orders (3 items each, seeded in ${seedSeconds.toFixed(0)} s); ` +
    `autocannon ${CONNECTIONS} connections, ${SECONDS} s per scenario, ${TOKENS} member tokens; service: 1 process, pool ${POOL_SIZE}; pgbench ${POOL_SIZE} clients`, '')
  out.push('| scenario | req/s | p50 ms | p99 ms | p99.9 ms | errors | peak RSS MB | ceiling | ratio | note |')
  out.push('|---|---:|---:|---:|---:|---:|---:|---|---:|---|')
  for (const row of rows) {
    out.push(`| ${row.scenario} | ${f(row.rps)} | ${f(row.p50)} | ${f(row.p99)} | ${f(row.p999)} | ${row.errors ?? '—'} | ${f(row.rssMb)} | ${row.ceiling ?? ''} | ${row.ratio === undefined ? '' : `${(row.ratio * 100).toFixed(1)}%`} | ${row.note ?? ''} |`)
  }
  out.push('', '| startup (spawn → first 200 on /api/v1/health) | ms |', '|---|---:|')
  out.push(`| PostgreSQL, empty database (runs migrations) | ${first.startupMs.toFixed(0)} |`)
  out.push(`| PostgreSQL, seeded (${SIZES.orders} orders) | ${service.startupMs.toFixed(0)} |`)
  out.push(`| PGlite (DATA_DIR=memory) | ${pglite.startupMs.toFixed(0)} |`)
  out.push('', '| target | result | measured |', '|---|---|---|')
  for (const target of targets) out.push(`| ${target.name} | ${target.pass ? 'PASS' : 'FAIL'} | ${target.detail} |`)
  out.push('', 'Scan nodes (EXPLAIN):', ...plans, '')
  console.log(out.join('\n'))
}

const watchdog = setTimeout(() => {
  log('watchdog: the run took too long; cleaning up')
  Promise.all([...children].map(stop)).then(() => dropScratch?.()).finally(() => process.exit(2))
}, (quick ? 170 : 1500) * 1000)
watchdog.unref()

let code = 0
try {
  await main()
} catch (error) {
  console.error(error)
  code = 1
} finally {
  await Promise.all([...children].map(stop))
  try { await dropScratch?.() } catch (error) { console.error('could not drop the scratch database:', error); code = 1 }
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
}
process.exit(code)
