import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { translateDbError } from '../../src/db/errors.js'
import { assertError, createTestDatabase, testConfig, waitFor } from '../helper.js'

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
    // The pool may lend this query a connection just terminated, before it has noticed: that one
    // fails (and leaves the pool), and the next is tried, at most once per connection the pool holds.
    let own: number | undefined
    for (let tries = 0; own === undefined; tries++) {
      try {
        own = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(app.db)).rows[0]!.pid
      } catch (error) {
        if ((error as { code?: string }).code !== '57P01' || tries > rows.length) throw error
      }
    }
    await terminate(own)
    await new Promise(resolve => setTimeout(resolve, 300))
    const res = await app.inject({ url: '/api/v1/products' })
    if (res.statusCode !== 200) {
      assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: '/api/v1/products', detail: 'The service is temporarily unavailable; please retry shortly.' })
    }
    assert.deepEqual(crashes, [])
    assert.equal((await app.inject({ url: '/api/v1/products' })).statusCode, 200)
  })
})

/**
 * PostgreSQL refusing new sessions, for real: a role over its CONNECTION LIMIT (53300 "too many
 * connections for role") and a database with ALLOW_CONNECTIONS false (55000 "not currently accepting
 * connections"). Both mean "not available now": 503 with Retry-After, and the service recovers once
 * PostgreSQL accepts sessions again. The service connects as an ordinary role (superusers are exempt
 * from connection limits).
 */
describe('a database that refuses new sessions [postgres]', { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' }, () => {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`
  const role = `order_limited_${suffix}`
  const name = `order_refusing_${suffix}`
  let database: DatabaseHandle | undefined
  let app: Awaited<ReturnType<typeof buildApp>>
  let roleUrl = ''

  /** Runs `text` as the TEST_DATABASE_URL superuser. */
  async function asSuperuser (text: string): Promise<void> {
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
    await client.connect()
    try { await client.query(text) } finally { await client.end() }
  }

  /** Ends the service's sessions, so that its next request must open a new one. */
  async function dropSessions (): Promise<void> {
    await asSuperuser(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role}'`)
    await waitFor(async () => database!.poolStats!().total === 0)
  }

  /** What PostgreSQL itself answers a new session of the role right now. */
  async function connectError (): Promise<{ code?: string } | undefined> {
    const client = new pg.Client({ connectionString: roleUrl })
    try {
      await client.connect()
      await client.end()
      return undefined
    } catch (error) {
      return error as { code?: string }
    }
  }

  const assertUnavailable = async (url: string) => {
    const res = await app.inject({ url })
    assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: url, detail: 'The service is temporarily unavailable; please retry shortly.' })
    assert.equal(res.headers['retry-after'], '1')
  }

  before(async () => {
    await asSuperuser(`create role ${role} login`)
    await asSuperuser(`create database ${name} owner ${role}`)
    const url = new URL(process.env.TEST_DATABASE_URL!)
    url.username = role
    url.pathname = `/${name}`
    roleUrl = url.toString()
    database = await openDatabase({ databaseUrl: roleUrl, databasePoolSize: 2, databasePreparedStatements: true, dataDir: 'memory' })
    app = await buildApp(testConfig(), { logger: false, database })
  })
  after(async () => {
    await app?.close()
    await database?.close()
    await asSuperuser(`drop database if exists ${name} with (force)`).catch(() => {})
    await asSuperuser(`drop role if exists ${role}`).catch(() => {})
  })

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After while the role is over its connection limit (53300), and recovers', async () => {
    await asSuperuser(`alter role ${role} connection limit 0`)
    try {
      await dropSessions()
      assert.equal((await connectError())?.code, '53300')
      await assertUnavailable('/api/v1/products')
      await assertUnavailable('/api/v1/health')
    } finally {
      await asSuperuser(`alter role ${role} connection limit -1`)
    }
    assert.equal((await app.inject({ url: '/api/v1/products' })).statusCode, 200)
  })

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After while the database does not accept connections (55000), and recovers', async () => {
    await asSuperuser(`alter database ${name} allow_connections false`)
    try {
      await dropSessions()
      const refused = await connectError()
      assert.equal(refused?.code, '55000')
      assert.ok(translateDbError(refused), 'a 55000 at session start is "not available now"')
      await assertUnavailable('/api/v1/products')
    } finally {
      await asSuperuser(`alter database ${name} allow_connections true`)
    }
    assert.equal((await app.inject({ url: '/api/v1/products' })).statusCode, 200)
  })

  it('keeps a 55000 raised by a statement (currval before nextval: a bug) a 500, not a 503', async () => {
    const error = await sql`select currval(pg_get_serial_sequence('orders', 'id'))`.execute(app.db).then(() => undefined, (e: unknown) => e)
    assert.equal((error as { code?: string }).code, '55000')
    assert.equal(translateDbError(error), undefined)
  })
})

describe('what counts as the database being unavailable', () => {
  it('does not take a client\'s aborted request (Node\'s "aborted" ECONNRESET, no system call) for a database outage', () => {
    assert.equal(translateDbError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })), undefined)
  })

  it('takes a refused or reset socket of the service\'s own (a system error) for one', async () => {
    const refused = await new pg.Client({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectionTimeoutMillis: 2_000 })
      .connect().then(() => undefined, (e: unknown) => e)
    assert.equal((refused as { code?: string }).code, 'ECONNREFUSED')
    assert.equal(translateDbError(refused)?.code, 'SERVICE_UNAVAILABLE')
    assert.equal(translateDbError(refused)?.headers['Retry-After'], '1')
  })
})
