import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { assertError, createTestDatabase, testConfig } from '../helper.js'

/**
 * A PostgreSQL connection that dies while the service holds it (a server restart, a failover, an
 * administrator's pg_terminate_backend) must fail that request with 503, not crash the process.
 */
describe('a connection lost while in use [postgres]', { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' }, () => {
  let database: DatabaseHandle & { url?: string }
  let app: Awaited<ReturnType<typeof buildApp>>
  const crashes: unknown[] = []
  const onCrash = (error: unknown) => { crashes.push(error) }

  before(async () => {
    database = await createTestDatabase('postgres')
    app = await buildApp(testConfig(), { logger: false, database })
    process.on('uncaughtException', onCrash)
  })
  after(async () => {
    process.off('uncaughtException', onCrash)
    await app?.close()
    await database?.close()
  })

  async function terminate (pid: number): Promise<void> {
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try { await client.query('select pg_terminate_backend($1)', [pid]) } finally { await client.end() }
  }

  it('fails the work in progress, never throws an uncaught error, and serves the next request', async () => {
    await assert.rejects(app.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
      await terminate(rows[0]!.pid)
      await new Promise(resolve => setTimeout(resolve, 300)) // the client learns of it while still checked out
      await sql`select 1`.execute(trx)
    }))
    assert.deepEqual(crashes, [])
    const res = await app.inject({ url: '/api/v1/products' })
    assert.equal(res.statusCode, 200, res.body)
  })

  it('answers a request whose connection dies with 503 SERVICE_UNAVAILABLE', async () => {
    // Make every connection of the pool die: the next request's query finds its connection gone.
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and application_name = 'order-service'`.execute(app.db)
    for (const { pid } of rows) await terminate(pid)
    const own = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(app.db)
    await terminate(own.rows[0]!.pid)
    await new Promise(resolve => setTimeout(resolve, 300))
    const res = await app.inject({ url: '/api/v1/products' })
    if (res.statusCode !== 200) {
      assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: '/api/v1/products', detail: 'The service is temporarily unavailable; please retry shortly.' })
    }
    assert.deepEqual(crashes, [])
    assert.equal((await app.inject({ url: '/api/v1/products' })).statusCode, 200)
  })
})
