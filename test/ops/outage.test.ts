import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { Api, assertError, testConfig, type Member, freePort, STUCK_AFTER_MS, waitFor } from '../helper.js'

/**
 * A PostgreSQL cluster of our own, stopped and started under a running service: while it is down,
 * requests that need it are 503 SERVICE_UNAVAILABLE with Retry-After (never 500, never a crash) and
 * readiness is DOWN; once it is back, the service recovers by itself.
 */

/** pg_ctl and initdb of the newest installed PostgreSQL; undefined when there is none. */
function findBinaries (): { initdb: string, pgCtl: string } | undefined {
  const base = '/usr/lib/postgresql'
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : []
  for (const version of versions) {
    const bin = join(base, version, 'bin')
    if (existsSync(join(bin, 'pg_ctl')) && existsSync(join(bin, 'initdb'))) return { initdb: join(bin, 'initdb'), pgCtl: join(bin, 'pg_ctl') }
  }
  if (existsSync('/usr/local/bin/initdb') && existsSync('/usr/local/bin/pg_ctl')) return { initdb: '/usr/local/bin/initdb', pgCtl: '/usr/local/bin/pg_ctl' }
  return undefined
}

const isRoot = process.getuid?.() === 0

/** Runs a PostgreSQL tool; as the postgres OS user when we are root (postgres refuses to run as root). */
function pgTool (binary: string, args: string[]): void {
  const [command, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args]
  execFileSync(command, argv, { stdio: 'ignore', timeout: STUCK_AFTER_MS })
}

/** Polls until `check` holds (the shared wait: no budget, only a safety cap naming `what`). */
const eventually = (what: string, check: () => Promise<boolean>) => waitFor(check, what, 100)

describe('database outage and recovery', () => {
  const binaries = findBinaries()
  let dir: string | undefined
  let dataDir = ''
  let port = 0
  let api: Api | undefined
  let admin: Member
  let crashed: unknown

  const onCrash = (error: unknown) => { crashed = error }
  const start = () => pgTool(binaries!.pgCtl, [
    'start', '-w', '-t', '30', '-D', dataDir, '-l', join(dir!, 'postgres.log'),
    '-o', `-k /tmp -c listen_addresses=127.0.0.1 -p ${port}`,
  ])
  const stop = () => pgTool(binaries!.pgCtl, ['stop', '-w', '-m', 'fast', '-D', dataDir])

  before(async () => {
    if (!binaries) return
    if (isRoot) {
      try {
        execFileSync('id', ['postgres'], { stdio: 'ignore' })
      } catch {
        return
      }
    }
    dir = mkdtempSync(join(tmpdir(), 'order-outage-'))
    dataDir = join(dir, 'data')
    if (isRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })))
    pgTool(binaries.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
    port = await freePort()
    start()
    process.on('uncaughtException', onCrash)
    process.on('unhandledRejection', onCrash)
    api = new Api(await buildApp(testConfig({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres` }), { logger: false }))
    admin = await api.admin()
  })

  after(async () => {
    await api?.app.close().catch(() => {})
    if (dir) {
      try { stop() } catch {}
      rmSync(dir, { recursive: true, force: true })
    }
    process.off('uncaughtException', onCrash)
    process.off('unhandledRejection', onCrash)
  })

  const get = (url: string, headers: Record<string, string> = {}) => api!.inject({ method: 'GET', url, headers })
  const body = (res: LightMyRequestResponse) => res.json()

  it('answers 503 while the database is down, and recovers when it is back', async (t) => {
    if (!api) return t.skip('no PostgreSQL server binaries (initdb, pg_ctl) or no postgres OS user: outage test skipped')

    // Up: requests work.
    assert.equal((await get('/api/v1/products')).statusCode, 200)
    assert.deepEqual(body(await get('/actuator/health/readiness')), { status: 'UP' })
    const product = await api.product(admin)

    stop()

    // Down: 503 with Retry-After, never 500; the process keeps serving.
    for (const url of ['/api/v1/products', `/api/v1/products/${product.productId}`, '/api/v1/admin/orders']) {
      const res = await get(url, admin.headers)
      assertError(res, { code: 'SERVICE_UNAVAILABLE', instance: url, detail: 'The service is temporarily unavailable; please retry shortly.' })
      assert.equal(res.headers['retry-after'], '1')
    }
    const order = await api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: admin.headers,
      payload: { customerId: admin.id, items: [{ productId: product.productId, quantity: 1 }] },
    })
    assert.equal(order.statusCode, 503, order.body)
    const login = await api.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: admin.email, password: 'whatever' } })
    assert.equal(login.statusCode, 503, login.body)

    const readiness = await get('/actuator/health/readiness')
    assert.equal(readiness.statusCode, 503)
    assert.deepEqual(body(readiness), { status: 'DOWN' })
    const health = await get('/actuator/health')
    assert.equal(health.statusCode, 503)
    assert.deepEqual(body(health), { status: 'DOWN' })
    const detailed = await get('/actuator/health', admin.headers)
    assert.equal(detailed.statusCode, 503)
    assert.deepEqual(body(detailed), {
      status: 'DOWN',
      components: {
        db: { status: 'DOWN', details: { database: 'PostgreSQL', validationQuery: 'select 1', error: 'The database could not be reached.' } },
      },
    })
    const liveness = await get('/actuator/health/liveness')
    assert.equal(liveness.statusCode, 200)
    assert.deepEqual(body(liveness), { status: 'UP' })
    // The clients' health answers as readiness does, in the envelope.
    const clientHealth = await get('/api/v1/health')
    assertError(clientHealth, { code: 'SERVICE_UNAVAILABLE', instance: '/api/v1/health', detail: 'The service is temporarily unavailable; please retry shortly.' })
    assert.equal(clientHealth.headers['retry-after'], '1')

    start()

    // Back: the pool reconnects by itself.
    await eventually('readiness UP', async () => (await get('/actuator/health/readiness')).statusCode === 200)
    await eventually('products listed', async () => (await get('/api/v1/products')).statusCode === 200)
    assert.deepEqual(body(await get('/actuator/health/readiness')), { status: 'UP' })
    assert.deepEqual(body(await get('/api/v1/health')), { success: true, data: { status: 'UP' }, error: null })
    const detailedAgain = await get('/actuator/health', admin.headers)
    assert.equal(detailedAgain.statusCode, 200)
    assert.equal(body(detailedAgain).components.db.status, 'UP')
    const fetched = await get(`/api/v1/products/${product.productId}`)
    assert.equal(fetched.statusCode, 200, fetched.body)
    await api.order(admin, [{ productId: product.productId, quantity: 1 }])

    assert.equal(crashed, undefined, `no uncaught error during the outage: ${String(crashed)}`)
  })

  it('reports a hung database DOWN within the check timeout instead of hanging', async (t) => {
    if (!api) return t.skip('no PostgreSQL server binaries (initdb, pg_ctl) or no postgres OS user: outage test skipped')
    await eventually('readiness UP', async () => (await get('/actuator/health/readiness')).statusCode === 200)
    // Freeze the whole cluster (the postmaster and its backends): connections stay open but nothing answers.
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
    const backends = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number)
    const frozen = [postmaster, ...backends]
    for (const pid of frozen) process.kill(pid, 'SIGSTOP')
    try {
      // An answer at all, DOWN with the check's own timeout as the reason, shows the check did not hang
      // (a bound on the elapsed time would also measure how busy the machine is).
      const [readiness, detailed] = await Promise.all([get('/actuator/health/readiness'), get('/actuator/health', admin.headers)])
      assert.equal(readiness.statusCode, 503)
      assert.deepEqual(body(readiness), { status: 'DOWN' })
      assert.equal(detailed.statusCode, 503)
      assert.deepEqual(body(detailed).components.db, {
        status: 'DOWN',
        details: { database: 'PostgreSQL', validationQuery: 'select 1', error: 'The database did not answer within 2000 ms.' },
      })
      assert.deepEqual(body(await get('/actuator/health/liveness')), { status: 'UP' })
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGCONT')
    }
    await eventually('readiness UP', async () => (await get('/actuator/health/readiness')).statusCode === 200)
    assert.equal((await get('/api/v1/products')).statusCode, 200)
    assert.equal(crashed, undefined, `no uncaught error: ${String(crashed)}`)
  })
})
