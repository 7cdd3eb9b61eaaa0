import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { buildApp } from '../../src/app.js'
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
