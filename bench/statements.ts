/**
 * The service's own SQL for the by-id read and the order-creation transaction, taken from the
 * service's code rather than written out by hand: the repository functions run against a Kysely
 * instance whose driver executes nothing, and every statement they compile is kept. pgbench
 * (bench/ceilings.ts) and the floor server (bench/floor-server.ts) run exactly these texts: the
 * by-id read as the service compiles it now, the create as it was on 2026-11-24
 * (create-2026-11-24.json, from git history: the baseline issue 22 measures the service's create
 * against), and the create as the service sends it now, in one statement.
 *
 * Each parameter the service would send is either a *slot* (it varies per request: a member, a key,
 * a product, a quantity…), found by the distinctive value the capture passed in for it, or a
 * constant (`'POST'`, the currency, the reservation TTL…), kept as captured.
 */
import { readFileSync } from 'node:fs'
import {
  DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type CompiledQuery,
} from 'kysely'
import type { Database } from '../src/db/schema.js'
import { findOrder, listOrders, pageOrders, placeOrderInOneStatement } from '../src/orders/repository.js'
import type { AdminOrderSearchQuery } from '../src/orders/schemas.js'
import { pageAllOrders } from '../src/orders/service.js'

/** What varies between two creates or two reads; each slot is a parameter of some statement. */
export type Slot =
  | 'member' | 'key' | 'fingerprint' | 'ids'
  | 'product0' | 'product1' | 'product2' | 'name0' | 'name1' | 'name2'
  | 'quantity0' | 'quantity1' | 'quantity2' | 'price0' | 'price1' | 'price2'
  | 'line0' | 'line1' | 'line2' | 'total' | 'body' | 'location'
  | 'productIds' | 'quantities'

/** A parameter: a slot filled per request, or the value the service sends every time. */
export type Param = { slot: Slot } | { value: unknown }

export interface Statement { text: string, params: Param[] }

// Distinctive values the capture passes in, one per slot (numbers far from any seeded id or price).
const SENTINELS: Record<Slot, unknown> = {
  member: 987_650_001,
  key: 'sentinel-key',
  fingerprint: 'sentinel-fingerprint',
  ids: ['987650002'],
  product0: 987_650_010,
  product1: 987_650_011,
  product2: 987_650_012,
  name0: 'sentinel-name-0',
  name1: 'sentinel-name-1',
  name2: 'sentinel-name-2',
  quantity0: 987_650_020,
  quantity1: 987_650_021,
  quantity2: 987_650_022,
  price0: 987_650_030,
  price1: 987_650_031,
  price2: 987_650_032,
  line0: 987_650_040,
  line1: 987_650_041,
  line2: 987_650_042,
  total: 987_650_050,
  body: '"sentinel-body"',
  location: 'sentinel-location',
  productIds: [987_650_060, 987_650_061, 987_650_062],
  quantities: [987_650_070, 987_650_071, 987_650_072],
}
const SLOT_OF = new Map(Object.entries(SENTINELS).map(([slot, value]) => [JSON.stringify(value), slot as Slot]))

function capture (): { db: Kysely<Database>, taken: CompiledQuery[] } {
  const taken: CompiledQuery[] = []
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: db => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: event => { taken.push(event.query) },
  })
  return { db, taken }
}

const toStatement = (query: CompiledQuery): Statement => ({
  text: query.sql,
  params: query.parameters.map(value => {
    const slot = SLOT_OF.get(JSON.stringify(value))
    return slot ? { slot } : { value }
  }),
})

/** The create's four parameterised statements, in order; `BEGIN` before and `COMMIT` after make six. */
export interface CreateStatements {
  claimKey: Statement
  lockProducts: Statement
  insertOrder: Statement
  storeResponse: Statement
}

/** The values to send for `statement`, with each slot filled from `fill`. */
export function bind (statement: Statement, fill: Partial<Record<Slot, unknown>>): unknown[] {
  return statement.params.map(param => {
    if ('value' in param) return param.value
    if (!(param.slot in fill)) throw new Error(`no value for slot ${param.slot}`)
    return fill[param.slot]
  })
}

/** A constant as an SQL literal, for pgbench. */
function literal (value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'number' || typeof value === 'bigint') return String(value)
  if (typeof value === 'boolean') return value ? 'true' : 'false'
  return `'${String(value).replaceAll("'", "''")}'`
}

/**
 * `statement` as pgbench runs it: each slot replaced by the pgbench expression `fill` gives it (a
 * `:variable`, or an SQL literal for strings, which pgbench cannot hold in variables), and each
 * constant by its literal.
 */
export function pgbenchText (statement: Statement, fill: Partial<Record<Slot, string>>): string {
  // pgbench takes the statement as one line: a `--` comment would swallow the rest of it.
  if (statement.text.includes('--')) throw new Error('the statement holds an SQL line comment, which pgbench cannot run on one line')
  return statement.text.replace(/\$(\d+)/g, (_, n: string) => {
    const param = statement.params[Number(n) - 1]!
    if ('value' in param) return literal(param.value)
    const expression = fill[param.slot]
    if (expression === undefined) throw new Error(`no pgbench expression for slot ${param.slot}`)
    return expression
  })
    // pgbench reads `:name` as its variable even inside a string literal (to_char's 'HH24:MI:SS'),
    // so such a colon is written as chr(58): the same string, built when the statement runs.
    .replace(/'(?:[^']|'')*'/g, literal => literal.replace(/:(?=[A-Za-z_])/g, "' || chr(58) || '"))
    .replace(/\s*\n\s*/g, ' ').trim() + ';'
}

/**
 * The create as the service ran it on 2026-11-24 (issue 22's "six separate statements of today"),
 * captured from the code of that day (its four statements, compiled as below) and kept in create-2026-11-24.json:
 * pgbench and the floor server run these, so that the service's create can be measured against
 * the same baseline while its own statements change.
 */
export function createOf20261124 (): CreateStatements {
  return JSON.parse(readFileSync(new URL('./create-2026-11-24.json', import.meta.url), 'utf8')) as CreateStatements
}

/**
 * The create as the service runs it now: one statement (`placeOrderInOneStatement`) with an
 * idempotency key, 3 items, the customer ordering for themselves, the default reservation TTL.
 */
export async function createStatementNow (): Promise<Statement> {
  const { db, taken } = capture()
  const member = SENTINELS.member as number
  const productIds = SENTINELS.productIds as number[]
  const quantities = SENTINELS.quantities as number[]
  await placeOrderInOneStatement(db, {
    scope: { memberId: member, method: 'POST', path: '/api/v1/orders', key: SENTINELS.key as string },
    fingerprint: SENTINELS.fingerprint as string,
    ttlMs: 24 * 60 * 60 * 1000,
  }, {
    customerId: member,
    checkCustomer: false,
    items: productIds.map((productId, k) => ({ productId, quantity: quantities[k]! })),
    currency: 'USD',
    shippingAddress: null,
    memo: null,
    actor: { id: member, role: 'USER' },
    reservationMs: 60 * 60 * 1000,
    // As the benchmarked service runs it (MAX_UNPAID_ORDERS=0, bench/run.ts): its members place
    // far more unpaid orders than the limit allows.
    unpaidLimit: 0,
    allowedActions: ['confirm', 'cancel', 'delete'],
    answerAs: { status: 201, location: '/api/v1/orders/{id}' },
  })
  await db.destroy()
  if (taken.length !== 1) throw new Error(`expected 1 create statement, captured ${taken.length}`)
  return toStatement(taken[0]!)
}

/** The by-id read as the service runs it now (`findOrder`). */
export async function orderByIdStatement (): Promise<Statement> {
  const { db, taken } = capture()
  await findOrder(db, (SENTINELS.ids as string[])[0]!)
  await db.destroy()
  if (taken.length !== 1) throw new Error(`expected 1 read statement, captured ${taken.length}`)
  return toStatement(taken[0]!)
}

/** A statement with its values, as the service sends it. */
export interface BoundStatement { label: string, text: string, values: readonly unknown[] }

/**
 * The list and search statements as the service sends them (src/orders/repository.ts `listOrders`,
 * `pageOrders`), for EXPLAIN: the owner's first page of 20 (the statement that first pages asked
 * for together share, here for one customer) and a cursor page of 10, and the admin search's page
 * with its count (one status, a one-hour window, newest first).
 */
export async function listStatements (args: { customerId: number, cursor: { createdAt: Date, id: number }, status: 'PLACED' | 'CONFIRMED' | 'DELIVERED' | 'CANCELLED', from: Date, to: Date }): Promise<BoundStatement[]> {
  const { db, taken } = capture()
  await listOrders(db, { customerId: args.customerId, limit: 21, offset: 0 })
  await listOrders(db, { customerId: args.customerId, after: args.cursor, limit: 11, offset: 0 })
  await pageOrders(db, {
    statuses: [args.status],
    createdFrom: args.from,
    createdTo: args.to,
    includeDeleted: true,
    sort: { column: 'created_at', direction: 'desc' },
    offset: 0,
    limit: 20,
  })
  await db.destroy()
  const labels = ['owner list, first pages of 20 (read together)', 'owner list, cursor page of 10', 'admin search, page of 20 with its count']
  if (taken.length !== labels.length) throw new Error(`expected ${labels.length} list statements, captured ${taken.length}`)
  return taken.map((query, i) => ({ label: labels[i]!, text: query.sql, values: query.parameters }))
}

/**
 * The admin list's statement (`GET /api/v1/admin/orders`) for each of these query strings, as the
 * service sends it: the route's parsed query handed to `pageAllOrders` (src/orders/service.ts), the
 * function the route calls, so the filter parsing, the default sort and the page window are the
 * service's own. One statement per list: the count and the page joined to it.
 */
export async function adminListStatements (queries: Array<{ label: string, query: Partial<AdminOrderSearchQuery> }>): Promise<BoundStatement[]> {
  const { db, taken } = capture()
  for (const { query } of queries) await pageAllOrders(db, query)
  await db.destroy()
  if (taken.length !== queries.length) throw new Error(`expected ${queries.length} admin list statements, captured ${taken.length}`)
  return taken.map((query, i) => ({ label: queries[i]!.label, text: query.sql, values: query.parameters }))
}
