import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../helper.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SPECTRAL = join(ROOT, 'node_modules/.bin/spectral')

interface Finding { code: string, message: string, path: string[], severity: number }

describe('the OpenAPI document lints clean (Spectral, .spectral.yaml)', () => {
  let app: FastifyInstance
  let dir: string

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    dir = await mkdtemp(join(tmpdir(), 'spectral-'))
  })
  after(async () => {
    await app.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('has no errors, warnings, infos or hints', async () => {
    const res = await app.inject({ url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    const file = join(dir, 'openapi.json')
    await writeFile(file, res.body)
    // Exit code 1 means findings at or above --fail-severity; the JSON report says which.
    const { stdout } = await promisify(execFile)(SPECTRAL,
      ['lint', file, '--ruleset', join(ROOT, '.spectral.yaml'), '--format', 'json', '--fail-severity', 'hint', '--quiet'],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }
    ).catch((error: { stdout?: string, stderr?: string, code?: number }) => {
      if (error.code === 1 && error.stdout) return { stdout: error.stdout }
      throw new Error(`spectral failed to run (exit ${error.code}): ${error.stderr}`)
    })
    const findings = JSON.parse(stdout || '[]') as Finding[]
    const report = findings.map(f => `${f.code} at ${f.path.join('.')}: ${f.message}`)
    assert.deepEqual(report, [])
  })
})
