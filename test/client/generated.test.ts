import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import type { OpenAPI3 } from 'openapi-typescript'
import { buildApp } from '../../src/app.js'
import { GENERATE_COMMAND, liveDocument, SCHEMA_FILE, schemaSource } from '../../scripts/client-types.js'
import { ADMIN, testConfig } from '../helper.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TSC = join(ROOT, 'node_modules/.bin/tsc')

/** The files of the client and of its two test programs, as the root has them. */
const PROGRAM = ['client/package.json', 'client/src/index.ts', 'client/src/errors.ts', 'test/client/walkthrough.ts', 'test/client/type-checks.ts']

describe('the typed client, generated from the live document', () => {
  let app: FastifyInstance
  let baseUrl: string
  let document: OpenAPI3
  let dir: string

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    baseUrl = await app.listen({ port: 0, host: '127.0.0.1' })
    // The document as a client fetches it, over HTTP from the running service.
    const res = await fetch(`${baseUrl}/v3/api-docs`)
    assert.equal(res.status, 200)
    document = await res.json() as OpenAPI3
    dir = await mkdtemp(join(tmpdir(), 'order-client-'))
  })
  after(async () => {
    await app?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('is checked in up to date: client/src/schema.ts is what the live document generates', async () => {
    const checkedIn = await readFile(SCHEMA_FILE, 'utf8').catch(() => '')
    const fresh = await schemaSource(await liveDocument())
    if (checkedIn !== fresh) {
      const firstDifference = fresh.split('\n').findIndex((line, i) => line !== checkedIn.split('\n')[i])
      assert.fail(`client/src/schema.ts is stale: the OpenAPI document changed (first difference at line ${firstDifference + 1}). ` +
        `Run \`${GENERATE_COMMAND}\` and commit client/src/schema.ts.`)
    }
    // The generation's own document and the one served over HTTP are the same document.
    assert.equal(await schemaSource(document), fresh)
  })

  it('compiles under tsc --strict and runs the README walk-through against the running service', async () => {
    // A copy of the client with types generated from the served document, and the two programs
    // that use it, compiled on their own with the strictest settings.
    for (const file of PROGRAM) {
      await mkdir(dirname(join(dir, file)), { recursive: true })
      await copyFile(join(ROOT, file), join(dir, file))
    }
    await writeFile(join(dir, 'client/src/schema.ts'), await schemaSource(document))
    await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }))
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2023',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023'],
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noImplicitOverride: true,
        noUnusedLocals: true,
        verbatimModuleSyntax: true,
        skipLibCheck: true,
        noEmit: true,
      },
      include: ['client', 'test'],
    }))
    await promisify(execFile)(TSC, ['-p', join(dir, 'tsconfig.json')], { cwd: dir }).catch((error: { stdout?: string, stderr?: string }) => {
      assert.fail(`the generated client does not compile under tsc --strict:\n${error.stdout ?? ''}${error.stderr ?? ''}`)
    })

    const { walkThrough } = await import(pathToFileURL(join(dir, 'test/client/walkthrough.ts')).href) as typeof import('./walkthrough.js')
    await walkThrough(baseUrl, ADMIN)
  })
})
