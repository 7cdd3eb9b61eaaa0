/**
 * The typed client as another project gets it: `npm pack` in client/ (its `prepare` builds dist/),
 * the tarball installed with npm into a scratch project outside the repository, and then used there
 * with plain `node` (no tsx, no TypeScript) against a running service, and compiled there by tsc
 * through the package's exports map. The registry must be reachable for openapi-fetch; the test
 * skips, saying so, only when the install fails for a network reason.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readdir, realpath, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { ADMIN, testConfig } from '../helper.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CLIENT = join(ROOT, 'client')
const TSC = join(ROOT, 'node_modules/.bin/tsc')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

interface Run { code: number | null, stdout: string, stderr: string }

/**
 * Runs a program to its end, however long it takes (an install may be slow on a busy machine). The
 * environment is this process's without what an outer `npm test` or tsx put there, so the child npm
 * reads no configuration of the repository's and the child node loads no TypeScript hook.
 */
function run (command: string, args: string[], cwd: string): Promise<Run> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'NODE_OPTIONS'))
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.on('error', reject)
    child.on('close', code => resolve({ code, stdout, stderr }))
  })
}

const output = (result: Run): string => `exit ${result.code}\n${result.stdout}${result.stderr}`

/**
 * npm's error code for a registry it could not reach (`npm error code ECONNREFUSED`), as opposed to
 * a package it could not install (ETARGET, E404, EBADENGINE, a failed script, …).
 */
const NETWORK_FAILURE = /^npm (?:error|ERR!) code (?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|ERR_SOCKET_TIMEOUT|ENETUNREACH|EHOSTUNREACH)$/m

/** Placing an order with the installed package, run by plain node: it prints what the client answered. */
const PLACE_ORDER = `import { createOrderClient, OrderServiceError } from '@order-service/client'

const [baseUrl, email, password, key] = process.argv.slice(2)
const api = createOrderClient({ baseUrl })
await api.login({ email, password })
const me = (await api.call(api.client.GET('/api/v1/members/me'))).data
const product = (await api.call(api.client.POST('/api/v1/admin/products', {
  body: { name: 'Espresso beans, 1 kg', price: 2450, stockQuantity: 100 },
}))).data
const { status, location, replayed, data: order } = await api.placeOrder(
  { customerId: me.memberId, items: [{ productId: product.productId, quantity: 2 }] },
  { idempotencyKey: key },
)
let refused
try {
  await api.placeOrder({ customerId: me.memberId, items: [{ productId: product.productId, quantity: 1000 }] })
} catch (error) {
  refused = error instanceof OrderServiceError ? { status: error.status, code: error.code } : String(error)
}
console.log(JSON.stringify({ status, location, replayed, order, refused }))
`

/** The same with types: compiled by tsc through the package's exports map, with the strictest settings. */
const CHECK = `import { createOrderClient, OrderServiceError, type Order, type OrderStatus } from '@order-service/client'

const api = createOrderClient({ baseUrl: 'http://localhost:8080' })
const placed = await api.placeOrder({ customerId: 1, items: [{ productId: 1, quantity: 2 }] }, { idempotencyKey: 'k' })
const order: Order = placed.data
const status: OrderStatus = order.status
const total: number = order.totalAmount
const location: string | undefined = placed.location
// @ts-expect-error ids are numbers: the declarations are the real ones, not \`any\`
await api.getOrder('1')
// @ts-expect-error no such operation
await api.client.GET('/api/v1/orders/{id}/refund')
try {
  await api.getOrder(1)
} catch (error) {
  // @ts-expect-error not a code of the catalogue
  if (error instanceof OrderServiceError && error.code === 'OUT_OF_STOCK') console.log(error.detail)
}
console.log(status, total, location)
`

describe('the typed client as a package another project installs', () => {
  let app: FastifyInstance
  let baseUrl: string
  let dir: string
  let project: string
  let installed: Run | undefined

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'order-client-package-'))
    project = join(dir, 'project')
    await mkdir(project)
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'scratch-project', private: true, type: 'module' }))
    app = await buildApp(testConfig(), { logger: false })
    baseUrl = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  after(async () => {
    await app?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /**
   * Runs the script in the project at `where` and checks what it printed: the whole order, which is
   * the one the service holds, placed once for the admin with the stock taken once.
   */
  async function placesAnOrder (where: string, key: string): Promise<void> {
    await writeFile(join(where, 'place-order.mjs'), PLACE_ORDER)
    const ran = await run(process.execPath, ['place-order.mjs', baseUrl, ADMIN.email, ADMIN.password, key], where)
    assert.equal(ran.code, 0, `the script failed:\n${output(ran)}`)
    assert.equal(ran.stderr, '')
    const printed = JSON.parse(ran.stdout) as { order: { orderId: number, customerId: number, createdAt: string, updatedAt: string, items: Array<{ productId: number }> } }
    const { orderId, customerId, createdAt, updatedAt } = printed.order
    const productId = printed.order.items[0]?.productId
    assert.ok(Number.isSafeInteger(orderId) && orderId > 0)
    assert.ok(Number.isSafeInteger(productId) && productId! > 0)
    assert.match(createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
    assert.deepEqual(printed, {
      status: 201,
      location: `/api/v1/orders/${orderId}`,
      replayed: false,
      order: {
        orderId,
        customerId,
        status: 'PLACED',
        items: [{ productId, productName: 'Espresso beans, 1 kg', quantity: 2, unitPrice: 2450, lineTotal: 4900, fulfilledQuantity: 0, returnedQuantity: 0 }],
        totalAmount: 4900,
        currency: 'USD',
        shippingAddress: null,
        memo: null,
        paymentId: null,
        payments: [],
        paidAmount: 0,
        refundedAmount: 0,
        balanceDue: 4900,
        paymentStatus: 'UNPAID',
        fulfillmentStatus: 'UNFULFILLED',
        fulfillments: [],
        version: 1,
        allowedActions: ['confirm', 'cancel', 'delete', 'edit'],
        createdAt,
        updatedAt,
      },
      refused: { status: 409, code: 'INSUFFICIENT_STOCK' },
    })

    // The service holds the same order, placed once for the admin, with the stock taken once.
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: ADMIN })
    const headers = { authorization: `Bearer ${login.json().data.accessToken as string}` }
    const me = await app.inject({ url: '/api/v1/members/me', headers })
    assert.equal(customerId, me.json().data.memberId)
    const stored = await app.inject({ url: `/api/v1/orders/${orderId}`, headers })
    assert.equal(stored.statusCode, 200)
    assert.deepEqual(stored.json(), { success: true, data: printed.order, error: null })
    const product = await app.inject({ url: `/api/v1/products/${productId}`, headers })
    assert.equal(product.json().data.stockQuantity, 98)
  }

  it('packs into a tarball of the built JavaScript, its declarations, the README and package.json', async () => {
    const packed = await run(NPM, ['pack', '--pack-destination', dir], CLIENT)
    assert.equal(packed.code, 0, `npm pack failed:\n${output(packed)}`)
    assert.deepEqual((await readdir(dir)).filter(name => name.endsWith('.tgz')), ['order-service-client-0.1.0.tgz'])
    const listed = await run('tar', ['-tzf', join(dir, 'order-service-client-0.1.0.tgz')], dir)
    assert.equal(listed.code, 0, output(listed))
    assert.deepEqual(listed.stdout.split('\n').filter(Boolean).sort(), [
      'package/README.md',
      'package/dist/errors.d.ts',
      'package/dist/errors.js',
      'package/dist/index.d.ts',
      'package/dist/index.js',
      'package/dist/schema.d.ts',
      'package/dist/schema.js',
      'package/package.json',
    ])
  })

  it('installs with npm in a project outside the repository, with openapi-fetch as its own dependency', async (t) => {
    const tarball = join(dir, 'order-service-client-0.1.0.tgz')
    installed = await run(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], project)
    if (installed.code !== 0 && NETWORK_FAILURE.test(installed.stderr)) {
      return t.skip(`npm cannot reach the registry, so openapi-fetch cannot be installed:\n${output(installed)}`)
    }
    assert.equal(installed.code, 0, `npm install of the packed client failed:\n${output(installed)}`)
    const listed = await run(NPM, ['ls', '--all', '--parseable'], project)
    assert.equal(listed.code, 0, output(listed))
    const packages = listed.stdout.split('\n').filter(Boolean).map(path => path.slice(project.length + 1)).sort()
    assert.deepEqual(packages, [
      '',
      'node_modules/@order-service/client',
      'node_modules/openapi-fetch',
      'node_modules/openapi-typescript-helpers',
    ])
  })

  it('places an order from a plain node script that imports the package', async (t) => {
    if (installed?.code !== 0) return t.skip('the package is not installed (see the install test)')
    await placesAnOrder(project, 'package-test-order-1')
  })

  it('type-checks in that project: the declarations resolve through the exports map', async (t) => {
    if (installed?.code !== 0) return t.skip('the package is not installed (see the install test)')
    await writeFile(join(project, 'check.ts'), CHECK)
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022', 'DOM'],
        types: [],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noEmit: true,
      },
      files: ['check.ts'],
    }))
    const checked = await run(TSC, ['-p', 'tsconfig.json', '--noEmit', '--traceResolution'], project)
    assert.equal(checked.code, 0, `the installed package does not type-check:\n${checked.stdout.split('\n').filter(line => /error TS/.test(line)).join('\n')}`)
    // Resolved as a package, through its exports map, to the declarations of dist/.
    assert.match(checked.stdout, /Entering conditional exports\./)
    assert.match(checked.stdout, /Module name '@order-service\/client' was successfully resolved to '[^']*\/node_modules\/@order-service\/client\/dist\/index\.d\.ts' with Package ID '@order-service\/client\/dist\/index\.d\.ts@0\.1\.0'/)
  })

  it('installs from the folder as well: npm links the checkout and its prepare script builds dist/', async () => {
    const linked = join(dir, 'linked')
    await mkdir(linked)
    await writeFile(join(linked, 'package.json'), JSON.stringify({ name: 'scratch-linked', private: true, type: 'module' }))
    await rm(join(CLIENT, 'dist'), { recursive: true, force: true })
    const install = await run(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', CLIENT], linked)
    assert.equal(install.code, 0, `npm install of the client's folder failed:\n${output(install)}`)
    assert.equal(await realpath(join(linked, 'node_modules/@order-service/client')), await realpath(CLIENT))
    assert.deepEqual((await readdir(join(CLIENT, 'dist'))).sort(), ['errors.d.ts', 'errors.js', 'index.d.ts', 'index.js', 'schema.d.ts', 'schema.js'])
    await placesAnOrder(linked, 'package-test-order-2')
  })
})
