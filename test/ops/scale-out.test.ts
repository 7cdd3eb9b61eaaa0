import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { randomUUID } from 'node:crypto'
import { ADMIN, createTestDatabase, freePort, waitFor } from '../helper.js'

/**
 * Two instances of the service behind nginx (round-robin) on one PostgreSQL database behave as one
 * service: an idempotency key places one order whichever instance gets each attempt, and concurrent
 * orders never oversell. Needs Debian's nginx and TEST_DATABASE_URL; skipped otherwise.
 */
const NGINX = '/usr/sbin/nginx'
const skip = !existsSync(NGINX)
  ? 'nginx is not installed (apt-get install nginx)'
  : !process.env.TEST_DATABASE_URL ? 'needs TEST_DATABASE_URL (two instances share one PostgreSQL database)' : false

/** Waits until `url` answers its health check, or fails at once when the process serving it ended. */
async function waitForHealth (url: string, child: ChildProcess): Promise<void> {
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`the process behind ${url} exited with ${child.exitCode} before it was healthy`)
    return (await fetch(`${url}/api/v1/health`).catch(() => undefined))?.ok === true
  }, `${url} to be healthy`, 100)
}

describe('two instances behind nginx', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let dir: string
  const children: ChildProcess[] = []
  let base: string

  before(async () => {
    database = await createTestDatabase('postgres')
    dir = await mkdtemp(join(tmpdir(), 'order-scale-out-'))
    const ports = [await freePort(), await freePort()]
    for (const port of ports) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: {
          ...process.env,
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: database.url!,
          ADMIN_EMAIL: ADMIN.email,
          ADMIN_PASSWORD: ADMIN.password,
          LOG_LEVEL: 'warn',
          AUTH_RATE_LIMIT: '1000000',
        },
        stdio: 'ignore',
      })
      children.push(child)
    }
    await Promise.all(ports.map((port, i) => waitForHealth(`http://127.0.0.1:${port}`, children[i]!)))

    const proxyPort = await freePort()
    await writeFile(join(dir, 'nginx.conf'), `
      daemon off;
      pid ${dir}/nginx.pid;
      error_log ${dir}/error.log warn;
      events { worker_connections 256; }
      http {
        access_log off;
        client_body_temp_path ${dir}/body;
        proxy_temp_path ${dir}/proxy;
        fastcgi_temp_path ${dir}/fastcgi;
        uwsgi_temp_path ${dir}/uwsgi;
        scgi_temp_path ${dir}/scgi;
        upstream service { ${ports.map(port => `server 127.0.0.1:${port};`).join(' ')} }
        server {
          listen 127.0.0.1:${proxyPort};
          location / {
            proxy_pass http://service;
            add_header X-Upstream $upstream_addr always;
          }
        }
      }`)
    children.push(spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' }))
    base = `http://127.0.0.1:${proxyPort}`
    await waitForHealth(base, children[2]!)
  })

  after(async () => {
    for (const child of children) child.kill('SIGTERM')
    await Promise.all(children.map(child => child.exitCode !== null ? undefined : new Promise(resolve => child.once('exit', resolve))))
    await rm(dir, { recursive: true, force: true })
    await database?.close()
  })

  const call = async (method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, upstream: res.headers.get('x-upstream'), body: await res.json() as { data: any } }
  }
  const login = async (email: string, password: string) => (await call('POST', '/api/v1/auth/login', undefined, { email, password })).body.data.accessToken as string
  async function member () {
    const email = `m-${randomUUID()}@example.com`
    const registered = await call('POST', '/api/v1/members', undefined, { email, password: 'correct horse', name: 'M' })
    assert.equal(registered.status, 201)
    return { id: registered.body.data.memberId as number, token: await login(email, 'correct horse') }
  }

  it('spreads requests over both instances', async () => {
    const upstreams = new Set<string>()
    for (let i = 0; i < 6; i++) upstreams.add((await call('GET', '/api/v1/products')).upstream!)
    assert.equal(upstreams.size, 2, [...upstreams].join(', '))
  })

  it('places one order for one idempotency key, whichever instance each of 20 concurrent attempts reaches', async () => {
    const admin = await login(ADMIN.email, ADMIN.password)
    const product = (await call('POST', '/api/v1/admin/products', admin, { name: 'Beans', price: 100, stockQuantity: 100 })).body.data
    const buyer = await member()
    const key = randomUUID()
    const body = { customerId: buyer.id, items: [{ productId: product.productId, quantity: 1 }] }
    const answers = await Promise.all(Array.from({ length: 20 }, () =>
      call('POST', '/api/v1/orders', buyer.token, body, { 'idempotency-key': key })))
    const served = answers.filter(answer => answer.status === 200 || answer.status === 201)
    assert.ok(answers.every(answer => [200, 201, 409].includes(answer.status)), JSON.stringify(answers.map(a => a.status)))
    assert.equal(answers.filter(answer => answer.status === 201).length, 1)
    assert.equal(new Set(served.map(answer => answer.body.data.orderId)).size, 1)
    assert.equal(new Set(answers.map(answer => answer.upstream)).size, 2)
    const mine = await call('GET', '/api/v1/orders', buyer.token)
    assert.equal(mine.body.data.content.length, 1)
    assert.equal((await call('GET', `/api/v1/products/${product.productId}`)).body.data.stockQuantity, 99)
  })

  it('never oversells: 12 concurrent orders from different members for a stock of 5 through both instances', async () => {
    const admin = await login(ADMIN.email, ADMIN.password)
    const product = (await call('POST', '/api/v1/admin/products', admin, { name: 'Rare', price: 100, stockQuantity: 5 })).body.data
    const buyers = await Promise.all(Array.from({ length: 12 }, () => member()))
    const answers = await Promise.all(buyers.map(buyer =>
      call('POST', '/api/v1/orders', buyer.token, { customerId: buyer.id, items: [{ productId: product.productId, quantity: 1 }] })))
    assert.equal(answers.filter(answer => answer.status === 201).length, 5)
    assert.equal(answers.filter(answer => answer.status === 409).length, 7)
    assert.equal(new Set(answers.map(answer => answer.upstream)).size, 2)
    assert.equal((await call('GET', `/api/v1/products/${product.productId}`)).body.data.stockQuantity, 0)
  })
})
