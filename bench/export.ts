/**
 * Export benchmark: seeds ORDERS orders (default 200,000), streams GET /api/v1/admin/orders/export
 * over a real socket, and prints rows/s and how far the process's resident memory grew while
 * exporting. Fails (exit 1) if a row is missing or memory grew by MAX_GROWTH_MB (default 50) or more.
 *
 *   npm run bench:export                                   # embedded PGlite, in memory
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:export
 *                                                          # a scratch database on that server, dropped after
 */
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'

const ORDERS = Number(process.env.ORDERS ?? 200_000)
const MAX_GROWTH_MB = Number(process.env.MAX_GROWTH_MB ?? 50)
const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password' }
const MB = 1024 * 1024

async function scratchDatabase (serverUrl: string): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `order_bench_${randomBytes(4).toString('hex')}`
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try { await client.query(statement) } finally { await client.end() }
  }
  await run(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) }
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
  console.log(`seeded ${ORDERS} orders in ${((performance.now() - seeding) / 1000).toFixed(1)} s (${scratch ? 'PostgreSQL' : 'PGlite'})`)

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const login = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN),
  })
  const { data } = await login.json() as { data: { accessToken: string } }

  global.gc?.()
  await new Promise(resolve => setTimeout(resolve, 200))
  const baseline = process.memoryUsage().rss
  let peak = baseline
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 20)

  const started = performance.now()
  const { lines, bytes } = await new Promise<{ lines: number, bytes: number }>((resolve, reject) => {
    http.get(`http://127.0.0.1:${port}/api/v1/admin/orders/export`, { headers: { authorization: `Bearer ${data.accessToken}` } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`))
      let lines = 0
      let bytes = 0
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
      })
      res.on('end', () => resolve({ lines, bytes }))
      res.on('error', reject)
    }).on('error', reject)
  })
  const seconds = (performance.now() - started) / 1000
  clearInterval(sampler)
  peak = Math.max(peak, process.memoryUsage().rss)

  const rows = lines - 1 // the header line
  const growth = (peak - baseline) / MB
  console.log(`exported ${rows} rows (${(bytes / MB).toFixed(1)} MB of CSV) in ${seconds.toFixed(2)} s: ${Math.round(rows / seconds)} rows/s`)
  console.log(`RSS before ${(baseline / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB, growth ${growth.toFixed(1)} MB (limit ${MAX_GROWTH_MB} MB)`)
  if (rows !== ORDERS) throw new Error(`expected ${ORDERS} rows, got ${rows}`)
  if (growth >= MAX_GROWTH_MB) throw new Error(`memory grew by ${growth.toFixed(1)} MB`)
} finally {
  await app.close()
  await scratch?.drop()
}
