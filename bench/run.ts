/**
 * Load benchmark: the service (one process, a PostgreSQL database) side by side with the limits that
 * bound it, measured in the same run, with ratios and PASS/FAIL per target (issue 22). For every
 * scenario it reads CPU time from /proc/<pid>/stat (utime + stime, every thread of the process):
 * the service's, the PostgreSQL backends' serving it (found by application_name in
 * pg_stat_activity), and the bare node:http server's for the same requests from the same load
 * generator, and divides each by the requests answered in the measured window. The limits are the
 * bare server and pgbench (bench/ceilings.ts); between them, a floor server runs the service's
 * statements from Node with nothing around them (bench/floor-server.ts).
 *
 *   npm run bench                   # 10,000 members, 1,000 products, 1,000,000 orders; 12 s per scenario
 *   npm run bench -- --quick        # 100,000 orders, 5 s per scenario (under 3 minutes)
 *   npm run bench -- --fresh        # seed again even if the database is already seeded
 *   npm run bench -- --profile      # instead of the table: profile get, list, search and create
 *   npm run bench -- --profile=list,create   # … only these (get, list, deep, search, create, mix)
 *   npm run bench -- --measure=list  # the same runs without the profiler: CPU per request only
 *   npm run bench -- --measure=admin,admin-paid   # … e.g. the admin list, unfiltered and filtered
 *
 * SERVICE_ROOT=<dir> runs the service built in another checkout (see SERVICE_ROOT below).
 * The seeded database is kept between runs and reused when its seed matches (`order_bench`, or
 * `order_bench_quick` for --quick; what earlier runs added is deleted first). DATABASE_URL names the
 * server it lives on (default postgres://postgres@127.0.0.1:5432/postgres). With --profile, each
 * scenario runs against a fresh service process under `node --cpu-prof`, and bench/profile-top.mjs
 * prints its measured window's self time by function, file and package, in µs per request.
 * Prints a machine line and markdown tables (paste into bench/RESULTS.md).
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
import { openLoop } from './open-loop.js'
import { FLOOR_APP, PGBENCH_APP, createScript, oneStatementCreateScript, getByIdScript, runPgbench, startReferenceServer } from './ceilings.js'
import { cpuOf, exitedChildrenOf } from './proc.js'
import { MEMBER_ID_BASE, SEED_PASSWORD, SEED_VERSION, STATUSES, memberEmail, productOf, seed, seededMoney } from './seed.js'
import { adminListStatements, createOf20261124, createStatementNow, listStatements, orderByIdStatement, type BoundStatement } from './statements.js'

const quick = process.argv.includes('--quick')
const fresh = process.argv.includes('--fresh')
/**
 * The admin list (issue 31, CONTRACT §15.5): its first page of 20 in the default order (newest
 * first, with the count), unfiltered and filtered by the stored payment and fulfilment statuses.
 * PARTIALLY_REFUNDED is a rare value (2% of the seed), where a plan that walks the newest orders and
 * filters them would read the most rows; PAID and UNFULFILLED are common (45%, 70%), where counting
 * costs the most. `index`: the index the filtered statement must use.
 */
const ADMIN_LISTS = [
  { key: 'admin', scenario: 'GET /admin/orders (first page of 20)', search: '', query: {} },
  { key: 'admin-paid', scenario: 'GET /admin/orders?paymentStatus=PAID', search: '?paymentStatus=PAID', query: { paymentStatus: 'PAID' }, index: 'orders_payment_status_created_idx' },
  { key: 'admin-refunded', scenario: 'GET /admin/orders?paymentStatus=PARTIALLY_REFUNDED', search: '?paymentStatus=PARTIALLY_REFUNDED', query: { paymentStatus: 'PARTIALLY_REFUNDED' }, index: 'orders_payment_status_created_idx' },
  { key: 'admin-unfulfilled', scenario: 'GET /admin/orders?fulfillmentStatus=UNFULFILLED', search: '?fulfillmentStatus=UNFULFILLED', query: { fulfillmentStatus: 'UNFULFILLED' }, index: 'orders_fulfillment_status_created_idx' },
] as const
const PROFILE_SCENARIOS = ['get', 'list', 'deep', 'search', 'create', 'mix', ...ADMIN_LISTS.map(list => list.key)] as const
type ProfileScenario = typeof PROFILE_SCENARIOS[number]
/**
 * `--profile[=a,b]`: profile these scenarios (default get, list, search, create) instead of the
 * table. `--measure=a,b`: the same runs without the profiler (each on a fresh service process), for
 * before/after comparisons of one scenario's CPU per request.
 */
const profileArg = process.argv.find(arg => arg === '--profile' || arg.startsWith('--profile=') || arg.startsWith('--measure='))
const profiling = profileArg?.startsWith('--profile') ?? false
const profiled: ProfileScenario[] | undefined = profileArg === undefined
  ? undefined
  : profileArg === '--profile' ? ['get', 'list', 'search', 'create'] : profileArg.replace(/^--\w+=/, '').split(',') as ProfileScenario[]
for (const name of profiled ?? []) {
  if (!PROFILE_SCENARIOS.includes(name)) throw new Error(`--profile: unknown scenario ${name}; one of ${PROFILE_SCENARIOS.join(', ')}`)
}
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
/**
 * Where the service under test is built and run from: this tree, or SERVICE_ROOT (another checkout,
 * with its node_modules), to measure a version other than the working tree's, e.g. before and after
 * a change, or HEAD while the shared working tree holds someone's unfinished edit.
 */
const SERVICE_ROOT = process.env.SERVICE_ROOT ?? ROOT
const PROFILES = fileURLToPath(new URL('./profiles', import.meta.url))
/** The service's application_name (src/db/database.ts): its PostgreSQL backends are found by it. */
const SERVICE_APP = 'order-service'
/** The seeded database, kept between runs. */
const BENCH_DB = quick ? 'order_bench_quick' : 'order_bench'
const started = performance.now()
const log = (line: string) => console.error(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`)

// ---------------------------------------------------------------- processes and cleanup
const children = new Set<ChildProcess>()
let dropScratch: (() => Promise<void>) | undefined // a scratch database being created, dropped on exit

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
    cwd: SERVICE_ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'warn',
      AUTH_RATE_LIMIT: '1000000', // the largest it accepts (per minute),
      MAX_UNPAID_ORDERS: '0', // its members place many orders and pay for none (CONTRACT §18's limit is 10)
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

// ---------------------------------------------------------------- CPU time from /proc

/** Starts reading a process's CPU time; the function returns the µs it used since. */
function processCpu (pid: number): () => number {
  const from = cpuOf(pid) ?? 0
  return () => (cpuOf(pid) ?? from) - from
}

/** The load generator (this process): CPU µs since the call, every thread. */
function generatorCpu (): () => number {
  const from = process.cpuUsage()
  return () => { const used = process.cpuUsage(from); return used.user + used.system }
}

let monitor: pg.Client | undefined // one connection of the bench's own, to find backends by application_name
let postmaster: number | undefined // PostgreSQL's postmaster: the parent of the monitor's backend

/**
 * The CPU time of the PostgreSQL backends serving the connections named `app` (application_name),
 * summed, from now until the returned function is called. Backends are found in pg_stat_activity
 * every 200 ms and read from /proc every 50 ms: one that connects during the window counts from its
 * start, one that exits counts up to its last reading (at most 50 ms lost). PostgreSQL's shared
 * processes (WAL writer, checkpointer, autovacuum) are not counted; nor is this monitor's own backend.
 */
async function backendCpu (app: string, clientsOnly = false): Promise<() => Promise<{ us: number, backends: number }>> {
  const since = Date.now()
  const seen = new Map<number, { from: number, last: number }>()
  const discover = async (first: boolean) => {
    const { rows } = await monitor!.query<{ pid: number, started: Date }>(
      // Parallel workers carry their leader's application_name; with clientsOnly they are left to
      // the reading of exited processes (startMeters), which sees every one of them whole.
      `select pid, backend_start as started from pg_stat_activity where application_name = $1${clientsOnly ? ' and backend_type = \'client backend\'' : ''}`, [app])
    for (const { pid, started } of rows) {
      if (seen.has(pid)) continue
      const now = cpuOf(pid)
      if (now === undefined) continue
      // A backend that started before the window counts from now; one that started in it, from zero.
      seen.set(pid, { from: first || started.getTime() < since ? now : 0, last: now })
    }
  }
  const read = () => {
    for (const [pid, entry] of seen) {
      const now = cpuOf(pid)
      if (now !== undefined) entry.last = now
    }
  }
  await discover(true)
  let discovering: Promise<void> | undefined
  const reader = setInterval(read, 50)
  const finder = setInterval(() => { discovering ??= discover(false).catch(() => {}).finally(() => { discovering = undefined }) }, 200)
  return async () => {
    clearInterval(finder)
    await discovering
    await discover(false).catch(() => {})
    clearInterval(reader)
    read()
    let us = 0
    for (const entry of seen.values()) us += entry.last - entry.from
    return { us, backends: seen.size }
  }
}

/** What to read during a scenario: the server process's CPU (and RSS if it is the service's), and the backends of `app`. */
interface Meters { pid: number, app?: string, service?: boolean, parallel?: boolean }
/**
 * CPU µs per request, each measured over the scenario's measured window. With `parallel`, `pg`
 * includes `workers`: the CPU of PostgreSQL processes that exited in the window (the postmaster's
 * waited-for children), which during a scenario of read-only statements that PostgreSQL runs in
 * parallel are those statements' parallel workers (autovacuum is off on this server, and the
 * service's own backends stay).
 */
interface Cpu { server: number, pg?: number, generator: number, backends?: number, workers?: number }

async function startMeters (meters: Meters | undefined): Promise<(requests: number) => Promise<{ cpu?: Cpu, rss?: number }>> {
  if (!meters) return async () => ({})
  const server = processCpu(meters.pid)
  const generator = generatorCpu()
  const rss = meters.service ? sampleRss(meters.pid) : undefined
  const backends = meters.app ? await backendCpu(meters.app, meters.parallel) : undefined
  const exitedFrom = meters.parallel && postmaster ? exitedChildrenOf(postmaster)?.us : undefined
  return async requests => {
    const serverUs = server()
    const generatorUs = generator()
    const pgUs = await backends?.()
    const workersUs = exitedFrom === undefined ? undefined : (exitedChildrenOf(postmaster!)?.us ?? exitedFrom) - exitedFrom
    const per = (us: number) => us / Math.max(1, requests)
    return {
      cpu: {
        server: per(serverUs),
        generator: per(generatorUs),
        ...(pgUs ? { pg: per(pgUs.us + (workersUs ?? 0)), backends: pgUs.backends } : {}),
        ...(workersUs !== undefined ? { workers: per(workersUs) } : {}),
      },
      ...(rss ? { rss: rss() } : {}),
    }
  }
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
  cpu?: Cpu
  /** The bare server's CPU per request in this run, beside which this row's is read. */
  bareUs?: number
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

async function load (name: string, url: string, requests: Requests | undefined, opts: { meters?: Meters, seconds?: number, record?: boolean } = {}): Promise<Row> {
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
  let meters: Promise<(requests: number) => Promise<{ cpu?: Cpu, rss?: number }>> | undefined
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ ...options, duration: WARM_UP + seconds }, (error, result) => error ? reject(error) : resolve(result))
    instance.on('response', (_client, _status, _bytes, responseTime) => { if (measuredFrom > 0) latencies.push(responseTime) })
  })
  const warmUp = setTimeout(() => {
    measuredFrom = performance.now()
    meters = startMeters(opts.meters)
  }, WARM_UP * 1000)
  const result = await finished
  clearTimeout(warmUp)
  const measuredSeconds = (performance.now() - measuredFrom) / 1000
  const read = await (await meters)?.(latencies.length)
  const rss = read?.rss
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
    ...(read?.cpu ? { cpu: read.cpu } : {}),
  }
  if (opts.record !== false) rows.push(row)
  log(`  ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, p99.9 ${row.p999} ms, errors ${row.errors}` +
    ` (non2xx ${result.non2xx}, socket ${result.errors}, timeouts ${result.timeouts})${rss ? `, peak RSS ${(rss / MB).toFixed(0)} MB` : ''}` +
    (row.cpu ? `; CPU per request: server ${row.cpu.server.toFixed(0)} µs${row.cpu.pg !== undefined ? `, PostgreSQL ${row.cpu.pg.toFixed(0)} µs (${row.cpu.backends} backends${row.cpu.workers !== undefined ? `; ${row.cpu.workers.toFixed(0)} µs of it in exited processes: parallel workers` : ''})` : ''}, generator ${row.cpu.generator.toFixed(0)} µs` : ''))
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
async function steady (name: string, base: string, requests: autocannon.Request[], rate: number, meters: Meters): Promise<{ row: Row, lag: number, warmUp: { p99: number, max: number } }> {
  log(`${name}: ${WARM_UP} s warm-up, then ${SECONDS} s at ${rate} req/s, open loop`)
  const latencies: number[] = []
  const warmUpLatencies: number[] = []
  let errors = 0
  const warmUpCount = rate * WARM_UP
  const total = warmUpCount + rate * SECONDS
  let lag = 0 // the most the generator fell behind its own schedule in the measured part (its own pauses, not the service's)
  // The earlier scenarios left garbage in this process; collect it now rather than during the run.
  ;(globalThis as { gc?: () => void }).gc?.()
  let metering: Promise<(requests: number) => Promise<{ cpu?: Cpu, rss?: number }>> | undefined
  const warmUpTimer = setTimeout(() => { metering = startMeters(meters) }, WARM_UP * 1000)
  const measuredFrom = performance.now() + WARM_UP * 1000
  await openLoop({
    base: new URL(base),
    requests: requests.map(spec => ({ method: spec.method ?? 'GET', path: spec.path!, headers: spec.headers as Record<string, string> })),
    rate,
    total,
    maxConnections: CONNECTIONS * 2,
    answered: (index, status, latencyMs) => {
      if (status !== 200) errors++
      if (status !== 0) (index < warmUpCount ? warmUpLatencies : latencies).push(latencyMs)
    },
    behind: (index, ms) => { if (index >= warmUpCount) lag = Math.max(lag, ms) },
  })
  clearTimeout(warmUpTimer)
  const read = await (await metering)?.(latencies.length)
  const rss = read?.rss ?? 0
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
    ...(read?.cpu ? { cpu: read.cpu } : {}),
  }
  const warmUp = { p99: at(warmUpLatencies, 0.99), max: at(warmUpLatencies, 1) }
  log(`  ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, p99.9 ${row.p999} ms, errors ${errors}, generator lag ≤ ${lag.toFixed(0)} ms; ` +
    `warm-up p99 ${warmUp.p99} ms, max ${warmUp.max} ms` +
    (row.cpu ? `; CPU per request: service ${row.cpu.server.toFixed(0)} µs, PostgreSQL ${row.cpu.pg?.toFixed(0)} µs` : ''))
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

// ---------------------------------------------------------------- the database
const databaseUrl = (name: string) => { const url = new URL(SERVER_URL); url.pathname = `/${name}`; return url.toString() }

/** Creates an empty database, starts the service on it once (it migrates), and returns the start-up time. */
async function migrateEmpty (name: string): Promise<number> {
  await query(SERVER_URL, `create database ${name}`)
  const first = await startService({ DATABASE_URL: databaseUrl(name) })
  await stop(first.child)
  return first.startupMs
}

/**
 * The seeded database BENCH_DB: reused when it holds this run's seed (bench_seed), after deleting
 * what earlier runs added (orders, their events, keys) and restoring the seeded orders they changed;
 * otherwise created and seeded with set-based SQL. Returns its URL, the start-up time on an empty
 * database (migrations), and how the seed came about.
 */
async function seededDatabase (): Promise<{ url: string, emptyStartupMs: number, seedNote: string }> {
  const url = databaseUrl(BENCH_DB)
  const exists = (await query(SERVER_URL, 'select 1 from pg_database where datname = $1', [BENCH_DB])).rowCount === 1
  let stored: { members: number, products: number, orders: number, seed: number, seconds: number, at: Date } | undefined
  if (exists && !fresh) {
    // A bench_seed without `seed` (before SEED_VERSION 2) fails this query: the database is seeded again.
    stored = (await query(url, 'select members, products, orders, seed, seconds, seeded_at as at from bench_seed').catch(() => ({ rows: [] }))).rows[0]
  }
  if (stored && stored.members === SIZES.members && stored.products === SIZES.products && stored.orders === SIZES.orders && stored.seed === SEED_VERSION) {
    // The start-up on an empty database, measured on a scratch one.
    const scratch = `order_bench_empty_${randomBytes(4).toString('hex')}`
    dropScratch = async () => { await query(SERVER_URL, `drop database if exists ${scratch} with (force)`) }
    const emptyStartupMs = await migrateEmpty(scratch)
    await dropScratch()
    dropScratch = undefined
    log(`reusing ${BENCH_DB} (seeded ${stored.at.toISOString()} in ${stored.seconds.toFixed(0)} s); deleting what earlier runs added`)
    const started = performance.now()
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      // The seed's order g has status STATUSES[floor(g / members) % 4], version 1, one history entry
      // and the money and fulfilment columns of seededMoney.
      const n = SIZES.orders
      const statuses = `array[${STATUSES.map(status => `'${status}'`).join(', ')}]`
      for (const statement of [
        'truncate webhook_deliveries, events, idempotency_keys',
        `delete from order_history where order_id > ${n} or action <> 'create'`,
        `delete from order_items where order_id > ${n}`,
        `delete from payment_refunds where payment_id in (select id from payments where order_id > ${n})`,
        `delete from payments where order_id > ${n}`,
        `delete from orders where id > ${n}`,
        `update orders set status = (${statuses})[1 + (id / ${SIZES.members}) % 4], version = 1, event_sequence = 0,
           reserved_until = null, payment_id = null, updated_at = created_at,
           (paid_amount, refunded_amount, credited_amount, payment_status, fulfillment_status) =
             (select ${seededMoney('id', 'total_amount', SIZES.members).join(', ')})
           where version <> 1 or event_sequence <> 0`,
        'vacuum analyze',
        'checkpoint',
      ]) await client.query(statement)
    } finally { await client.end() }
    log(`  reset in ${((performance.now() - started) / 1000).toFixed(1)} s`)
    return { url, emptyStartupMs, seedNote: `reused, seeded earlier in ${stored.seconds.toFixed(0)} s` }
  }

  if (exists) await query(SERVER_URL, `drop database if exists ${BENCH_DB} with (force)`)
  dropScratch = async () => { await query(SERVER_URL, `drop database if exists ${BENCH_DB} with (force)`); log(`dropped ${BENCH_DB}, not fully seeded`) }
  const emptyStartupMs = await migrateEmpty(BENCH_DB)
  log(`first start (empty database, migrations): ${emptyStartupMs.toFixed(0)} ms`)
  log(`seeding ${BENCH_DB}`)
  const passwordHash = await hashPassword(SEED_PASSWORD)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const seeding = performance.now()
  try {
    await seed(client, SIZES, passwordHash, log)
    const seconds = (performance.now() - seeding) / 1000
    await client.query('create table bench_seed (members integer, products integer, orders integer, seed integer, seconds real, seeded_at timestamptz default now())')
    await client.query('insert into bench_seed (members, products, orders, seed, seconds) values ($1, $2, $3, $4, $5)', [SIZES.members, SIZES.products, SIZES.orders, SEED_VERSION, seconds])
    dropScratch = undefined // seeded: kept for the next run
    log(`seeded in ${seconds.toFixed(1)} s`)
    return { url, emptyStartupMs, seedNote: `seeded in ${seconds.toFixed(0)} s` }
  } finally { await client.end() }
}

// ---------------------------------------------------------------- the run
interface Target { name: string, pass: boolean, detail: string }
const targets: Target[] = []
const plans: string[] = []
let machine = ''

/** `node bench/profile-top.mjs` on a profile, for the window of `seconds` ending `tail` seconds before the profile's end. */
function summariseProfile (file: string, requests: number, seconds: number, tail: number): string {
  return execFileSync(process.execPath, [fileURLToPath(new URL('./profile-top.mjs', import.meta.url)), file, '25',
    `--requests=${requests}`, `--window=${(seconds + tail).toFixed(2)},${tail.toFixed(2)}`], { encoding: 'utf8' })
}

/** The scan nodes of an EXPLAIN (FORMAT JSON) plan: node type, index and relation. */
function scansOf (plan: any): string[] {
  const scans: string[] = []
  const walk = (node: any) => {
    if (/Scan/.test(node['Node Type'])) scans.push(`${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`)
    for (const child of node.Plans ?? []) walk(child)
  }
  walk(plan[0].Plan)
  return scans
}

interface AdminPlan { custom: string[], generic: string[], customMs: number, genericMs: number, customText: string, genericText?: string }

/**
 * EXPLAIN ANALYZE of the admin list's statements as the service sends them (adminListStatements),
 * once as PostgreSQL plans them for their values (custom) and once as the generic plan a prepared
 * statement may switch to after five runs (the service prepares its statements, src/db/prepared.ts).
 * Scan nodes and times from FORMAT JSON; the text of each plan for the output (the generic plan's
 * only where its scans differ).
 */
async function explainAdminLists (url: string): Promise<Map<string, AdminPlan>> {
  const statements = await adminListStatements(ADMIN_LISTS.map(list => ({ label: list.key, query: list.query })))
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const plans = new Map<string, AdminPlan>()
  try {
    const literalOf = (value: unknown): string => typeof value === 'string' ? client.escapeLiteral(value) : String(value)
    const explain = async (statement: BoundStatement, options: string): Promise<unknown> => {
      await client.query(`prepare bench_admin as ${statement.text}`)
      try {
        const args = statement.values.length ? `(${statement.values.map(literalOf).join(', ')})` : ''
        return (await client.query(`explain (${options}) execute bench_admin${args}`)).rows
      } finally { await client.query('deallocate bench_admin') }
    }
    for (const statement of statements) {
      const plan = {} as AdminPlan
      for (const mode of ['custom', 'generic'] as const) {
        await client.query(`set plan_cache_mode = ${mode === 'custom' ? 'force_custom_plan' : 'force_generic_plan'}`)
        const json = (await explain(statement, 'analyze, format json') as Array<{ 'QUERY PLAN': any }>)[0]!['QUERY PLAN']
        const text = (await explain(statement, 'analyze, buffers, format text') as Array<{ 'QUERY PLAN': string }>).map(row => row['QUERY PLAN']).join('\n')
        plan[mode] = scansOf(json)
        plan[`${mode}Ms`] = json[0]['Execution Time'] as number
        if (mode === 'custom') plan.customText = text
        else if (plan.generic.join() !== plan.custom.join()) plan.genericText = text
      }
      await client.query('reset plan_cache_mode')
      plans.set(statement.label, plan)
      log(`  EXPLAIN admin list ${statement.label}: ${plan.custom.join('; ')} in ${plan.customMs.toFixed(1)} ms; generic ${plan.generic.join('; ')} in ${plan.genericMs.toFixed(1)} ms`)
    }
  } finally { await client.end() }
  return plans
}

async function main () {
  const pgVersion = (await query(SERVER_URL, 'show server_version')).rows[0]!.server_version as string
  const cpus = os.cpus()
  const model = cpus[0]?.model.trim() ?? 'unknown CPU'
  machine = `nproc ${os.availableParallelism()}, ${model} × ${cpus.length}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, ` +
    `${os.type()} ${os.release()}, Node ${process.version}, PostgreSQL ${pgVersion}, pgbench ${execFileSync('pgbench', ['--version'], { encoding: 'utf8' }).trim().replace(/^pgbench \(PostgreSQL\) /, '')}`
  console.log(`machine: ${machine}`)
  console.log(`mode: ${quick ? 'quick' : 'full'}: ${SIZES.members} members, ${SIZES.products} products, ${SIZES.orders} orders (3 items each), ` +
    `${SECONDS} s per scenario, ${CONNECTIONS} connections, ${TOKENS} member tokens`)

  log(`building the service (npm run build) in ${SERVICE_ROOT}`)
  try {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: SERVICE_ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  } catch {
    // tsc emits dist/ despite type errors; a shared working tree may hold someone's unfinished change.
    log('the build reported type errors (above); running the dist/ it emitted anyway')
  }

  // 1. The seeded database (reused when it is there), and the statements the service runs.
  const { url: DATABASE_URL, emptyStartupMs, seedNote } = await seededDatabase()
  monitor = new pg.Client({ connectionString: DATABASE_URL, application_name: 'order-bench-monitor' })
  await monitor.connect()
  postmaster = exitedChildrenOf(Number((await monitor.query('select pg_backend_pid() as pid')).rows[0]!.pid))?.parent
  // The by-id read as the service compiles it now; the create as it was on 2026-11-24 (issue 22's
  // baseline: six separate statements), whatever the service's create has become since.
  const orderById = await orderByIdStatement()
  const todaysCreate = createOf20261124()

  // 2. Startup on PostgreSQL (seeded) — the process every scenario runs against.
  let service = await startService({ DATABASE_URL })
  const seededStartupMs = service.startupMs
  let pid = service.child.pid!
  const base = service.base
  log(`service pid ${pid} healthy in ${service.startupMs.toFixed(0)} ms`)

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${service.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
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

  // The service at rest: what its background jobs (purges, the reservation sweep, the event feed,
  // the webhook dispatcher) cost it and PostgreSQL, per second, to read the scenarios' CPU against.
  const IDLE_SECONDS = 3
  const resting = await startMeters({ pid, app: SERVICE_APP })
  await new Promise(resolve => setTimeout(resolve, IDLE_SECONDS * 1000))
  const rest = (await resting(IDLE_SECONDS)).cpu!
  log(`at rest: service ${rest.server.toFixed(0)} µs/s, its PostgreSQL backends ${rest.pg?.toFixed(0)} µs/s (${rest.backends} backends)`)

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
  const getRequests = prebuilt(getById)
  // The admin list's first page, as the back office asks for it: one admin, one query string.
  const adminList = (search: string): autocannon.Request[] => [{ method: 'GET', path: `/api/v1/admin/orders${search}`, headers: auth(adminToken) }]

  if (profiled) {
    // Each scenario against its own service process under --cpu-prof; the profile is written at exit.
    await stop(service.child)
    const scenarios: Record<ProfileScenario, [string, Requests]> = {
      get: ['GET /orders/{id}', getRequests],
      list: ['GET /orders (first page, 20)', prebuilt(listFirst)],
      deep: ['GET /orders (cursor, 5th page of 10)', prebuilt(listDeep)],
      search: ['GET /admin/orders/search (status + 1 h window)', prebuilt(adminSearch)],
      create: ['POST /orders (3 items, Idempotency-Key)', create],
      mix: ['mix 80% reads / 15% creates / 5% cancels', mix],
      ...Object.fromEntries(ADMIN_LISTS.map(list => [list.key, [list.scenario, adminList(list.search)]])) as Record<typeof ADMIN_LISTS[number]['key'], [string, Requests]>,
    }
    for (const name of profiled) {
      const [label, requests] = scenarios[name]
      const stamp = new Date().toISOString().replaceAll(':', '').replace(/\..*$/, '')
      const file = `${name}-${stamp}.cpuprofile`
      service = await startService({ DATABASE_URL }, profiling ? ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`, `--cpu-prof-name=${file}`] : [])
      pid = service.child.pid!
      const row = await load(`${label}${profiling ? ' (under --cpu-prof)' : ''}`, service.base, requests, { meters: { pid, app: SERVICE_APP, service: true, parallel: name.startsWith('admin') } })
      const ended = performance.now()
      await stop(service.child)
      const tail = (performance.now() - ended) / 1000
      if (!profiling) {
        console.log(`${label}: ${row.rps.toFixed(0)} req/s, p99 ${row.p99} ms; CPU per request: service ${row.cpu?.server.toFixed(0)} µs, ` +
          `PostgreSQL ${row.cpu?.pg?.toFixed(0)} µs${row.cpu?.workers !== undefined ? ` (${row.cpu.workers.toFixed(0)} µs of it parallel workers)` : ''}, generator ${row.cpu?.generator.toFixed(0)} µs; peak RSS ${row.rssMb?.toFixed(0)} MB`)
        continue
      }
      const requestsMeasured = Math.round(row.rps * SECONDS)
      console.log(`\n## Profile: ${label}\n`)
      console.log(`${row.rps.toFixed(0)} req/s under the profiler; CPU per request from /proc: service ${row.cpu?.server.toFixed(0)} µs, ` +
        `PostgreSQL ${row.cpu?.pg?.toFixed(0)} µs, load generator ${row.cpu?.generator.toFixed(0)} µs\n`)
      console.log('```')
      console.log(summariseProfile(`${PROFILES}/${file}`, requestsMeasured, SECONDS, tail).trimEnd())
      console.log('```')
    }
    return
  }

  // 3. Ceilings and scenarios.
  const barePort = await freePort()
  const bare = await startReferenceServer('bare-server', barePort)
  children.add(bare)
  const bareMeters: Meters = { pid: bare.pid! }
  // The ceiling for each scenario's ratio: the bare server answering the same requests (paths,
  // tokens) from the same kind of list, so the load generator does the same work on both sides.
  const plainRow = await load('bare node:http, one fixed request', `http://127.0.0.1:${barePort}/`, undefined, { meters: bareMeters })
  plainRow.note = 'separate process; no Authorization header, one path; CPU: the bare server\'s own'
  const bareRow = await load('bare node:http, the GET /orders/{id} requests (Node ceiling)', `http://127.0.0.1:${barePort}/`, getRequests, { meters: bareMeters })
  await stop(bare)
  bareRow.note = 'separate process; same request list as GET /orders/{id}; CPU: the bare server\'s own'
  const bareUs = bareRow.cpu!.server

  const serviceMeters = (): Meters => ({ pid, app: SERVICE_APP, service: true })
  const pgbench = async (label: string, script: string, note: string, rate?: number, seconds = SECONDS): Promise<{ row: Row, tps: number, pgUs: number }> => {
    log(`pgbench: ${label}, ${POOL_SIZE} clients, ${seconds} s${rate ? `, at ${rate.toFixed(0)} tx/s` : ''}`)
    const backends = await backendCpu(PGBENCH_APP)
    const result = await runPgbench(DATABASE_URL, script, { clients: POOL_SIZE, threads: 2, seconds, rate })
    const used = await backends()
    const pgUs = used.us / Math.max(1, result.transactions)
    const row: Row = { scenario: `pgbench: ${label}`, rps: result.tps, errors: result.failed, cpu: { server: NaN, pg: pgUs, generator: NaN, backends: used.backends }, note: `avg latency ${result.latencyMs} ms, ${POOL_SIZE} clients; ${note}` }
    rows.push(row)
    log(`  ${result.tps.toFixed(0)} tps; PostgreSQL CPU per transaction ${pgUs.toFixed(0)} µs (${used.backends} backends)`)
    return { row, tps: result.tps, pgUs }
  }

  const pgGet = await pgbench('order by id with items, one id per statement', getByIdScript(orderById, SIZES.orders),
    'the service\'s by-id statement; the service and the floor share statements between reads')

  // The floor: node:http and pg running the service's statements, nothing else (bench/floor-server.ts).
  const floorPort = await freePort()
  const floor = await startReferenceServer('floor-server', floorPort, { DATABASE_URL, POOL_SIZE: String(POOL_SIZE) })
  children.add(floor)
  const floorMeters: Meters = { pid: floor.pid!, app: FLOOR_APP }
  const floorBase = `http://127.0.0.1:${floorPort}`
  const floorGetRow = await load('floor: node:http + pg, the by-id statement only', floorBase, getRequests, { meters: floorMeters })
  floorGetRow.ceiling = 'bare node:http'
  floorGetRow.ratio = floorGetRow.rps / bareRow.rps
  floorGetRow.bareUs = bareUs
  floorGetRow.note = `separate process; same request list as GET /orders/{id}; ${percent(floorGetRow.rps / pgGet.tps)} of pgbench by-id`

  const getRow = await load('GET /orders/{id}', base, getRequests, { meters: serviceMeters() })
  getRow.ceiling = 'bare node:http'
  getRow.ratio = getRow.rps / bareRow.rps
  getRow.bareUs = bareUs
  getRow.note = `${percent(getRow.rps / pgGet.tps)} of pgbench by-id, ${percent(getRow.rps / floorGetRow.rps)} of the floor`

  const half = Math.max(1, Math.round(getRow.rps / 2))
  const halves = await medianOf(REPEATS, run => steady(`GET /orders/{id} at half peak, run ${run} of ${REPEATS}`, base, getRequests, half, serviceMeters()), run => run.row.p99 ?? Infinity)
  const halfRow: Row = {
    ...halves.median.row,
    scenario: `GET /orders/{id} at half peak (${half} req/s, steady; median of ${REPEATS} runs by p99)`,
    rssMb: Math.max(...halves.all.map(run => run.row.rssMb ?? 0)),
    errors: halves.all.reduce((sum, run) => sum + (run.row.errors ?? 0), 0),
    bareUs,
    note: `open loop; p99 of the runs: ${halves.all.map(run => `${run.row.p99} ms`).join(', ')}; ` +
      `the generator fell behind its schedule by at most ${halves.all.map(run => `${run.lag.toFixed(0)} ms`).join(', ')}; ` +
      `in the ${WARM_UP} s warm-ups (not measured) p99 ${halves.all.map(run => `${run.warmUp.p99}`).join(', ')} ms, ` +
      `worst ${halves.all.map(run => `${run.warmUp.max}`).join(', ')} ms`,
  }
  rows.push(halfRow)

  // Not a target: the floor server (node:http and pg, the same statement, nothing else) at the same
  // rate, the same generator and requests. Its p99 is as low as any service reading this database
  // could go on this machine at that rate (one run in the quick mode, to stay within 3 minutes).
  const floorRuns = quick ? 1 : REPEATS
  const floorHalves = await medianOf(floorRuns, run => steady(`floor: the by-id statement at the same rate, run ${run} of ${floorRuns}`, floorBase, getRequests, half, floorMeters), run => run.row.p99 ?? Infinity)
  rows.push({
    ...floorHalves.median.row,
    scenario: `floor: the by-id statement at the same rate (${half} req/s, steady; median of ${floorRuns} by p99)`,
    bareUs,
    note: `not a target; separate process; p99 of the runs: ${floorHalves.all.map(run => `${run.row.p99} ms`).join(', ')}`,
  })

  const listRow = await load('GET /orders (first page, 20)', base, prebuilt(listFirst), { meters: serviceMeters() })
  listRow.ceiling = 'bare node:http'
  listRow.ratio = listRow.rps / bareRow.rps
  listRow.bareUs = bareUs
  listRow.note = `service CPU ${(listRow.cpu!.server / getRow.cpu!.server).toFixed(2)} × GET /orders/{id}'s`
  const deepRow = await load('GET /orders (cursor, 5th page of 10)', base, prebuilt(listDeep), { meters: serviceMeters() })
  deepRow.ceiling = 'bare node:http'
  deepRow.ratio = deepRow.rps / bareRow.rps
  deepRow.bareUs = bareUs
  deepRow.note = `service CPU ${(deepRow.cpu!.server / getRow.cpu!.server).toFixed(2)} × GET /orders/{id}'s`

  const sixStatements = createScript(todaysCreate, SIZES.products, MEMBER_ID_BASE, SIZES.members)
  const pgCreate = await pgbench('order creation, the six statements of 2026-11-24 (BEGIN, claim key, lock products, insert, store answer, COMMIT)',
    sixStatements, 'the service\'s create of 2026-11-24, statement for statement')

  // The rows that explain a target rather than measure one are shorter in the quick mode (3 minutes).
  const DIAGNOSTIC_SECONDS = quick ? 3 : SECONDS
  const floorCreateRow = await load('floor: node:http + pg, the creation transaction only', floorBase, create, { meters: floorMeters })
  floorCreateRow.ceiling = 'pgbench create'
  floorCreateRow.ratio = floorCreateRow.rps / pgCreate.tps
  floorCreateRow.bareUs = bareUs
  floorCreateRow.note = 'separate process; same requests as POST /orders'
  // The floor again, running the service's own create statement (one round trip) in place of the
  // six: what any Node service that creates the way the service does costs here, before its own code.
  const createOne: Setup = req => ({ ...create(req), path: '/api/v1/orders?statement=one' })
  const floorOneRow = await load('floor: node:http + pg, the service\'s one create statement only', floorBase, createOne, { meters: floorMeters, seconds: DIAGNOSTIC_SECONDS })
  await stop(floor)
  floorOneRow.ceiling = 'pgbench create'
  floorOneRow.ratio = floorOneRow.rps / pgCreate.tps
  floorOneRow.bareUs = bareUs
  floorOneRow.note = 'separate process; same requests as POST /orders; src/orders/repository.ts placeOrderInOneStatement, nothing checked in Node'

  const createRow = await load('POST /orders (3 items, Idempotency-Key)', base, create, { meters: serviceMeters() })
  createRow.ceiling = 'pgbench create'
  createRow.ratio = createRow.rps / pgCreate.tps
  createRow.bareUs = bareUs
  createRow.note = `${percent(createRow.rps / floorCreateRow.rps)} of the six statements' floor, ${percent(createRow.rps / floorOneRow.rps)} of the one statement's; PostgreSQL CPU ${(createRow.cpu!.pg! / pgCreate.pgUs).toFixed(2)} × pgbench's per create`

  // Not a target: PostgreSQL's CPU per commit rises as the commit rate falls (fewer commits share a
  // WAL flush, backends sleep and wake more often), and pgbench runs creates faster than a service
  // that shares the two cores with it can. The six statements again, at the service's create rate,
  // show how much of the difference above is that.
  const pgCreateAtRate = await pgbench('the same six statements at the rate the service reached',
    sixStatements,
    `not a target: the service's PostgreSQL CPU per create is ${createRow.cpu!.pg!.toFixed(0)} µs`, createRow.rps, DIAGNOSTIC_SECONDS)
  pgCreateAtRate.row.note += ` (${(createRow.cpu!.pg! / pgCreateAtRate.pgUs).toFixed(2)} × this)`
  // And the service's own statement, run by pgbench at that rate: what the one statement costs
  // PostgreSQL against the six, with the rate and everything else the same.
  const pgOneAtRate = await pgbench('the service\'s one create statement at the same rate',
    oneStatementCreateScript(await createStatementNow(), SIZES.products, MEMBER_ID_BASE, SIZES.members),
    'not a target: the create as the service sends it now (src/orders/repository.ts placeOrderInOneStatement)', createRow.rps, DIAGNOSTIC_SECONDS)
  pgOneAtRate.row.note += `; ${(pgOneAtRate.pgUs / pgCreateAtRate.pgUs).toFixed(2)} × the six statements' at this rate`

  const mixRow = await load('mix 80% reads / 15% creates / 5% cancels', base, mix, { meters: serviceMeters() })
  mixRow.ceiling = 'bare node:http'
  mixRow.ratio = mixRow.rps / bareRow.rps
  mixRow.bareUs = bareUs

  const searchRow = await load('GET /admin/orders/search (status + 1 h window)', base, prebuilt(adminSearch), { meters: serviceMeters() })
  searchRow.ceiling = 'bare node:http'
  searchRow.ratio = searchRow.rps / bareRow.rps
  searchRow.bareUs = bareUs
  searchRow.note = `service CPU ${(searchRow.cpu!.server / getRow.cpu!.server).toFixed(2)} × GET /orders/{id}'s`

  // The admin list, unfiltered and filtered (issue 31): each filtered page's CPU, the service's and
  // its PostgreSQL backends', against the unfiltered page's in this run.
  const adminRows = new Map<string, Row>()
  for (const list of ADMIN_LISTS) {
    const row = await load(list.scenario, base, adminList(list.search), { meters: { ...serviceMeters(), parallel: true } })
    row.ceiling = 'bare node:http'
    row.ratio = row.rps / bareRow.rps
    row.bareUs = bareUs
    adminRows.set(list.key, row)
  }
  const adminFirst = adminRows.get('admin')!
  adminFirst.note = `service CPU ${(adminFirst.cpu!.server / getRow.cpu!.server).toFixed(2)} × GET /orders/{id}'s`
  for (const [key, row] of adminRows) {
    if (key !== 'admin') row.note = `× the unfiltered admin page: service CPU ${(row.cpu!.server / adminFirst.cpu!.server).toFixed(2)}, PostgreSQL CPU ${(row.cpu!.pg! / adminFirst.cpu!.pg!).toFixed(2)}`
    row.note = `${row.note ? `${row.note}; ` : ''}PostgreSQL CPU includes ${row.cpu!.workers!.toFixed(0)} µs of parallel workers`
  }

  // Export: every order as CSV over one socket, three times (the median run counts). Memory is
  // "constant" when the service's RSS grows by less than EXPORT_GROWTH_MB over what it was before.
  const EXPORT_GROWTH_MB = 50
  const expectedRows = Number((await query(DATABASE_URL, 'select count(*) as n from orders')).rows[0]!.n)
  const exportOnce = async (run: number) => {
    log(`export, run ${run} of ${REPEATS}: streaming every order as CSV`)
    const before = rssOf(pid)
    const meters = await startMeters(serviceMeters())
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
    const read = await meters(count)
    const peak = read.rss ?? 0
    log(`  ${count} rows in ${seconds.toFixed(2)} s: ${(count / seconds).toFixed(0)} rows/s; RSS ${(before / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} MB; ` +
      `CPU per row: service ${read.cpu?.server.toFixed(2)} µs, PostgreSQL ${read.cpu?.pg?.toFixed(2)} µs`)
    return { ...exported, rows: count, seconds, rate: count / seconds, rssMb: peak / MB, growthMb: (peak - before) / MB, cpu: read.cpu }
  }
  const exports = await medianOf(REPEATS, exportOnce, run => run.rate)
  const exported = exports.median
  const exportRows = exported.rows
  const exportRate = exported.rate
  const exportGrowth = Math.max(...exports.all.map(run => run.growthMb))
  const exportErrors = exports.all.reduce((sum, run) => sum + (run.status === 200 ? 0 : 1) + (run.rows === expectedRows ? 0 : 1), 0)
  rows.push({
    scenario: `CSV export (${exportRows} rows, ${(exported.bytes / MB).toFixed(0)} MB; median of ${REPEATS} runs)`,
    rps: exportRate,
    errors: exportErrors,
    rssMb: Math.max(...exports.all.map(run => run.rssMb)),
    ...(exported.cpu ? { cpu: exported.cpu } : {}),
    note: `rows/s, CPU per row; runs: ${exports.all.map(run => run.rate.toFixed(0)).join(', ')} rows/s; median ${exported.seconds.toFixed(2)} s; ` +
      `expected ${expectedRows} rows; RSS grew by at most ${exportGrowth.toFixed(0)} MB during an export`,
  })

  // EXPLAIN the list and search statements as the service sends them (bench/statements.ts), with a
  // custom plan and with the generic plan PostgreSQL may switch a prepared statement to.
  const windowTo = new Date(now - SIZES.orders * 1000 / 2)
  const listed = await listStatements({
    customerId: MEMBER_ID_BASE + 7,
    cursor: { createdAt: new Date(now - 3600_000 * 24), id: SIZES.orders },
    status: 'CONFIRMED',
    from: new Date(windowTo.getTime() - 3600_000),
    to: windowTo,
  })
  const allScans: string[] = []
  const explainer = new pg.Client({ connectionString: DATABASE_URL })
  await explainer.connect()
  try {
    for (const [i, statement] of listed.entries()) {
      const custom = scansOf((await explainer.query(`explain (format json) ${statement.text}`, statement.values as unknown[])).rows[0]['QUERY PLAN'])
      await explainer.query(`prepare bench_${i} as ${statement.text}`)
      await explainer.query('set plan_cache_mode = force_generic_plan')
      const literalOf = (value: unknown): string => {
        if (value instanceof Date) return `'${value.toISOString()}'`
        if (typeof value === 'string') return explainer.escapeLiteral(value)
        if (Array.isArray(value)) return explainer.escapeLiteral(`{${value.join(',')}}`)
        return String(value)
      }
      const literals = statement.values.map(literalOf)
      const generic = scansOf((await explainer.query(`explain (format json) execute bench_${i}${literals.length ? `(${literals.join(', ')})` : ''}`)).rows[0]['QUERY PLAN'])
      await explainer.query('reset plan_cache_mode')
      allScans.push(...custom, ...generic)
      plans.push(`- ${statement.label}: ${custom.join('; ')}${generic.join('; ') === custom.join('; ') ? ' (the same as a generic plan)' : `; as a generic plan: ${generic.join('; ')}`}`)
    }
  } finally { await explainer.end() }

  const adminPlans = await explainAdminLists(DATABASE_URL)

  await stop(service.child)

  // 5. Startup on PGlite (in memory).
  const pglite = await startService({ DATA_DIR: 'memory' })
  await stop(pglite.child)
  log(`PGlite start: ${pglite.startupMs.toFixed(0)} ms`)

  // 4. Targets (issue 22). CPU ratios compare per-request CPU measured in this run.
  const measured = rows.filter(row => row.rssMb !== undefined) // the service's own rows
  const errorRows = measured.filter(row => (row.errors ?? 0) > 0)
  const peakRss = Math.max(...measured.map(row => row.rssMb!))
  const us = (n: number | undefined) => `${(n ?? NaN).toFixed(0)} µs`
  const getCpu = getRow.cpu!.server
  const listCpu = listRow.cpu!.server
  const createCpu = createRow.cpu!.server
  const createPg = createRow.cpu!.pg ?? NaN
  const seqScan = allScans.some(scan => scan.startsWith('Seq Scan') && scan.endsWith(' on orders'))
  const adminTarget = (column: 'paymentStatus' | 'fulfillmentStatus'): Target => {
    const lists = ADMIN_LISTS.filter(list => column in list.query)
    const failing: string[] = []
    for (const list of lists) {
      const plan = adminPlans.get(list.key)!
      for (const [kind, scans] of [['custom', plan.custom], ['generic', plan.generic]] as const) {
        const seq = scans.some(scan => scan.startsWith('Seq Scan') && scan.endsWith(' on orders'))
        const indexed = scans.some(scan => scan.includes(` using ${(list as { index: string }).index} `))
        if (seq || !indexed) failing.push(`${list.search} (${kind} plan): ${scans.join('; ')}`)
      }
    }
    return {
      name: `admin list filtered by ${column}: index scan at ${SIZES.orders} orders (EXPLAIN)`,
      pass: failing.length === 0,
      detail: failing.length === 0
        ? `${lists.map(list => `${list.search}: ${(list as { index: string }).index}, ${adminPlans.get(list.key)!.customMs.toFixed(1)} ms (generic plan ${adminPlans.get(list.key)!.genericMs.toFixed(1)} ms)`).join('; ')}; no Seq Scan on orders, custom or generic plan`
        : failing.join(' | '),
    }
  }
  const adminRatios = ADMIN_LISTS.filter(list => list.key !== 'admin').map(list => {
    const row = adminRows.get(list.key)!
    return { list, service: row.cpu!.server / adminFirst.cpu!.server, pg: row.cpu!.pg! / adminFirst.cpu!.pg! }
  })
  targets.push(
    { name: 'GET /orders/{id}: service CPU per request ≤ 2.5 × the bare server\'s', pass: getCpu <= 2.5 * bareUs, detail: `${(getCpu / bareUs).toFixed(2)} × (${us(getCpu)} / ${us(bareUs)}); PostgreSQL ${us(getRow.cpu!.pg)} more per request; the floor server ${(floorGetRow.cpu!.server / bareUs).toFixed(2)} ×` },
    { name: 'GET /orders (first page of 20): service CPU per request ≤ 2 × GET /orders/{id}\'s', pass: listCpu <= 2 * getCpu, detail: `${(listCpu / getCpu).toFixed(2)} × (${us(listCpu)} / ${us(getCpu)}); the admin search ${(searchRow.cpu!.server / getCpu).toFixed(2)} ×` },
    { name: 'POST /orders: service CPU per create ≤ 15 × the bare server\'s per request', pass: createCpu <= 15 * bareUs, detail: `${(createCpu / bareUs).toFixed(1)} × (${us(createCpu)} / ${us(bareUs)}); the floor server ${(floorCreateRow.cpu!.server / bareUs).toFixed(1)} × with the six statements, ${(floorOneRow.cpu!.server / bareUs).toFixed(1)} × with the service's one` },
    { name: 'POST /orders: PostgreSQL CPU per create < pgbench\'s six statements\'', pass: createPg < pgCreate.pgUs, detail: `${us(createPg)} against ${us(pgCreate.pgUs)} (${(createPg / pgCreate.pgUs).toFixed(2)} ×); the floor server's ${us(floorCreateRow.cpu!.pg)}; at the service's rate pgbench's six ${us(pgCreateAtRate.pgUs)} (${(createPg / pgCreateAtRate.pgUs).toFixed(2)} ×) and the one statement ${us(pgOneAtRate.pgUs)} (not targets)` },
    { name: 'POST /orders: throughput ≥ 50% of pgbench\'s create', pass: createRow.ratio >= 0.5, detail: `${(createRow.ratio * 100).toFixed(1)}% (${createRow.rps.toFixed(0)} / ${pgCreate.tps.toFixed(0)} tx/s); the floor server ${(floorCreateRow.ratio! * 100).toFixed(1)}%` },
    { name: 'GET /orders/{id} at half the peak rate: p99 < 10 ms (median of 3 runs)', pass: (halfRow.p99 ?? Infinity) < 10, detail: `p99 ${halfRow.p99} ms at ${half} req/s (achieved ${halfRow.rps.toFixed(0)}); runs ${halves.all.map(run => run.row.p99).join(', ')} ms; the floor server at that rate ${floorHalves.median.row.p99} ms (not a target)` },
    { name: 'zero errors', pass: errorRows.length === 0, detail: errorRows.length === 0 ? 'none' : errorRows.map(row => `${row.scenario}: ${row.errors}`).join('; ') },
    { name: 'service RSS < 150 MB', pass: peakRss < 150, detail: `peak ${peakRss.toFixed(0)} MB (${measured.filter(row => row.rssMb! >= 150).map(row => row.scenario.replace(/ \(.*$/, '')).join(', ') || 'every scenario under'})` },
    { name: `list queries are index scans at ${SIZES.orders} orders (EXPLAIN)`, pass: allScans.length > 0 && !seqScan, detail: seqScan ? 'a Seq Scan on orders appears' : 'no Seq Scan on orders, custom or generic plan' },
    adminTarget('paymentStatus'),
    adminTarget('fulfillmentStatus'),
    {
      name: 'filtered admin page CPU ≤ 2 × the unfiltered page\'s (service and PostgreSQL, each per request)',
      pass: adminRatios.every(ratio => ratio.service <= 2 && ratio.pg <= 2),
      detail: `unfiltered: service ${us(adminFirst.cpu!.server)}, PostgreSQL ${us(adminFirst.cpu!.pg)}; ` +
        adminRatios.map(({ list, service, pg }) => `${list.search}: service ${service.toFixed(2)} ×, PostgreSQL ${pg.toFixed(2)} ×`).join('; '),
    },
    { name: `CSV export of ${exportRows} rows ≥ 250,000 rows/s in constant memory`, pass: exportRate >= 250_000 && exportErrors === 0 && exportGrowth < EXPORT_GROWTH_MB, detail: `${exportRate.toFixed(0)} rows/s (median of ${REPEATS}), ${exportRows}/${expectedRows} rows; RSS grew by at most ${exportGrowth.toFixed(0)} MB (limit ${EXPORT_GROWTH_MB})` }
  )

  // Output.
  const f = (n: number | undefined, digits = 0) => n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits)
  const out: string[] = []
  out.push('', `**Machine:** ${machine}`, '')
  out.push(`**Run:** ${quick ? 'quick' : 'full'}, ${SIZES.members} members, ${SIZES.products} products, ${SIZES.orders} seeded orders (3 items each, ${seedNote}); ` +
    `autocannon ${CONNECTIONS} connections, ${WARM_UP} s warm-up + ${SECONDS} s per scenario, ${TOKENS} member tokens; service: 1 process, pool ${POOL_SIZE}; pgbench ${POOL_SIZE} clients`, '')
  out.push('CPU columns: µs of CPU per request (per transaction for pgbench, per row for the export) over the measured window, read from `/proc/<pid>/stat` ' +
    '(utime + stime, all threads). "server": the process answering (the service, or the bare or floor server); "PostgreSQL": the backends serving its connections ' +
    '(found by `application_name` in `pg_stat_activity`; shared PostgreSQL processes such as the WAL writer are not counted); "generator": autocannon, in the bench process; ' +
    '"× bare": the server\'s CPU per request over the bare server\'s for the same requests in this run.', '')
  out.push(`At rest (${IDLE_SECONDS} s after log-in, no load), the service used ${rest.server.toFixed(0)} µs of CPU per second and its PostgreSQL backends ` +
    `${rest.pg?.toFixed(0)} µs per second (${rest.backends} backends): its background jobs, included in every scenario's figures.`, '')
  out.push('| scenario | req/s | p50 ms | p99 ms | p99.9 ms | errors | peak RSS MB | server CPU µs | PostgreSQL CPU µs | generator CPU µs | × bare | of ceiling | note |')
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const row of rows) {
    const times = row.bareUs && row.cpu ? `${(row.cpu.server / row.bareUs).toFixed(2)}` : ''
    const ofCeiling = row.ratio === undefined ? '' : `${(row.ratio * 100).toFixed(1)}% of ${row.ceiling}`
    const c = (n: number | undefined) => f(n, n !== undefined && n < 10 ? 2 : 0) // the export's µs per row are small
    out.push(`| ${row.scenario} | ${f(row.rps)} | ${f(row.p50)} | ${f(row.p99)} | ${f(row.p999)} | ${row.errors ?? '—'} | ${f(row.rssMb)} | ` +
      `${c(row.cpu?.server)} | ${c(row.cpu?.pg)} | ${c(row.cpu?.generator)} | ${times} | ${ofCeiling} | ${row.note ?? ''} |`)
  }
  out.push('', '| startup (spawn → first 200 on /api/v1/health) | ms |', '|---|---:|')
  out.push(`| PostgreSQL, empty database (runs migrations) | ${emptyStartupMs.toFixed(0)} |`)
  out.push(`| PostgreSQL, seeded (${SIZES.orders} orders) | ${seededStartupMs.toFixed(0)} |`)
  out.push(`| PGlite (DATA_DIR=memory) | ${pglite.startupMs.toFixed(0)} |`)
  out.push('', '| target | result | measured |', '|---|---|---|')
  for (const target of targets) out.push(`| ${target.name} | ${target.pass ? 'PASS' : 'FAIL'} | ${target.detail} |`)
  out.push('', 'Scan nodes (EXPLAIN of the statements the service sends):', ...plans)
  for (const list of ADMIN_LISTS) {
    const plan = adminPlans.get(list.key)!
    out.push(`- admin list${list.search ? ` ${list.search}` : ', unfiltered'}: ${plan.custom.join('; ')}` +
      (plan.generic.join('; ') === plan.custom.join('; ') ? ' (the same as a generic plan)' : `; as a generic plan: ${plan.generic.join('; ')}`))
  }
  out.push('')
  for (const list of ADMIN_LISTS) {
    const plan = adminPlans.get(list.key)!
    out.push(`EXPLAIN (ANALYZE, BUFFERS) of the admin list${list.search ? ` ${list.search}` : ', unfiltered'}, custom plan:`, '', '```', plan.customText, '```', '')
    if (plan.genericText !== undefined) out.push('… and as a generic plan (plan_cache_mode = force_generic_plan):', '', '```', plan.genericText, '```', '')
  }
  console.log(out.join('\n'))
}

const watchdog = setTimeout(() => {
  log('watchdog: the run took too long; cleaning up')
  Promise.all([...children].map(stop)).then(() => dropScratch?.()).finally(() => process.exit(2))
}, (profiled ? 900 : quick ? 170 : 1800) * 1000)
watchdog.unref()

let code = 0
try {
  await main()
} catch (error) {
  console.error(error)
  code = 1
} finally {
  await Promise.all([...children].map(stop))
  await monitor?.end().catch(() => {})
  try { await dropScratch?.() } catch (error) { console.error('could not drop the scratch database:', error); code = 1 }
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
}
process.exit(code)
