import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { freePort, STUCK_AFTER_MS } from '../helper.js'

/**
 * ioredis, nodemailer, openid-client and amqplib cost heap and source text in every process that
 * loads them, and most deployments configure none of them (issue 22): each is imported only once
 * REDIS_URL, SMTP_URL, an OIDC_* provider or AMQP_URL asks for it. undici is imported with the
 * webhook dispatcher's first delivery.
 *
 * The app is built in a child process (a module, once loaded, stays loaded: this process has loaded
 * them all in other tests), which records every module it loads, two ways: an ESM resolve hook
 * (every import, static or dynamic) and the CommonJS module cache (a require() from a CommonJS
 * package passes no ESM hook on Node 20).
 */
const CONFIGURED = ['ioredis', 'nodemailer', 'openid-client', 'amqplib']
const LAZY = [...CONFIGURED, 'undici']

const root = join(import.meta.dirname, '..', '..')
const run = promisify(execFile)

// Appends each resolved URL to the file named in `data`, one per line.
const HOOK = `
import { appendFileSync } from 'node:fs'
let file
export function initialize (data) { file = data.file }
export async function resolve (specifier, context, next) {
  const resolved = await next(specifier, context)
  appendFileSync(file, resolved.url + '\\n')
  return resolved
}`

/** The child: registers the hook, builds the app with `env` as its configuration, makes it ready, and prints the CommonJS cache. */
const CHILD = (file: string, env: Record<string, string>) => `
import { register, createRequire } from 'node:module'
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}), { data: { file: ${JSON.stringify(file)} } })
const { buildApp } = await import(${JSON.stringify(pathToFileURL(join(root, 'src/app.ts')).href)})
const { testConfig } = await import(${JSON.stringify(pathToFileURL(join(root, 'test/helper.ts')).href)})
const app = await buildApp(testConfig(${JSON.stringify(env)}), { logger: false })
await app.ready()
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)))
await app.close()
`

/** The packages of `LAZY` that building and readying the app with `env` loaded, and how many modules it loaded in all. */
async function loadedBy (env: Record<string, string>, file: string): Promise<{ lazy: string[], modules: string[] }> {
  const childEnv = Object.fromEntries(Object.entries(process.env)
    .filter(([name]) => !/^(REDIS_URL|SMTP_URL|OIDC_|PUBLIC_URL|AMQP_URL|DATABASE_URL|NODE_TEST_CONTEXT|NODE_OPTIONS)/.test(name)))
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD(file, env)],
    { cwd: root, env: childEnv, timeout: STUCK_AFTER_MS, maxBuffer: 64 * 1024 * 1024 })
  const required = JSON.parse(stdout.trim().split('\n').at(-1)!) as string[]
  const resolved = (await readFile(file, 'utf8')).split('\n').filter(Boolean)
  const modules = [...required.map(path => pathToFileURL(path).href), ...resolved]
  return { lazy: LAZY.filter(name => modules.some(url => url.includes(`/node_modules/${name}/`))), modules }
}

describe('modules loaded only when configured', () => {
  let dir: string
  before(async () => { dir = await mkdtemp(join(tmpdir(), 'lazy-modules-')) })
  after(async () => { await rm(dir, { recursive: true, force: true }) })

  it('loads none of ioredis, nodemailer, openid-client, amqplib and undici without their settings and before a delivery', async () => {
    const { lazy, modules } = await loadedBy({}, join(dir, 'none'))
    // The recording works: the app's own modules and its dependencies are there.
    assert.ok(modules.some(url => url.includes('/node_modules/fastify/')), 'fastify among the loaded modules')
    assert.ok(modules.some(url => url.endsWith('/src/auth/limits.ts')), 'src/auth/limits.ts among the loaded modules')
    assert.deepEqual(lazy, [])
  })

  it('loads each once its setting is there (Redis and the provider unreachable: start-up goes on)', async () => {
    const closed = await freePort()
    const { lazy } = await loadedBy({
      REDIS_URL: `redis://127.0.0.1:${closed}`,
      SMTP_URL: `smtp://127.0.0.1:${closed}`,
      PUBLIC_URL: 'http://127.0.0.1:3000',
      OIDC_LAZY_ISSUER: `http://127.0.0.1:${closed}/realm`,
      OIDC_LAZY_CLIENT_ID: 'client',
      OIDC_LAZY_CLIENT_SECRET: 'secret',
      AMQP_URL: `amqp://127.0.0.1:${closed}`,
    }, join(dir, 'all'))
    assert.deepEqual(lazy, CONFIGURED)
  })
})
