/**
 * The limits that bound the service, measured in the same run: a bare node:http server (the Node
 * ceiling, driven by the same autocannon settings) and PostgreSQL itself through pgbench running the
 * service's own statements (the primary-key read of an order with its items; the order-creation
 * transaction). Between the two, the floor server runs those statements from Node with nothing
 * around them.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pgbenchText, type CreateStatements, type Statement } from './statements.js'

export const PGBENCH = '/usr/bin/pgbench'
/** The `application_name` of pgbench's connections. */
export const PGBENCH_APP = 'order-bench-pgbench'
/** The `application_name` of the floor server's connections (bench/floor-server.ts). */
export const FLOOR_APP = 'order-bench-floor'

/**
 * Spawns one of the reference servers (`bare-server.ts`, `floor-server.ts`) on `port`, with `env`
 * added, and resolves once it listens.
 */
export async function startReferenceServer (name: 'bare-server' | 'floor-server', port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const script = fileURLToPath(new URL(`./${name}.ts`, import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 15 s`)), 15_000)
    child.stdout!.once('data', () => { clearTimeout(timer); resolve() })
    child.once('exit', code => { clearTimeout(timer); reject(new Error(`${name} exited with ${code}`)) })
  })
  return child
}

export interface PgbenchResult { tps: number, latencyMs: number, failed: number, transactions: number }

/** The by-id read, for a random seeded order (one id per statement), as the service writes it. */
export function getByIdScript (orderById: Statement, orders: number): string {
  return `\\set id random(1, ${orders})
${pgbenchText(orderById, { ids: 'array[:id]' })}
`
}

/**
 * About the size of the stored response of a 3-item order (the order's detail as JSON). A space
 * follows each key's colon, or pgbench would read `:null` as a variable.
 */
const STORED_RESPONSE = JSON.stringify({
  orderId: 1,
  customerId: 1,
  status: 'PLACED',
  items: [1, 2, 3].map(p => ({ productId: p, productName: 'Bench product', quantity: 1, unitPrice: 100, lineTotal: 100 })),
  totalAmount: 300,
  currency: 'USD',
  shippingAddress: null,
  memo: null,
  paymentId: null,
  version: 1,
  createdAt: '2026-11-23T00:00:00.000Z',
  updatedAt: '2026-11-23T00:00:00.000Z',
  allowedActions: ['confirm', 'cancel', 'delete'],
}).replaceAll('":', '": ')

/**
 * The service's order-creation transaction with an idempotency key, statement for statement, as six
 * separate statements (src/idempotency/service.ts answerOnce around src/orders/service.ts
 * placeOrder, as of 2026-11-24: bench/statements.ts createOf20261124): BEGIN; claim a fresh key; lock 3 products in id
 * order; decrement the stock and insert the order, its 3 items, its history entry, its
 * `order.placed` event and the event's webhook deliveries in one statement; store the response
 * with the key; COMMIT. Strings that vary per request in the service (names, the stored body) are
 * literals here: pgbench variables hold numbers only.
 */
export function createScript (statements: CreateStatements, products: number, memberBase: number, members: number): string {
  const fill = {
    ...CALLER,
    product0: ':p1',
    product1: ':p2',
    product2: ':p3',
    name0: "'Bench product'",
    name1: "'Bench product'",
    name2: "'Bench product'",
    quantity0: '1',
    quantity1: '1',
    quantity2: '1',
    price0: '100',
    price1: '100',
    price2: '100',
    line0: '100',
    line1: '100',
    line2: '100',
    total: '300',
    body: `'${STORED_RESPONSE}'`,
    location: "'/api/v1/orders/1'",
  }
  return `${createVariables(products, memberBase, members)}BEGIN;
${pgbenchText(statements.claimKey, fill)}
${pgbenchText(statements.lockProducts, fill)}
${pgbenchText(statements.insertOrder, fill)}
${pgbenchText(statements.storeResponse, fill)}
COMMIT;
`
}

/** Who creates, under which key, in both create scripts: pgbench's variables (createVariables) and a constant fingerprint. */
const CALLER = { member: ':c', key: "'bench-' || :client_id || '-' || :k", fingerprint: "'fingerprint'" }

/**
 * pgbench's variables for a create: one product from each third of the catalogue (so the three
 * differ and are locked in id order), a seeded member, and a random key.
 */
function createVariables (products: number, memberBase: number, members: number): string {
  const third = Math.floor(products / 3)
  return `\\set p1 random(1, ${third})
\\set p2 random(${third + 1}, ${2 * third})
\\set p3 random(${2 * third + 1}, ${3 * third})
\\set c random(${memberBase}, ${memberBase + members - 1})
\\set k random(1, 1000000000000)
`
}

/**
 * The service's create as it runs now, one statement under autocommit (bench/statements.ts
 * createStatementNow), with the same variables as the six statements' script: 3 products, one of
 * each, for a seeded member, with a fresh key.
 */
export function oneStatementCreateScript (statement: Statement, products: number, memberBase: number, members: number): string {
  return createVariables(products, memberBase, members) + pgbenchText(statement, {
    ...CALLER,
    productIds: 'array[:p1, :p2, :p3]',
    quantities: 'array[1, 1, 1]',
  }) + '\n'
}

/**
 * Runs pgbench with one custom script for `seconds` against the database at `url`, as fast as it
 * can or at `rate` transactions per second. Its connections
 * carry `application_name` PGBENCH_APP, so that the bench can find the backends serving them and
 * read their CPU time.
 */
export async function runPgbench (url: string, script: string, opts: { clients: number, threads: number, seconds: number, rate?: number }): Promise<PgbenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'order-bench-pgbench-'))
  try {
    const file = join(dir, 'script.sql')
    await writeFile(file, script)
    const u = new URL(url)
    const args = [
      '-n', '-M', 'prepared', '-f', file,
      '-c', String(opts.clients), '-j', String(opts.threads), '-T', String(opts.seconds),
      // A target rate (transactions per second, spread as a Poisson process) instead of as fast as it can.
      ...(opts.rate ? ['-R', String(Math.round(opts.rate))] : []),
      '-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres'),
      decodeURIComponent(u.pathname.slice(1)),
    ]
    const env = { ...process.env, PGAPPNAME: PGBENCH_APP, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) }
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(PGBENCH, args, { env, timeout: (opts.seconds + 60) * 1000, maxBuffer: 16 * 1024 * 1024 }, (error, out, err) => {
        if (error) reject(new Error(`pgbench failed: ${error.message}\n${err}`))
        else resolve(out)
      })
    })
    const number = (pattern: RegExp) => Number(pattern.exec(stdout)?.[1] ?? NaN)
    return {
      tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
      latencyMs: number(/latency average = ([\d.]+) ms/),
      failed: number(/number of failed transactions: (\d+)/) || 0,
      transactions: number(/number of transactions actually processed: (\d+)/),
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
