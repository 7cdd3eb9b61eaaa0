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

export const PGBENCH = '/usr/bin/pgbench'

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

/**
 * The statements pgbench and the floor server (bench/floor-server.ts) run, written once with `$n`
 * parameters. pgbench's scripts put variables or literals in their place (`pgbenchText`).
 */
export const STATEMENTS = {
  /**
   * The service's detail query (src/orders/repository.ts findOrder). $1: the orders' ids, as an
   * array: the service reads the orders that requests ask for together in one statement.
   */
  orderById: `select o.*, coalesce((
  select json_agg(json_build_object(
    'productId', i.product_id, 'productName', i.product_name, 'quantity', i.quantity,
    'unitPrice', i.unit_price, 'lineTotal', i.line_total) order by i.position)
  from order_items i where i.order_id = o.id), '[]'::json) as items,
  (select p.status from payments p where p.id = o.payment_id) as payment_status
from orders o where o.id = any($1::bigint[])`,
  /** Claim a fresh idempotency key. $1 member, $2 key, $3 fingerprint. */
  claimKey: `insert into idempotency_keys (member_id, method, path, key, fingerprint, expires_at)
  values ($1, 'POST', '/api/v1/orders', $2, $3, now() + interval '1 day')
  on conflict (member_id, method, path, key) do update set fingerprint = excluded.fingerprint
  where idempotency_keys.expires_at <= now() returning key`,
  /** Lock the 3 products in id order. $1–$3 their ids. */
  lockProducts: 'select id, name, price, stock_quantity, status from products where id in ($1, $2, $3) order by id for update',
  /**
   * Decrement the stock and insert the order, its 3 items and its history entry, in one statement.
   * Item k (0–2) is $(6k+1)–$(6k+6): position, product id, name, quantity, unit price, line total;
   * $19 the member, $20 the total, $21 the shipping address.
   */
  insertOrder: `with v (position, product_id, product_name, quantity, unit_price, line_total) as (values
  ($1::smallint, $2::bigint, $3::text, $4::integer, $5::bigint, $6::bigint),
  ($7::smallint, $8::bigint, $9::text, $10::integer, $11::bigint, $12::bigint),
  ($13::smallint, $14::bigint, $15::text, $16::integer, $17::bigint, $18::bigint)),
stock as (
  update products p set stock_quantity = p.stock_quantity - v.quantity, updated_at = now()
  from v where p.id = v.product_id),
o as (
  insert into orders (customer_id, status, total_amount, currency, item_count, shipping_address, memo)
  values ($19, 'PLACED', $20, 'USD', 3, $21, null) returning *),
items as (
  insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
  select o.id, v.position, v.product_id, v.product_name, v.quantity, v.unit_price, v.line_total from o, v),
history as (
  insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role)
  select o.id, null, 'PLACED', 'create', $19, 'USER' from o)
select * from o`,
  /** Store the response with the key. $1 the body, $2 the location, $3 member, $4 key. */
  storeResponse: `update idempotency_keys set response_status = 201, response_body = $1, location = $2
  where member_id = $3 and method = 'POST' and path = '/api/v1/orders' and key = $4`,
} as const

/** A statement as pgbench runs it: `$n` replaced by `args[n - 1]` (a `:variable` or a literal). */
function pgbenchText (statement: string, args: readonly string[]): string {
  return statement.replace(/\$(\d+)/g, (_, n: string) => args[Number(n) - 1]!) + ';'
}

/** The by-id read, for a random seeded order (one id per statement). */
export function getByIdScript (orders: number): string {
  return `\\set id random(1, ${orders})
${pgbenchText(STATEMENTS.orderById, ['array[:id]'])}
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
  totalAmount: 300,
  currency: 'USD',
  shippingAddress: '1 Bench Street',
  memo: null,
  items: [1, 2, 3].map(p => ({ productId: p, productName: 'Bench product', quantity: 1, unitPrice: 100, lineTotal: 100 })),
  paymentId: null,
  version: 1,
  allowedActions: ['confirm', 'cancel'],
  createdAt: '2026-11-23T00:00:00.000Z',
  updatedAt: '2026-11-23T00:00:00.000Z',
}).replaceAll('":', '": ')

/**
 * The service's order-creation transaction with an idempotency key, statement for statement
 * (src/idempotency/service.ts runIdempotent around src/orders/service.ts placeOrder): claim a fresh
 * key; lock 3 products in id order; decrement stock and insert the order, its 3 items and its history
 * entry in one statement; store the response with the key; commit.
 */
export function createScript (products: number, memberBase: number, members: number): string {
  const third = Math.floor(products / 3)
  const key = "'bench-' || :client_id || '-' || :k"
  const item = (k: number) => [`${k}`, `:p${k + 1}`, "'Bench product'", '1', '100', '100']
  return `\\set p1 random(1, ${third})
\\set p2 random(${third + 1}, ${2 * third})
\\set p3 random(${2 * third + 1}, ${3 * third})
\\set c random(${memberBase}, ${memberBase + members - 1})
\\set k random(1, 1000000000000)
BEGIN;
${pgbenchText(STATEMENTS.claimKey, [':c', key, "'fingerprint'"])}
${pgbenchText(STATEMENTS.lockProducts, [':p1', ':p2', ':p3'])}
${pgbenchText(STATEMENTS.insertOrder, [...item(0), ...item(1), ...item(2), ':c', '300', "'1 Bench Street'"])}
${pgbenchText(STATEMENTS.storeResponse, [`'${STORED_RESPONSE}'`, "'/api/v1/orders/1'", ':c', key])}
COMMIT;
`
}

/** Runs pgbench with one custom script for `seconds` against the database at `url`. */
export async function runPgbench (url: string, script: string, opts: { clients: number, threads: number, seconds: number }): Promise<PgbenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'order-bench-pgbench-'))
  try {
    const file = join(dir, 'script.sql')
    await writeFile(file, script)
    const u = new URL(url)
    const args = [
      '-n', '-M', 'prepared', '-f', file,
      '-c', String(opts.clients), '-j', String(opts.threads), '-T', String(opts.seconds),
      '-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres'),
      decodeURIComponent(u.pathname.slice(1)),
    ]
    const env = { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) }
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
