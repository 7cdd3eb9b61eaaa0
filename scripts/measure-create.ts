/**
 * CPU per create: the service's and PostgreSQL's, for POST /api/v1/orders with an idempotency key.
 *
 *   MEASURE_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node --import tsx scripts/measure-create.ts
 *
 * Starts the service (one process, `src/server.ts` through tsx) on a scratch database, seeds an admin,
 * a member and PRODUCTS products (default 10), warms up, then places CREATES orders (two items each, a fresh key each)
 * from CONCURRENCY connections, ROUNDS times. Around each round it reads utime + stime from
 * /proc/<pid>/stat for the service process and for the database's backends serving it (by
 * `application_name`), and prints CPU per create. The machine may be shared and noisy: compare CPU
 * per create, not rates. PostgreSQL must run on this machine (its backends' /proc entries are read).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { Agent, request } from 'undici'

const SERVER_URL = process.env.MEASURE_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CREATES = Number(process.env.CREATES ?? 3000)
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16)
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const WARM_UP = Number(process.env.WARM_UP ?? 500)
const PRODUCTS = Number(process.env.PRODUCTS ?? 10)
const ADMIN = { email: 'measure-admin@example.com', password: 'measure-admin-password' }

/** Clock ticks per second for /proc/<pid>/stat (sysconf(_SC_CLK_TCK), 100 on Linux). */
const TICKS = 100

async function cpuTicks (pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces) start at ") ": utime is the 14th field, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0 // the process has ended
  }
}

async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    }).on('error', reject)
  })
}

async function main (): Promise<void> {
  const name = `measure_create_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      WORKERS: '1',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      AUTH_RATE_LIMIT: '1000000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  const agent = new Agent({ connections: CONCURRENCY, pipelining: 1 })
  try {
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await request(`${base}${path}`, {
        method,
        dispatcher: agent,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.body.text()
      return { status: res.statusCode, json: text ? JSON.parse(text) : undefined }
    }
    for (let i = 0; ; i++) {
      try {
        if ((await call('GET', '/actuator/health/readiness')).status === 200) break
      } catch {}
      if (i > 600) throw new Error('the service did not start')
      await sleep(100)
    }
    const login = async (email: string, password: string) =>
      `Bearer ${(await call('POST', '/api/v1/auth/login', { email, password })).json.data.accessToken as string}`
    const adminAuth = await login(ADMIN.email, ADMIN.password)
    const email = `measure-${randomBytes(4).toString('hex')}@example.com`
    const registered = await call('POST', '/api/v1/members', { email, password: 'correct horse battery', name: 'measure' })
    if (registered.status !== 201) throw new Error(`register: ${JSON.stringify(registered.json)}`)
    const memberId = registered.json.data.memberId ?? registered.json.data.id
    const memberAuth = await login(email, 'correct horse battery')
    const products: number[] = []
    for (let i = 0; i < PRODUCTS; i++) {
      const res = await call('POST', '/api/v1/admin/products', { name: `Product ${i}`, price: 100 + i, stockQuantity: 1_000_000 }, { authorization: adminAuth })
      if (res.status !== 201) throw new Error(`product: ${JSON.stringify(res.json)}`)
      products.push(res.json.data.productId)
    }

    let sequence = 0
    const create = async () => {
      const n = sequence++
      const items = [
        { productId: products[n % products.length]!, quantity: 1 },
        { productId: products[(n + 1) % products.length]!, quantity: 2 },
      ]
      const res = await call('POST', '/api/v1/orders', { customerId: memberId, items }, {
        authorization: memberAuth, 'idempotency-key': `measure-${n}-${randomBytes(6).toString('hex')}`,
      })
      if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.json)}`)
    }
    const run = async (count: number) => {
      let left = count
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (left > 0) {
          left--
          await create()
        }
      }))
    }
    const backends = async () => (await admin.query<{ pid: number }>(
      'select pid from pg_stat_activity where datname = $1 and application_name = $2', [name, 'order-service'])).rows.map(r => r.pid)

    await run(WARM_UP)
    const results: Array<{ service: number, postgres: number, seconds: number }> = []
    for (let round = 0; round < ROUNDS; round++) {
      const before = new Map<number, number>()
      for (const pid of await backends()) before.set(pid, await cpuTicks(pid))
      const serviceBefore = await cpuTicks(child.pid!)
      const started = process.hrtime.bigint()
      await run(CREATES)
      const seconds = Number(process.hrtime.bigint() - started) / 1e9
      const serviceAfter = await cpuTicks(child.pid!)
      let postgres = 0
      for (const pid of new Set([...before.keys(), ...await backends()])) postgres += (await cpuTicks(pid)) - (before.get(pid) ?? 0)
      const perCreate = (ticks: number) => (ticks / TICKS) * 1e6 / CREATES // µs
      results.push({ service: perCreate(serviceAfter - serviceBefore), postgres: perCreate(postgres), seconds })
      console.log(`round ${round + 1}: ${CREATES} creates in ${seconds.toFixed(1)} s; CPU per create: service ${perCreate(serviceAfter - serviceBefore).toFixed(0)} µs, PostgreSQL backends ${perCreate(postgres).toFixed(0)} µs`)
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
    console.log(`median CPU per create: service ${median(results.map(r => r.service)).toFixed(0)} µs, PostgreSQL ${median(results.map(r => r.postgres)).toFixed(0)} µs`)
  } finally {
    child.kill('SIGTERM')
    await new Promise(resolve => child.once('exit', resolve))
    await agent.close()
    await admin.query(`drop database if exists ${name} with (force)`)
    await admin.end()
  }
}

await main()
