import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { it } from 'node:test'
import { sql } from 'kysely'
import { simulatedProvider, type PaymentProvider } from '../../src/payments/provider.js'
import { assertError, describeEachBackend, type Api, type Member } from '../helper.js'
import { confirmedOrder, get, patch } from '../payments/fixtures.js'

/*
 * Metrics are process-wide (one registry for every app in this process), so the tests compare a
 * value before and after what they do, never an absolute count.
 */

type Sample = { name: string, labels: Record<string, string>, value: number }

/** The samples of a text exposition (comments skipped). */
function parseExposition (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(match, `not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

async function scrape (api: Api): Promise<string> {
  const res = await api.inject({ method: 'GET', url: '/actuator/prometheus' })
  assert.equal(res.statusCode, 200, res.body)
  return res.body
}

/** The sum of the samples named `name` whose labels include `labels`. */
async function value (api: Api, name: string, labels: Record<string, string> = {}): Promise<number> {
  return parseExposition(await scrape(api))
    .filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
}

const HTTP_404_BY_TEMPLATE = 'http_server_requests_seconds_count{method="GET",uri="/api/v1/orders/{id}",status="404",outcome="CLIENT_ERROR"}'

/** Where promtool is, if it is installed. */
function promtool (): string | undefined {
  return (process.env.PATH ?? '').split(delimiter).map(dir => join(dir, 'promtool')).find(path => existsSync(path))
}

function runPromtool (path: string, input: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', chunk => { stdout += chunk })
    child.stderr.on('data', chunk => { stderr += chunk })
    child.on('error', reject)
    child.on('close', code => resolve({ code, stdout, stderr }))
    child.stdin.end(input)
  })
}

describeEachBackend('metrics', (ctx) => {
  let member: Member

  it('serves the text exposition to anyone, with the registry content type; other methods are 405', async () => {
    const res = await ctx.api.inject({ method: 'GET', url: '/actuator/prometheus' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4; charset=utf-8$/)
    assert.match(res.body, /^# HELP /)
    // Process metrics, event-loop lag among them.
    assert.match(res.body, /^process_cpu_user_seconds_total /m)
    assert.match(res.body, /^nodejs_eventloop_lag_seconds /m)
    assert.equal((await ctx.api.inject({ method: 'POST', url: '/actuator/prometheus' })).statusCode, 405)
  })

  it('times requests by method, route template, status and outcome, never by raw path', async () => {
    member = await ctx.api.member()
    const before = await value(ctx.api, 'http_server_requests_seconds_count', { uri: '/api/v1/orders/{id}', status: '404' })
    const listBefore = await value(ctx.api, 'http_server_requests_seconds_count', { method: 'GET', uri: '/api/v1/orders', status: '200', outcome: 'SUCCESS' })
    const unmatchedBefore = await value(ctx.api, 'http_server_requests_seconds_count', { method: 'GET', uri: 'NOT_FOUND', status: '404', outcome: 'CLIENT_ERROR' })

    assert.equal((await get(ctx.api, '/api/v1/orders/123', member)).statusCode, 404)
    assert.equal((await get(ctx.api, '/api/v1/orders', member)).statusCode, 200)
    assert.equal((await get(ctx.api, '/no/such/path/4711')).statusCode, 404)
    assert.equal((await get(ctx.api, '/api/v1/orders')).statusCode, 401)

    const body = await scrape(ctx.api)
    assert.ok(body.includes(HTTP_404_BY_TEMPLATE), body)
    assert.ok(!body.includes('/api/v1/orders/123'), 'the raw path is never a label value')
    assert.ok(!body.includes('/no/such/path'), 'an unmatched path is never a label value')
    assert.equal(await value(ctx.api, 'http_server_requests_seconds_count', { uri: '/api/v1/orders/{id}', status: '404' }), before + 1)
    assert.equal(await value(ctx.api, 'http_server_requests_seconds_count', { method: 'GET', uri: '/api/v1/orders', status: '200', outcome: 'SUCCESS' }), listBefore + 1)
    assert.equal(await value(ctx.api, 'http_server_requests_seconds_count', { method: 'GET', uri: 'NOT_FOUND', status: '404', outcome: 'CLIENT_ERROR' }), unmatchedBefore + 1)
    assert.ok(body.includes('http_server_requests_seconds_count{method="GET",uri="/api/v1/orders",status="401",outcome="CLIENT_ERROR"}'))
    assert.match(body, /^http_server_requests_seconds_bucket\{le="0\.005",method="GET",uri="\/api\/v1\/orders\/\{id\}",status="404",outcome="CLIENT_ERROR"\} \d+$/m)
    assert.match(body, /^# TYPE http_server_requests_seconds histogram$/m)
  })

  it('counts an order placed once, not its idempotent replay, and an order cancelled', async () => {
    const admin = await ctx.api.admin()
    member = await ctx.api.member()
    const product = await ctx.api.product(admin)
    const placed = await value(ctx.api, 'orders_placed_total')
    const cancelled = await value(ctx.api, 'orders_cancelled_total')

    const key = randomUUID()
    const place = () => ctx.api.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: { ...member.headers, 'Idempotency-Key': key },
      payload: { customerId: member.id, items: [{ productId: product.productId, quantity: 1 }] },
    })
    const first = await place()
    assert.equal(first.statusCode, 201, first.body)
    assert.equal(await value(ctx.api, 'orders_placed_total'), placed + 1)
    const replay = await place()
    assert.equal(replay.statusCode, 200, replay.body)
    assert.equal(await value(ctx.api, 'orders_placed_total'), placed + 1, 'a replay places nothing')

    const orderUrl = `/api/v1/orders/${first.json().data.orderId}`
    assert.equal((await patch(ctx.api, `${orderUrl}/cancel`, member)).statusCode, 200)
    assert.equal(await value(ctx.api, 'orders_cancelled_total'), cancelled + 1)
    // Cancelling again changes nothing and counts nothing.
    assert.equal((await patch(ctx.api, `${orderUrl}/cancel`, member)).statusCode, 200)
    assert.equal(await value(ctx.api, 'orders_cancelled_total'), cancelled + 1)
    // An admin cancel counts too.
    const other = await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }])
    assert.equal((await patch(ctx.api, `/api/v1/orders/${other.orderId}/cancel`, admin)).statusCode, 200)
    assert.equal(await value(ctx.api, 'orders_cancelled_total'), cancelled + 2)
    assert.equal(await value(ctx.api, 'orders_placed_total'), placed + 2)
  })

  it('counts a request whose path is not valid percent-encoding, under a bounded uri label', async () => {
    const labels = { method: 'GET', status: '400', uri: 'NOT_FOUND' } // no route matched it
    const before = await value(ctx.api, 'http_server_requests_seconds_count', labels)
    assert.equal((await ctx.api.inject({ url: '/api/v1/orders/%E0%A4%A' })).statusCode, 400)
    assert.equal(await value(ctx.api, 'http_server_requests_seconds_count', labels), before + 1)
  })

  it('does not count a cancel whose transaction fails at commit (503, the order unchanged)', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member()
    const product = await ctx.api.product(admin)
    const { orderId } = await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
    // The commit fails as it does when the connection drops at COMMIT: a deferred check raises 08006.
    const db = ctx.api.app.db
    await sql`create function fail_cancel_commit() returns trigger language plpgsql as
      $$ begin raise exception 'connection lost' using errcode = '08006'; end $$`.execute(db)
    await sql`create constraint trigger fail_cancel_commit after update on orders deferrable initially deferred
      for each row when (new.status = 'CANCELLED') execute function fail_cancel_commit()`.execute(db)
    try {
      const cancelled = await value(ctx.api, 'orders_cancelled_total')
      const res = await patch(ctx.api, `/api/v1/orders/${orderId}/cancel`, owner)
      assert.equal(res.statusCode, 503, res.body)
      assert.equal((await ctx.api.inject({ url: `/api/v1/orders/${orderId}`, headers: owner.headers })).json().data.status, 'PLACED')
      assert.equal(await value(ctx.api, 'orders_cancelled_total'), cancelled, 'a cancel that was rolled back was counted')
    } finally {
      await sql`drop trigger fail_cancel_commit on orders`.execute(db)
      await sql`drop function fail_cancel_commit()`.execute(db)
    }
  })

  it('counts payments processed by outcome: declined, then approved; a re-process of a COMPLETED payment reaches no provider', async () => {
    const outcomes = async () => ({
      approved: await value(ctx.api, 'payments_processed_total', { outcome: 'approved' }),
      declined: await value(ctx.api, 'payments_processed_total', { outcome: 'declined' }),
      error: await value(ctx.api, 'payments_processed_total', { outcome: 'error' }),
    })
    const body = await scrape(ctx.api)
    for (const outcome of ['approved', 'declined', 'error']) {
      assert.match(body, new RegExp(`^payments_processed_total\\{outcome="${outcome}"\\} \\d+$`, 'm'), 'every outcome has a series from the start')
    }
    const o = await confirmedOrder(ctx.api)
    const before = await outcomes()

    const declined = await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_declined' })
    assert.equal(declined.statusCode, 402, declined.body)
    assert.deepEqual(await outcomes(), { ...before, declined: before.declined + 1 })

    const approved = await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })
    assert.equal(approved.statusCode, 200, approved.body)
    assert.deepEqual(await outcomes(), { ...before, declined: before.declined + 1, approved: before.approved + 1 })

    const again = await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_visa' })
    assert.equal(again.statusCode, 200, again.body)
    assert.deepEqual(await outcomes(), { ...before, declined: before.declined + 1, approved: before.approved + 1 })
  })

  it('times database statements by kind, without SQL text; pool gauges on PostgreSQL only', async () => {
    const selects = await value(ctx.api, 'db_query_seconds_count', { kind: 'select', outcome: 'success' })
    const inserts = await value(ctx.api, 'db_query_seconds_count', { kind: 'insert', outcome: 'success' })
    await ctx.api.member()
    const body = await scrape(ctx.api)
    assert.match(body, /^# TYPE db_query_seconds histogram$/m)
    assert.ok(await value(ctx.api, 'db_query_seconds_count', { kind: 'select', outcome: 'success' }) > selects)
    assert.ok(await value(ctx.api, 'db_query_seconds_count', { kind: 'insert', outcome: 'success' }) > inserts)
    const kinds = new Set(parseExposition(body).filter(s => s.name === 'db_query_seconds_count').map(s => s.labels.kind))
    for (const kind of kinds) assert.ok(['select', 'insert', 'update', 'delete', 'other'].includes(kind!), `kind ${kind}`)

    const pool = parseExposition(body).filter(s => s.name.startsWith('db_pool_connections'))
    if (ctx.backend === 'postgres') {
      const byName = Object.fromEntries(pool.map(s => [s.name, s]))
      assert.deepEqual(Object.keys(byName).sort(), [
        'db_pool_connections', 'db_pool_connections_active', 'db_pool_connections_idle', 'db_pool_connections_max', 'db_pool_connections_pending',
      ])
      assert.deepEqual(byName.db_pool_connections!.labels, { pool: 'postgres' })
      assert.equal(byName.db_pool_connections_max!.value, 30)
      assert.ok(byName.db_pool_connections!.value >= 1)
      assert.equal(byName.db_pool_connections!.value, byName.db_pool_connections_active!.value + byName.db_pool_connections_idle!.value)
    } else {
      assert.deepEqual(pool, [], 'PGlite has no pool')
    }
  })

  it('lists metric names, sorted, in the actuator (dotted) form, and keeps the actuator out of the OpenAPI document', async () => {
    const res = await ctx.api.inject({ method: 'GET', url: '/actuator/metrics' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const { names, ...rest } = res.json()
    assert.deepEqual(rest, {})
    assert.deepEqual(names, [...names].sort())
    for (const name of ['http.server.requests', 'db.query', 'orders.placed', 'orders.cancelled', 'payments.processed', 'process.cpu.user', 'nodejs.eventloop.lag']) {
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`)
    }
    // Documented as operations endpoints (CONTRACT §11), in their own shapes.
    const paths = Object.keys((await ctx.api.inject({ method: 'GET', url: '/v3/api-docs' })).json().paths)
    assert.deepEqual(paths.filter(path => path.startsWith('/actuator/metrics') || path === '/actuator/prometheus').sort(),
      ['/actuator/metrics', '/actuator/metrics/{name}', '/actuator/prometheus'])
  })

  it('describes one metric in Spring\'s shape: a timer, a counter, a gauge; tag drill-down; the Prometheus name works too', async () => {
    member = await ctx.api.member()
    await get(ctx.api, '/api/v1/orders/123', member)

    const timer = await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/http.server.requests' })
    assert.equal(timer.statusCode, 200, timer.body)
    const body = timer.json()
    assert.deepEqual(Object.keys(body), ['name', 'description', 'baseUnit', 'measurements', 'availableTags'])
    assert.equal(body.name, 'http.server.requests')
    assert.equal(body.baseUnit, 'seconds')
    assert.deepEqual(body.measurements.map((m: { statistic: string }) => m.statistic), ['COUNT', 'TOTAL_TIME', 'MAX'])
    assert.ok(body.measurements[0].value >= 1)
    assert.deepEqual(body.availableTags.map((t: { tag: string }) => t.tag), ['method', 'outcome', 'status', 'uri'])
    const uris = body.availableTags.find((t: { tag: string }) => t.tag === 'uri').values as string[]
    assert.ok(uris.includes('/api/v1/orders/{id}'))
    assert.ok(!uris.some(uri => /\/\d+(\/|$)/.test(uri)), 'templates only')

    const query = new URLSearchParams([['tag', 'uri:/api/v1/orders/{id}'], ['tag', 'status:404']])
    const drilled = (await ctx.api.inject({ method: 'GET', url: `/actuator/metrics/http.server.requests?${query}` })).json()
    assert.deepEqual(drilled.availableTags.map((t: { tag: string }) => t.tag), ['method', 'outcome'])
    assert.deepEqual(drilled.availableTags.find((t: { tag: string }) => t.tag === 'outcome').values, ['CLIENT_ERROR'])
    const [count, total, max] = drilled.measurements.map((m: { value: number }) => m.value)
    assert.ok(count >= 1 && total > 0 && max > 0 && max <= total)

    const counter = (await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/orders.placed' })).json()
    assert.deepEqual(Object.keys(counter), ['name', 'description', 'measurements', 'availableTags'])
    assert.equal(counter.measurements.length, 1)
    assert.equal(counter.measurements[0].statistic, 'COUNT')
    assert.equal(counter.measurements[0].value, await value(ctx.api, 'orders_placed_total'))
    assert.deepEqual(counter.availableTags, [])

    const payments = (await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/payments.processed' })).json()
    assert.deepEqual(payments.availableTags, [{ tag: 'outcome', values: ['approved', 'declined', 'error'] }])

    const gauge = (await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/nodejs.heap.size.used' })).json()
    assert.equal(gauge.baseUnit, 'bytes')
    assert.equal(gauge.measurements[0].statistic, 'VALUE')
    assert.ok(gauge.measurements[0].value > 0)

    const byPromName = (await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/orders_placed_total' })).json()
    assert.equal(byPromName.name, 'orders.placed')
  })

  it('answers 404 for an unknown metric or a tag no series has, and 400 for a malformed tag', async () => {
    assertError(await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/no.such.metric' }), {
      code: 'RESOURCE_NOT_FOUND', instance: '/actuator/metrics/no.such.metric', detail: 'No metric named no.such.metric.',
    })
    assertError(await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/orders.placed?tag=outcome:nope' }), {
      code: 'RESOURCE_NOT_FOUND', instance: '/actuator/metrics/orders.placed', detail: /no series with outcome:nope/,
    })
    assertError(await ctx.api.inject({ method: 'GET', url: '/actuator/metrics/orders.placed?tag=outcome' }), {
      code: 'VALIDATION_FAILED',
      instance: '/actuator/metrics/orders.placed',
      detail: 'The request has invalid parameters.',
      invalidParams: [{ field: 'tag', message: 'must be key:value' }],
    })
  })

  it('passes promtool check metrics', async (t) => {
    const path = promtool()
    if (!path) return t.skip('promtool not installed (apt-get install prometheus)')
    // Every kind of series present: requests, a 404, business counters, queries.
    member = await ctx.api.member()
    await get(ctx.api, '/api/v1/orders/123', member)
    const { code, stdout, stderr } = await runPromtool(path, await scrape(ctx.api))
    assert.equal(stdout + stderr, '', 'no lint problems')
    assert.equal(code, 0)
  })
})

/** A provider that cannot be reached for token `tok_unreachable`; otherwise the simulated one. */
function flakyProvider (): PaymentProvider {
  const simulated = simulatedProvider()
  return {
    name: 'flaky',
    charge: async (request) => {
      if (request.paymentMethodToken === 'tok_unreachable') throw new Error('connect ECONNREFUSED')
      return simulated.charge(request)
    },
    refund: request => simulated.refund(request),
  }
}

describeEachBackend('metrics: provider errors', (ctx) => {
  it('counts a charge whose provider fails as outcome="error" (503, nothing recorded)', async () => {
    const o = await confirmedOrder(ctx.api)
    const before = await value(ctx.api, 'payments_processed_total', { outcome: 'error' })
    const res = await patch(ctx.api, `${o.paymentUrl}/process`, o.owner, { paymentMethodToken: 'tok_unreachable' })
    assert.equal(res.statusCode, 503, res.body)
    assert.equal(await value(ctx.api, 'payments_processed_total', { outcome: 'error' }), before + 1)
  })
}, { build: { paymentProvider: flakyProvider() } })
