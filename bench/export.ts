/**
 * Export benchmark: seeds ORDERS orders (default 200,000), streams GET /api/v1/admin/orders/export
 * RUNS times (default 1) to a client in a child process, over a real socket, and prints rows/s, CPU
 * per row and how far the service's resident memory grew while exporting. Fails (exit 1) if a row
 * is missing or memory grew by MAX_GROWTH_MB (default 50) or more.
 *
 * The client is a process of its own so that the memory and CPU measured are the service's: its
 * socket reads would otherwise count as the service's buffers. CPU per row, from /proc: "service"
 * is this process; "PostgreSQL" is the service's backends (application_name order-service) on
 * the scratch database (PostgreSQL only). On a shared machine these say more than the rate.
 *
 *   npm run bench:export                                   # embedded PGlite, in memory
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:export
 *                                                          # a scratch database on that server, dropped after
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { cpuOf } from './proc.js'

const ORDERS = Number(process.env.ORDERS ?? 200_000)
const MAX_GROWTH_MB = Number(process.env.MAX_GROWTH_MB ?? 50)
const RUNS = Number(process.env.RUNS ?? 1)
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password' }
const MB = 1024 * 1024

/**
 * The CPU µs that the service's backends on `database` use from now until the returned function is
 * called, parallel workers included: found every 100 ms, one that starts meanwhile counts from
 * zero, and one that exits counts up to its last reading (so up to 100 ms of it is lost).
 */
async function backendCpu (monitor: pg.Client, database: string): Promise<() => Promise<number>> {
  const seen = new Map<number, { from: number, last: number }>()
  const discover = async (first: boolean) => {
    const { rows } = await monitor.query<{ pid: number }>(
      "select pid from pg_stat_activity where datname = $1 and application_name = 'order-service'", [database])
    for (const { pid } of rows) {
      const now = cpuOf(pid)
      if (now === undefined) continue
      const entry = seen.get(pid)
      if (entry) entry.last = now
      else seen.set(pid, { from: first ? now : 0, last: now })
    }
  }
  await discover(true)
  let discovering: Promise<void> | undefined
  const timer = setInterval(() => { discovering ??= discover(false).catch(() => {}).finally(() => { discovering = undefined }) }, 100)
  return async () => {
    clearInterval(timer)
    await discovering
    await discover(false)
    let us = 0
    for (const entry of seen.values()) us += entry.last - entry.from
    return us
  }
}

/**
 * The client, run with `node -e`: GETs argv[1] with argv[2] as Authorization, counts the lines and
 * bytes, and prints them with the status and the seconds from request to last byte, as JSON.
 */
const CLIENT = `
const http = require('node:http')
const started = performance.now()
http.get(process.argv[1], { headers: { authorization: process.argv[2] } }, (res) => {
  let lines = 0
  let bytes = 0
  res.on('data', (chunk) => {
    bytes += chunk.length
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
  })
  res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, lines, bytes, seconds: (performance.now() - started) / 1000 })))
}).on('error', (error) => { console.error(error); process.exit(1) })
`

/** Streams the export once through a client process. */
function exportOnce (url: string, token: string): Promise<{ status: number, lines: number, bytes: number, seconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, url, `Bearer ${token}`], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (data: Buffer) => { out += data })
    child.on('error', reject)
    child.on('exit', code => code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the export client exited with ${code}`)))
  })
}

async function scratchDatabase (serverUrl: string): Promise<{ url: string, name: string, drop: () => Promise<void> }> {
  const name = `order_bench_${randomBytes(4).toString('hex')}`
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try { await client.query(statement) } finally { await client.end() }
  }
  await run(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), name, drop: () => run(`drop database if exists ${name} with (force)`) }
}

const serverUrl = process.env.DATABASE_URL
const scratch = serverUrl ? await scratchDatabase(serverUrl) : undefined
const config = loadConfig({
  DATA_DIR: 'memory',
  LOG_LEVEL: 'warn',
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  ...(scratch ? { DATABASE_URL: scratch.url } : {}),
})
const app = await buildApp(config, { logger: false })

try {
  const seeding = performance.now()
  const customer = await app.db.insertInto('members')
    .values({ email: 'bench-customer@example.com', password_hash: 'x', name: 'Bench Customer' })
    .returning('id').executeTakeFirstOrThrow()
  await sql`
    insert into orders (customer_id, status, total_amount, currency, item_count, shipping_address, memo, created_at, updated_at)
    select ${customer.id}, (array['PLACED','CONFIRMED','DELIVERED','CANCELLED'])[1 + g % 4], 100 + g % 10000, 'USD', 1 + g % 5,
           g || ' Main Street, Springfield', case when g % 7 = 0 then 'Leave at the door, "please"' end,
           now() - g * interval '1 second', now() - g * interval '1 second'
    from generate_series(1, ${ORDERS}) g`.execute(app.db)
  await sql`analyze`.execute(app.db) // the plan a database with statistics gets, from the first run on
  console.log(`seeded ${ORDERS} orders in ${((performance.now() - seeding) / 1000).toFixed(1)} s (${scratch ? 'PostgreSQL' : 'PGlite'})`)

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const login = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN),
  })
  const { data } = await login.json() as { data: { accessToken: string } }

  const monitor = scratch ? new pg.Client({ connectionString: serverUrl }) : undefined
  await monitor?.connect()
  const rates: number[] = []
  try {
    for (let run = 1; run <= RUNS; run++) {
      global.gc?.()
      await new Promise(resolve => setTimeout(resolve, 200))
      const before = process.memoryUsage()
      const baseline = before.rss
      let peak = baseline
      let peakHeap = before.heapTotal
      let peakBuffers = before.arrayBuffers
      const sample = () => {
        const now = process.memoryUsage()
        peak = Math.max(peak, now.rss)
        peakHeap = Math.max(peakHeap, now.heapTotal)
        peakBuffers = Math.max(peakBuffers, now.arrayBuffers)
      }
      const sampler = setInterval(sample, 20)
      const pgCpu = monitor && scratch ? await backendCpu(monitor, scratch.name) : undefined
      const ownCpu = process.cpuUsage()

      const { status, lines, bytes, seconds } = await exportOnce(`http://127.0.0.1:${port}/api/v1/admin/orders/export`, data.accessToken)
      if (status !== 200) throw new Error(`export answered ${status}`)
      const own = process.cpuUsage(ownCpu)
      const pgUs = await pgCpu?.()
      clearInterval(sampler)
      sample()

      const rows = lines - 1 // the header line
      const growth = (peak - baseline) / MB
      const perRow = (us: number) => (us / Math.max(rows, 1)).toFixed(2)
      rates.push(rows / seconds)
      console.log(`run ${run}: exported ${rows} rows (${(bytes / MB).toFixed(1)} MB of CSV) in ${seconds.toFixed(2)} s: ${Math.round(rows / seconds)} rows/s; ` +
        `CPU per row: service ${perRow(own.user + own.system)} µs${pgUs !== undefined ? `, PostgreSQL ${perRow(pgUs)} µs` : ''}`)
      console.log(`RSS before ${(baseline / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB, growth ${growth.toFixed(1)} MB (limit ${MAX_GROWTH_MB} MB); ` +
        `V8 heap ${(before.heapTotal / MB).toFixed(0)} → peak ${(peakHeap / MB).toFixed(0)} MB, buffers ${(before.arrayBuffers / MB).toFixed(0)} → peak ${(peakBuffers / MB).toFixed(0)} MB`)
      if (rows !== ORDERS) throw new Error(`expected ${ORDERS} rows, got ${rows}`)
      if (growth >= MAX_GROWTH_MB) throw new Error(`memory grew by ${growth.toFixed(1)} MB`)
    }
  } finally {
    await monitor?.end()
  }
  if (RUNS > 1) console.log(`median of ${RUNS} runs: ${Math.round([...rates].sort((a, b) => a - b)[Math.floor(RUNS / 2)]!)} rows/s`)
} finally {
  await app.close()
  await scratch?.drop()
}
