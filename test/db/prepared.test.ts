import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { Api, assertError, createTestDatabase, testConfig } from '../helper.js'

interface Prepared { statement: string, calls: number }

/**
 * On PostgreSQL, statements with parameters run as named prepared statements, parsed and planned once
 * per connection (src/db/prepared.ts). Each app here has a pool of one connection, so every request
 * and every check below runs on the same PostgreSQL session.
 */
describe('prepared statements [postgres]', { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' }, () => {
  let database: DatabaseHandle & { url?: string }
  let seeded: { orderId: number, secondId: number, othersId: number, headers: { authorization: string } }

  before(async () => {
    database = await createTestDatabase('postgres')
    const app = await buildApp(testConfig(), { logger: false, database })
    const api = new Api(app)
    const admin = await api.admin()
    const product = await api.product(admin)
    const member = await api.member()
    const order = await api.order(member, [{ productId: product.productId, quantity: 1 }])
    const second = await api.order(member, [{ productId: product.productId, quantity: 2 }])
    const others = await api.order(await api.member('other'), [{ productId: product.productId, quantity: 3 }])
    seeded = { orderId: order.orderId, secondId: second.orderId, othersId: others.orderId, headers: member.headers }
    await app.close()
  })
  after(async () => { await database?.close() })

  async function appWith (env: Record<string, string>) {
    return buildApp(testConfig({ DATABASE_URL: database.url!, DATABASE_POOL_SIZE: '1', ...env }), { logger: false })
  }

  /** The session's prepared statements that read an order by id (the statement behind GET /orders/{id}). */
  async function orderStatements (app: Awaited<ReturnType<typeof buildApp>>): Promise<Prepared[]> {
    const { rows } = await sql<Prepared>`select statement, (generic_plans + custom_plans)::int as calls
      from pg_prepared_statements where statement like '%from "orders" where "id" = %'`.execute(app.db)
    return rows
  }

  it('parses a statement once per connection and runs it again without parsing', async () => {
    const app = await appWith({})
    try {
      for (let i = 0; i < 3; i++) {
        const res = await app.inject({ url: `/api/v1/orders/${seeded.orderId}`, headers: seeded.headers })
        assert.equal(res.statusCode, 200, res.body)
      }
      const statements = await orderStatements(app)
      assert.equal(statements.length, 1, JSON.stringify(statements))
      assert.equal(statements[0]!.calls, 3)
    } finally {
      await app.close()
    }
  })

  it('reads the orders that requests ask for together in one statement, and answers each request for itself', async () => {
    const app = await appWith({})
    try {
      const ids = [seeded.orderId, seeded.secondId, seeded.orderId, seeded.othersId, 999_999_999]
      const answers = await Promise.all(ids.map(id => app.inject({ url: `/api/v1/orders/${id}`, headers: seeded.headers })))
      assert.deepEqual(answers.map(res => res.statusCode), [200, 200, 200, 403, 404])
      assert.deepEqual(answers.slice(0, 3).map(res => [res.json().data.orderId, res.json().data.items[0].quantity]),
        [[seeded.orderId, 1], [seeded.secondId, 2], [seeded.orderId, 1]])
      assert.equal(answers[3]!.json().error.code, 'ACCESS_DENIED')
      assert.equal(answers[4]!.json().error.code, 'ORDER_NOT_FOUND')
      const statements = await orderStatements(app)
      assert.equal(statements.length, 1, JSON.stringify(statements))
      assert.equal(statements[0]!.calls, 1, 'five requests, one statement')

      // Requests that come one after another each get their own.
      for (const id of [seeded.orderId, seeded.secondId]) {
        assert.equal((await app.inject({ url: `/api/v1/orders/${id}`, headers: seeded.headers })).statusCode, 200)
      }
      assert.equal((await orderStatements(app))[0]!.calls, 3)
    } finally {
      await app.close()
    }
  })

  /**
   * The generic plan of the session's prepared statement whose text contains `fragment`, run with
   * `args`. After five runs PostgreSQL may switch a prepared statement to a generic plan, made
   * without the parameters' values: the lists must still be served by their partial indexes then.
   */
  async function genericPlan (app: Awaited<ReturnType<typeof buildApp>>, fragment: string, types: string, args: Array<number | string>): Promise<string> {
    const { rows } = await sql<{ name: string, types: string }>`select name, parameter_types::text as types
      from pg_prepared_statements where strpos(statement, ${fragment}) > 0`.execute(app.db)
    assert.equal(rows.length, 1, JSON.stringify(rows))
    assert.equal(rows[0]!.types, types, 'the constant predicate is a literal, not a parameter')
    await sql`set plan_cache_mode = force_generic_plan`.execute(app.db)
    try {
      const plan = await sql<{ 'QUERY PLAN': string }>`explain execute ${sql.id(rows[0]!.name)}(${sql.join(args.map(arg => sql.lit(arg)))})`.execute(app.db)
      return plan.rows.map(row => row['QUERY PLAN']).join('\n')
    } finally {
      await sql`reset plan_cache_mode`.execute(app.db)
    }
  }

  it("plans the owner's order list and the public product list on their partial indexes, even as generic plans", async () => {
    const app = await appWith({})
    try {
      assert.equal((await app.inject({ url: '/api/v1/orders', headers: seeded.headers })).statusCode, 200)
      assert.equal((await app.inject({ url: '/api/v1/products' })).statusCode, 200)
      // The first pages read together (customers, limit): "status" <> 'DELETED' is written into the statement.
      const orders = await genericPlan(app, 'from unnest($1::bigint[]) as c (customer_id)', '{bigint[],bigint}', ['{1,2}', 21])
      assert.match(orders, /Index Scan (using|on) orders_customer_created_idx/, orders)
      // Any other owner list (here a second page: customer, limit, offset) runs its own statement.
      assert.equal((await app.inject({ url: '/api/v1/orders?page=1', headers: seeded.headers })).statusCode, 200)
      const paged = await genericPlan(app, 'from "orders" where ("orders"."customer_id" = $1', '{bigint,bigint,bigint}', [1, 21, 20])
      assert.match(paged, /Index Scan (using|on) orders_customer_created_idx/, paged)
      // Limit, offset: "status" in ('ACTIVE') likewise.
      const products = await genericPlan(app, 'from "products" where "status" in (\'ACTIVE\')', '{bigint,bigint}', [21, 0])
      assert.match(products, /Index Scan (using|on) products_active_created_idx/, products)
    } finally {
      await app.close()
    }
  })

  it('prepares nothing with DATABASE_PREPARED_STATEMENTS=false', async () => {
    const app = await appWith({ DATABASE_PREPARED_STATEMENTS: 'false' })
    try {
      const res = await app.inject({ url: `/api/v1/orders/${seeded.orderId}`, headers: seeded.headers })
      assert.equal(res.statusCode, 200, res.body)
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements`.execute(app.db)
      assert.equal(rows[0]!.n, 0)
    } finally {
      await app.close()
    }
  })

  it('answers 503 once when a table changes under a prepared statement, then serves from a fresh connection', async () => {
    const app = await appWith({})
    const url = `/api/v1/orders/${seeded.orderId}`
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      assert.equal((await app.inject({ url, headers: seeded.headers })).statusCode, 200)
      // What a newer version's migration might do while this instance runs.
      await client.query('alter table orders add column prepared_test_note text')

      const stale = await app.inject({ url, headers: seeded.headers })
      assertError(stale, { code: 'SERVICE_UNAVAILABLE', instance: url, detail: 'The service is temporarily unavailable; please retry shortly.' })
      assert.equal(stale.headers['retry-after'], '1')

      const retried = await app.inject({ url, headers: seeded.headers })
      assert.equal(retried.statusCode, 200, retried.body)
      assert.equal(retried.json().data.orderId, seeded.orderId)
      assert.equal((await orderStatements(app))[0]?.calls, 1, 'the statement was prepared again on a new connection')
    } finally {
      await client.query('alter table orders drop column if exists prepared_test_note')
      await client.end()
      await app.close()
    }
  })
})
