import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { Api, assertError, describeEachBackend, testConfig, freePort, waitFor } from '../helper.js'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string, version: string }

/** The status, the JSON type, no caching, and the whole (unenveloped) body. */
function assertHealth (res: LightMyRequestResponse, status: number, body: unknown): void {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.equal(res.headers['cache-control'], 'no-store')
  assert.deepEqual(res.json(), body)
}

describeEachBackend('actuator health', (ctx) => {
  const database = () => ctx.backend === 'postgres' ? 'PostgreSQL' : 'PGlite'

  it('shows anonymous callers only the status', async () => {
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health' }), 200, { status: 'UP' })
  })

  it('shows members only the status, and treats an invalid credential as anonymous', async () => {
    const member = await ctx.api.member()
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health', headers: member.headers }), 200, { status: 'UP' })
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health', headers: { authorization: 'Bearer not-a-token' } }), 200, { status: 'UP' })
  })

  it('shows admins the components with their details', async () => {
    const admin = await ctx.api.admin()
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health', headers: admin.headers }), 200, {
      status: 'UP',
      components: { db: { status: 'UP', details: { database: database(), validationQuery: 'select 1' } } },
    })
  })

  it('answers the clients\' /api/v1/health as readiness does: 200 envelope UP, not cached', async () => {
    const res = await ctx.api.inject({ method: 'GET', url: '/api/v1/health' })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(res.json(), { success: true, data: { status: 'UP' }, error: null })
    assert.equal(res.headers['cache-control'], 'no-store')
  })

  it('answers liveness and readiness', async () => {
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health/liveness' }), 200, { status: 'UP' })
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health/readiness' }), 200, { status: 'UP' })
    const admin = await ctx.api.admin()
    assertHealth(await ctx.api.inject({ method: 'GET', url: '/actuator/health/readiness', headers: admin.headers }), 200, { status: 'UP' })
  })

  it('describes the application, its build and its commit', async () => {
    const res = await ctx.api.inject({ method: 'GET', url: '/actuator/info' })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    const { build, git, ...rest } = res.json()
    assert.deepEqual(rest, { app: { name: pkg.name, version: pkg.version } })
    assert.deepEqual(Object.keys(build), ['time'])
    assert.match(build.time, TIMESTAMP)
    assert.ok(Date.parse(build.time) <= Date.now())
    let head: string | undefined
    try {
      head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    } catch {}
    if (process.env.GIT_COMMIT) assert.deepEqual(git, { commit: process.env.GIT_COMMIT.toLowerCase() })
    else if (head) assert.deepEqual(git, { commit: head })
    else assert.ok(git === undefined || /^[0-9a-f]{7,40}$/.test(git.commit))
  })

  it('ignores unknown query parameters (the rule that rejects them covers /api only)', async () => {
    const admin = await ctx.api.admin()
    for (const url of ['/actuator/health', '/actuator/health/liveness', '/actuator/health/readiness', '/actuator/info']) {
      const res = await ctx.api.inject({ method: 'GET', url: `${url}?foo=bar&verbose` })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      assert.equal(res.json().status ?? res.json().app.name, url === '/actuator/info' ? pkg.name : 'UP')
    }
    const res = await ctx.api.inject({ method: 'GET', url: '/actuator/health?showDetails=never', headers: admin.headers })
    assert.equal(res.json().components.db.status, 'UP')
    // By contrast, /api rejects them.
    assert.equal((await ctx.api.inject({ method: 'GET', url: '/api/v1/products?foo=bar' })).statusCode, 400)
  })

  it('documents the actuator health endpoints in the OpenAPI document, tagged operations (CONTRACT §11)', async () => {
    const res = await ctx.api.inject({ method: 'GET', url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    const paths = res.json().paths
    for (const path of ['/actuator/health', '/actuator/health/liveness', '/actuator/health/readiness', '/actuator/info']) {
      assert.deepEqual(paths[path].get.tags, ['operations'], path)
    }
  })
})

describe('actuator health with the database gone', () => {
  let database: DatabaseHandle
  let api: Api

  before(async () => {
    database = await openDatabase({ dataDir: 'memory', databaseUrl: undefined, databasePoolSize: 1, databasePreparedStatements: true })
    api = new Api(await buildApp(testConfig(), { logger: false, database }))
  })
  after(async () => {
    await api?.app.close()
  })

  it('is DOWN with 503, still alive, names the failure only to admins, and /api/v1/health answers 503 SERVICE_UNAVAILABLE', async () => {
    const admin = await api.admin()
    await database.close()
    assertHealth(await api.inject({ method: 'GET', url: '/actuator/health' }), 503, { status: 'DOWN' })
    assertHealth(await api.inject({ method: 'GET', url: '/actuator/health', headers: admin.headers }), 503, {
      status: 'DOWN',
      components: {
        db: { status: 'DOWN', details: { database: 'PGlite', validationQuery: 'select 1', error: 'The database could not be reached.' } },
      },
    })
    assertHealth(await api.inject({ method: 'GET', url: '/actuator/health/readiness' }), 503, { status: 'DOWN' })
    assertHealth(await api.inject({ method: 'GET', url: '/actuator/health/liveness' }), 200, { status: 'UP' })
    const clientHealth = await api.inject({ method: 'GET', url: '/api/v1/health' })
    assertError(clientHealth, { code: 'SERVICE_UNAVAILABLE', instance: '/api/v1/health', detail: 'The service is temporarily unavailable; please retry shortly.' })
    assert.equal(clientHealth.headers['retry-after'], '1')
    assert.equal(clientHealth.headers['cache-control'], 'no-store')
    const info = await api.inject({ method: 'GET', url: '/actuator/info' })
    assert.equal(info.statusCode, 200)
  })
})

describe('actuator info with GIT_COMMIT', () => {
  it('reports the commit from the environment', async () => {
    const saved = process.env.GIT_COMMIT
    process.env.GIT_COMMIT = 'ABCDEF0123456789abcdef0123456789ABCDEF01'
    try {
      const app = await buildApp(testConfig(), { logger: false })
      try {
        const res = await app.inject({ method: 'GET', url: '/actuator/info' })
        assert.deepEqual(res.json().git, { commit: 'abcdef0123456789abcdef0123456789abcdef01' })
      } finally {
        await app.close()
      }
    } finally {
      if (saved === undefined) delete process.env.GIT_COMMIT
      else process.env.GIT_COMMIT = saved
    }
  })
})

describe('actuator health with REDIS_URL', () => {
  let redis: ChildProcess | undefined
  let redisPort = 0

  before(async () => {
    redisPort = await freePort()
    try {
      execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    } catch {
      return
    }
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    // Until it listens, or fails at once if it exits first.
    await waitFor(() => {
      if (redis!.exitCode !== null) throw new Error(`redis-server exited with ${redis!.exitCode}`)
      return new Promise<boolean>(resolve => {
        const socket = connect(redisPort, '127.0.0.1')
        socket.on('connect', () => { socket.destroy(); resolve(true) })
        socket.on('error', () => resolve(false))
      })
    }, 'redis-server to listen', 50)
  })
  after(() => {
    redis?.kill()
  })

  async function adminHealth (url: string) {
    const app = await buildApp(testConfig({ REDIS_URL: url }), { logger: false })
    try {
      const admin = await new Api(app).admin()
      const asAdmin = await app.inject({ method: 'GET', url: '/actuator/health', headers: admin.headers })
      const anonymous = await app.inject({ method: 'GET', url: '/actuator/health' })
      return { asAdmin, anonymous }
    } finally {
      await app.close()
    }
  }

  it('shows admins a Redis component that is UP', async (t) => {
    if (!redis) return t.skip('redis-server is not installed')
    const { asAdmin, anonymous } = await adminHealth(`redis://127.0.0.1:${redisPort}`)
    assertHealth(asAdmin, 200, {
      status: 'UP',
      components: {
        db: { status: 'UP', details: { database: 'PGlite', validationQuery: 'select 1' } },
        redis: { status: 'UP' },
      },
    })
    assertHealth(anonymous, 200, { status: 'UP' })
  })

  it('shows Redis DOWN without taking the service DOWN (the rate limits fail open)', async () => {
    const { asAdmin, anonymous } = await adminHealth(`redis://127.0.0.1:${await freePort()}`)
    assertHealth(asAdmin, 200, {
      status: 'UP',
      components: {
        db: { status: 'UP', details: { database: 'PGlite', validationQuery: 'select 1' } },
        redis: { status: 'DOWN', details: { error: 'Redis could not be reached.' } },
      },
    })
    assertHealth(anonymous, 200, { status: 'UP' })
  })
})
