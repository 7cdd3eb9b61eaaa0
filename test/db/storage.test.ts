import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../../src/app.js'
import { DATA_DIR_LOCK } from '../../src/db/data-dir-lock.js'
import { migrate, openDatabase } from '../../src/db/database.js'
import { migrations } from '../../src/migrations/index.js'
import { ADMIN, createTestDatabase, testConfig } from '../helper.js'

describe('storage', () => {
  it('keeps what was written to DATA_DIR across a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'order-service-'))
    try {
      const config = testConfig({ DATA_DIR: dir })
      const first = await buildApp(config, { logger: false })
      const login = await first.inject({ method: 'POST', url: '/api/v1/auth/login', payload: ADMIN })
      const headers = { authorization: `Bearer ${login.json().data.accessToken}` }
      const created = await first.inject({ method: 'POST', url: '/api/v1/admin/products', headers, payload: { name: 'Kept', price: 5, stockQuantity: 1 } })
      assert.equal(created.statusCode, 201)
      await first.close()

      const second = await buildApp(config, { logger: false })
      const res = await second.inject({ url: `/api/v1/products/${created.json().data.productId}`, headers })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.json().data.name, 'Kept')
      await second.close()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('applies migrations once when two instances start together on one PostgreSQL database', {
    skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (a PostgreSQL server)',
  }, async () => {
    const scratch = await createTestDatabase('postgres')
    const handles = await Promise.all([1, 2].map(() => openDatabase({ databaseUrl: scratch.url, databasePoolSize: 2, databasePreparedStatements: true, dataDir: 'memory' })))
    try {
      await Promise.all(handles.map(handle => migrate(handle.db)))
      const applied = await handles[0]!.db.selectFrom('kysely_migration' as never).select('name' as never).execute() as Array<{ name: string }>
      assert.deepEqual(applied.map(row => row.name).sort(), Object.keys(migrations).sort())
    } finally {
      await Promise.all(handles.map(handle => handle.close()))
      await scratch.close()
    }
  })
})

describe('the claim on DATA_DIR', () => {
  /** Opens the directory and waits until PGlite has started in it (closing sooner leaves it starting). */
  const open = async (dataDir: string) => {
    const handle = await openDatabase({ dataDir, databaseUrl: undefined, databasePoolSize: 1, databasePreparedStatements: true })
    await sql`select 1`.execute(handle.db)
    return handle
  }

  it('refuses a second handle on the same directory, and closing the first releases it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'order-claim-'))
    try {
      const first = await open(dataDir)
      await assert.rejects(open(dataDir), new RegExp(`DATA_DIR .* is in use by process ${process.pid}`))
      assert.match(await readFile(join(dataDir, DATA_DIR_LOCK), 'utf8'), new RegExp(`^${process.pid} `), 'the refused handle left the claim alone')
      await first.close()
      await assert.rejects(readFile(join(dataDir, DATA_DIR_LOCK)), { code: 'ENOENT' })
      await (await open(dataDir)).close()
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })

  it('takes over a claim whose pid now belongs to another process (it started at another time)', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'order-claim-'))
    try {
      // A live pid (this one) with a start time it never had: the claim of a process that died and
      // whose pid was reused.
      await writeFile(join(dataDir, DATA_DIR_LOCK), `${process.pid} 1 0123456789abcdef`)
      const handle = await open(dataDir)
      assert.doesNotMatch(await readFile(join(dataDir, DATA_DIR_LOCK), 'utf8'), / 1 0123456789abcdef$/)
      await handle.close()
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })
})
