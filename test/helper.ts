import { randomBytes } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { after, afterEach, before, beforeEach, describe } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { Migrator, sql, type Kysely } from 'kysely'
import { buildApp, type BuildOptions } from '../src/app.js'
import { loadConfig, type Config } from '../src/config.js'
import { openDatabase, type DatabaseHandle, type OpenOptions } from '../src/db/database.js'
import { bootstrapAdmin } from '../src/members/service.js'
import { migrations } from '../src/migrations/index.js'
import { undocumentedAnswer } from '../src/ops/openapi.js'
import type { OrderDetail, OrderSummary } from '../src/orders/schemas.js'

export const ADMIN = { email: 'admin@example.com', password: 'admin-password' }

/** Where storage tests run: embedded PGlite always, and PostgreSQL when TEST_DATABASE_URL is set. */
export type Backend = 'pglite' | 'postgres'
export const BACKENDS: Backend[] = process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']

export function testConfig (env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: 'memory',
    LOG_LEVEL: 'silent',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    // Tests register and log in far more often than a person would; the limit has its own tests.
    AUTH_RATE_LIMIT: '1000000',
    ...env,
  })
}

/**
 * A fresh database for one test file: an in-memory PGlite, or a scratch database on the
 * TEST_DATABASE_URL server that is dropped when the handle closes.
 */
export async function createTestDatabase (backend: Backend, options: OpenOptions = {}): Promise<DatabaseHandle & { url?: string }> {
  if (backend === 'pglite') return openDatabase({ dataDir: 'memory', databaseUrl: undefined, databasePoolSize: 1, databasePreparedStatements: true }, options)
  const serverUrl = process.env.TEST_DATABASE_URL!
  const name = `order_test_${process.pid}_${randomBytes(4).toString('hex')}`
  const adminClient = new pg.Client({ connectionString: serverUrl })
  await adminClient.connect()
  await adminClient.query(`create database ${name}`)
  await adminClient.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const handle = await openDatabase({ databaseUrl: url.toString(), databasePoolSize: 30, databasePreparedStatements: true, dataDir: 'memory' }, options)
  return {
    ...handle,
    url: url.toString(),
    async close () {
      await handle.close()
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

const TABLES = [
  'webhook_deliveries', 'webhook_endpoints', 'events', 'idempotency_keys', 'payment_refunds', 'payments', 'order_history', 'order_items', 'orders', 'products', 'categories',
  'refresh_tokens', 'sessions', 'member_tokens', 'api_keys', 'oidc_flows', 'oidc_login_codes',
  'fulfillment_items', 'fulfillments', 'return_items', 'returns', 'order_edits',
]

/** Empties every table but keeps the admin (and the signing key), so tests start from the same state. */
export async function resetDatabase (app: FastifyInstance): Promise<void> {
  // Mail leaves after the response, so a previous test's verification token may be written between
  // the truncate and the delete of its member: then both are simply done again. Likewise when the
  // webhook dispatcher, woken by the previous test's writes, claims while the truncate runs: its
  // claim locks endpoints and deliveries in the other order, and PostgreSQL ends one as a deadlock.
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`truncate ${sql.join(TABLES.map(t => sql.table(t)))} restart identity cascade`.execute(app.db)
      // Member ids keep growing (no restart): an id suspended in one test never names a member of the next.
      await app.db.deleteFrom('members').where(sql`lower(email)`, '<>', ADMIN.email).execute()
      break
    } catch (error) {
      const code = (error as { code?: string }).code
      if ((code !== '23503' && code !== '40P01') || attempt === 5) throw error
    }
  }
  await bootstrapAdmin(app.db, app.config)
}

export interface Member {
  id: number
  email: string
  token: string
  refreshToken: string
  headers: { authorization: string }
}

/** The test's view of the running service: the app plus shortcuts that go through real HTTP. */
export class Api {
  constructor (readonly app: FastifyInstance) {}

  inject (options: InjectOptions): Promise<LightMyRequestResponse> {
    return this.app.inject(options)
  }

  /** GET `path` with the query properly encoded (`+` in offsets becomes %2B), as `caller` or anonymously. */
  get (path: string, query: Record<string, string | number> = {}, caller?: { headers: Record<string, string> }): Promise<LightMyRequestResponse> {
    const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
    return this.inject({ url: search ? `${path}?${search}` : path, ...(caller ? { headers: caller.headers } : {}) })
  }

  async login (email: string, password: string): Promise<Member> {
    const res = await this.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
    assert.equal(res.statusCode, 201, res.body)
    const token = res.json().data.accessToken as string
    const me = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
    return { id: Number(me.sub), email, token, refreshToken: res.json().data.refreshToken, headers: { authorization: `Bearer ${token}` } }
  }

  admin (): Promise<Member> {
    return this.login(ADMIN.email, ADMIN.password)
  }

  async member (name = 'member'): Promise<Member> {
    const email = `${name}-${randomBytes(4).toString('hex')}@example.com`
    const res = await this.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name } })
    assert.equal(res.statusCode, 201, res.body)
    return this.login(email, 'correct horse')
  }

  async product (admin: Member, fields: { price?: number, stockQuantity?: number, status?: 'ACTIVE' | 'INACTIVE', name?: string } = {}) {
    const res = await this.inject({
      method: 'POST',
      url: '/api/v1/admin/products',
      headers: admin.headers,
      payload: { name: fields.name ?? 'Coffee beans', price: fields.price ?? 1250, stockQuantity: fields.stockQuantity ?? 100, ...(fields.status ? { status: fields.status } : {}) },
    })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data as { productId: number, price: number, stockQuantity: number, name: string }
  }

  async stockOf (productId: number): Promise<number> {
    const row = await this.app.db.selectFrom('products').select('stock_quantity').where('id', '=', productId).executeTakeFirstOrThrow()
    return row.stock_quantity
  }

  /** Places an order for `member` and returns its data. */
  async order (member: Member, items: Array<{ productId: number, quantity: number }>, extra: Record<string, unknown> = {}) {
    const res = await this.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: member.headers,
      payload: { customerId: member.id, items, ...extra },
    })
    assert.equal(res.statusCode, 201, res.body)
    return res.json().data as { orderId: number, status: string, totalAmount: number, version: number }
  }
}

/**
 * Declares a suite once per backend. Each gets its own database and app, built once for the file;
 * the database is emptied before every test.
 */
export function describeEachBackend (
  title: string,
  suite: (ctx: { readonly api: Api, readonly backend: Backend }) => void,
  options: { env?: Record<string, string>, build?: Omit<BuildOptions, 'database'> } = {}
): void {
  for (const backend of BACKENDS) {
    describe(`${title} [${backend}]`, () => {
      const undocumented: string[] = []
      let database: DatabaseHandle
      let api: Api
      before(async () => {
        database = await createTestDatabase(backend)
        api = new Api(await buildApp(testConfig(options.env), { logger: false, ...options.build, database }))
        // Every answer must be one the OpenAPI document lists for its operation: status and error code.
        api.app.addHook('onSend', async (request, reply, payload) => {
          const missing = undocumentedAnswer(request, reply.statusCode, payload)
          if (missing) undocumented.push(missing)
          return payload
        })
      })
      beforeEach(() => resetDatabase(api.app))
      afterEach(() => assert.deepEqual(undocumented.splice(0), [], 'answers that the OpenAPI document does not list (src/ops/openapi.ts)'))
      after(async () => {
        await api?.app.close()
        await database?.close()
      })
      suite({ get api () { return api }, backend })
    })
  }
}

/** The `data` of a 200 success envelope, after checking the status, the JSON type, `success` and `error`. */
export function successData<T> (res: LightMyRequestResponse): T {
  assert.equal(res.statusCode, 200, res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  const body = res.json()
  assert.equal(body.success, true)
  assert.equal(body.error, null)
  return body.data as T
}

/** The whole error body, with the volatile timestamp checked for format and then ignored. */
export function errorBody (res: LightMyRequestResponse) {
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const body = res.json()
  assert.equal(body.success, false)
  assert.equal(body.data, null)
  assert.match(body.error.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  const { timestamp: _timestamp, ...error } = body.error
  return error
}

const TITLES: Record<string, [number, string]> = {
  VALIDATION_FAILED: [400, 'Validation Failed'],
  MALFORMED_REQUEST: [400, 'Malformed Request'],
  INVALID_ORDER_STATUS: [400, 'Invalid Order Status'],
  INVALID_PAYMENT_STATUS: [400, 'Invalid Payment Status'],
  INVALID_TOKEN: [400, 'Invalid Token'],
  INVALID_FULFILLMENT_STATUS: [400, 'Invalid Fulfillment Status'],
  INVALID_RETURN_STATUS: [400, 'Invalid Return Status'],
  RETURN_WINDOW_CLOSED: [400, 'Return Window Closed'],
  UNAUTHORIZED: [401, 'Unauthorized'],
  EMAIL_NOT_VERIFIED: [401, 'Email Not Verified'],
  INVALID_CLAIMS: [401, 'Invalid Claims'],
  LAST_SIGN_IN_METHOD: [400, 'Last Sign-In Method'],
  IDENTITY_NOT_FOUND: [404, 'Identity Not Found'],
  PAYMENT_DECLINED: [402, 'Payment Declined'],
  ACCESS_DENIED: [403, 'Forbidden'],
  ACCOUNT_SUSPENDED: [403, 'Account Suspended'],
  ORDER_NOT_FOUND: [404, 'Order Not Found'],
  MEMBER_NOT_FOUND: [404, 'Member Not Found'],
  API_KEY_NOT_FOUND: [404, 'API Key Not Found'],
  PRODUCT_NOT_FOUND: [404, 'Product Not Found'],
  CATEGORY_NOT_FOUND: [404, 'Category Not Found'],
  PAYMENT_NOT_FOUND: [404, 'Payment Not Found'],
  EVENT_NOT_FOUND: [404, 'Event Not Found'],
  EDIT_NOT_FOUND: [404, 'Edit Not Found'],
  FULFILLMENT_NOT_FOUND: [404, 'Fulfillment Not Found'],
  RETURN_NOT_FOUND: [404, 'Return Not Found'],
  RESOURCE_NOT_FOUND: [404, 'Not Found'],
  API_VERSION_NOT_AVAILABLE: [404, 'Not Found'],
  METHOD_NOT_ALLOWED: [405, 'Method Not Allowed'],
  EMAIL_ALREADY_REGISTERED: [409, 'Email Already Registered'],
  INSUFFICIENT_STOCK: [409, 'Insufficient Stock'],
  IDEMPOTENCY_KEY_IN_FLIGHT: [409, 'Idempotency Key In Flight'],
  API_KEY_LIMIT_REACHED: [409, 'API Key Limit Reached'],
  PRECONDITION_FAILED: [412, 'Precondition Failed'],
  PAYLOAD_TOO_LARGE: [413, 'Payload Too Large'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'Unsupported Media Type'],
  PRECONDITION_REQUIRED: [428, 'Precondition Required'],
  CURSOR_EXPIRED: [410, 'Cursor Expired'],
  IDEMPOTENCY_KEY_REUSED: [422, 'Idempotency Key Reused'],
  TOO_MANY_REQUESTS: [429, 'Too Many Requests'],
  INTERNAL_ERROR: [500, 'Internal Server Error'],
  SERVICE_UNAVAILABLE: [503, 'Service Unavailable'],
  WEBHOOK_ENDPOINT_NOT_FOUND: [404, 'Webhook Endpoint Not Found'],
  WEBHOOK_DELIVERY_NOT_FOUND: [404, 'Webhook Delivery Not Found'],
  WEBHOOK_ENDPOINT_DISABLED: [409, 'Webhook Endpoint Disabled'],
  UNPAID_ORDER_LIMIT_REACHED: [409, 'Unpaid Order Limit Reached'],
}

/**
 * Asserts the status and the whole error body: code, title, status, type, instance, detail and
 * invalidParams (present exactly when given).
 */
export function assertError (
  res: LightMyRequestResponse,
  expected: { code: string, instance: string, detail: string | RegExp, invalidParams?: Array<{ field: string, message: string | RegExp }> }
): void {
  const [status, title] = TITLES[expected.code] ?? assert.fail(`no title known for ${expected.code}`)
  assert.equal(res.statusCode, status, res.body)
  const { detail, invalidParams, ...rest } = errorBody(res)
  assert.deepEqual(rest, {
    type: `https://api.example.com/errors/${expected.code.toLowerCase().replaceAll('_', '-')}`,
    title,
    status,
    instance: expected.instance,
    code: expected.code,
  })
  if (expected.detail instanceof RegExp) assert.match(detail, expected.detail)
  else assert.equal(detail, expected.detail)
  if (expected.invalidParams === undefined) {
    assert.equal(invalidParams, undefined, 'invalidParams is present only on VALIDATION_FAILED')
    return
  }
  assert.equal(invalidParams.length, expected.invalidParams.length, JSON.stringify(invalidParams))
  expected.invalidParams.forEach((param, i) => {
    assert.equal(invalidParams[i].field, param.field, JSON.stringify(invalidParams))
    if (param.message instanceof RegExp) assert.match(invalidParams[i].message, param.message)
    else assert.equal(invalidParams[i].message, param.message)
  })
}

/**
 * How long a wait in the tests lasts before it is reported as stuck. A safety cap, never a budget: a
 * test waits for what it needs however busy the machine is (issue 30), and fails on time only when
 * the thing waited for will evidently never come.
 */
export const STUCK_AFTER_MS = 5 * 60_000

/** Polls `check` until it holds; fails only when stuck (STUCK_AFTER_MS), naming `what` it waited for. */
export async function waitFor (check: () => boolean | Promise<boolean>, what = 'the condition', pollMs = 25): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > STUCK_AFTER_MS) throw new Error(`still waiting for ${what} after ${Math.round((Date.now() - started) / 1000)} s`)
    await new Promise(resolve => setTimeout(resolve, pollMs))
  }
}

/**
 * Waits for a child process to be ready: `ready()` is checked whenever the process writes output, and
 * the wait fails at once when the process ends first (a start is awaited until the process is ready or
 * exits), or when stuck (STUCK_AFTER_MS). `output()` adds what the process wrote to the failure.
 * For example `await waitForChild(child, () => out.includes('listening'), 'the listening line', () => out)`.
 */
export function waitForChild (child: ChildProcess, ready: () => boolean, what: string, output: () => string = () => ''): Promise<void> {
  return new Promise((resolve, reject) => {
    const finish = (error?: Error) => {
      clearTimeout(stuck)
      child.stdout?.off('data', check)
      child.stderr?.off('data', check)
      child.off('close', closed)
      if (error) reject(error)
      else resolve()
    }
    const check = () => { if (ready()) finish() }
    // 'close' comes after the process's output has all been read, so a last line still counts.
    const closed = () => {
      if (ready()) finish()
      else finish(new Error(`the process ended (code ${child.exitCode}, signal ${child.signalCode}) before ${what}\n${output()}`))
    }
    const stuck = setTimeout(() => finish(new Error(`still waiting for ${what} after ${STUCK_AFTER_MS / 60_000} min\n${output()}`)), STUCK_AFTER_MS)
    child.stdout?.on('data', check)
    child.stderr?.on('data', check)
    child.once('close', closed)
    const alreadyClosed = child.exitCode !== null || child.signalCode !== null
    if (alreadyClosed && (child.stdout === null || child.stdout.destroyed)) closed()
    else check()
  })
}

/**
 * Waits until the event feed shows everything committed so far: the feed reads only transactions
 * older than every transaction still open on the server (src/events/repository.ts), and the app's
 * background work (the dispatcher, the sweep) or another test's database may have one open.
 */
export async function feedSettled (app: FastifyInstance): Promise<void> {
  const { rows } = await sql<{ now: string }>`select pg_current_xact_id()::text as now`.execute(app.db)
  const mark = rows[0]!.now
  await waitFor(async () => {
    const { rows: [bound] } = await sql<{ settled: boolean }>`select pg_snapshot_xmin(pg_current_snapshot()) > cast(${mark} as xid8) as settled`.execute(app.db)
    return bound!.settled
  })
}

/** A TCP port that is free on 127.0.0.1 right now (for servers a test starts itself). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return port
}

/** The list element the contract expects for an order (CONTRACT §3: summary; §15.1: nothing is due on an order that ended). */
export function summaryOf (order: OrderDetail, status = order.status): OrderSummary {
  return {
    orderId: order.orderId,
    customerId: order.customerId,
    status,
    itemCount: order.items.length,
    totalAmount: order.totalAmount,
    currency: order.currency,
    paidAmount: order.paidAmount,
    refundedAmount: order.refundedAmount,
    balanceDue: status === 'CANCELLED' || status === 'DELETED' ? 0 : order.balanceDue,
    paymentStatus: order.paymentStatus,
    fulfillmentStatus: order.fulfillmentStatus,
    createdAt: order.createdAt,
  }
}

/** Migrates a fresh test database to just before `migration`, so that a test can fill it as it was then and run the rest. */
export async function migrateToBefore (db: Kysely<any>, migration: string): Promise<void> {
  const names = Object.keys(migrations)
  const at = names.indexOf(migration)
  assert.ok(at > 0, `no migration ${migration} after the first`)
  const { error } = await new Migrator({ db, provider: { getMigrations: async () => migrations } }).migrateTo(names[at - 1]!)
  assert.equal(error, undefined)
}
