import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'

// scripts/build.mjs, as `npm start` runs it, on a small project with the repository's own tsconfigs:
// real node and tsc processes. Whether tsc ran is read from what it leaves behind (dist/'s files and
// their times), and from the one line the script writes when it compiles.

const ROOT = resolve(import.meta.dirname, '../..')
const SCRIPT = join(ROOT, 'scripts/build.mjs')

describe('scripts/build.mjs (npm start compiles only after a change)', () => {
  let dir: string
  const src = (name: string) => join(dir, 'src', name)
  const dist = (name: string) => join(dir, 'dist', name)

  const run = (...args: string[]) => {
    const result = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: dir, encoding: 'utf8' })
    return { status: result.status, stdout: result.stdout, stderr: result.stderr }
  }
  /** The modification times of what a compile writes. */
  const outputs = () => ['a.js', 'b.js', '.tsbuildinfo', '.build-stamp'].map(name => statSync(dist(name)).mtimeMs)
  const quiet = { status: 0, stdout: '', stderr: '' }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'order-build-'))
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(dir, file))
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
    mkdirSync(join(dir, 'src'))
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
    writeFileSync(src('a.ts'), "import { b } from './b.js'\nexport const a: string = b + 'a'\n")
    writeFileSync(src('b.ts'), "export const b: string = 'b'\n")
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('compiles when there is no build, then not again while nothing changed', () => {
    const first = run()
    assert.deepEqual(first, { status: 0, stdout: '', stderr: 'build: compiling src/ to dist/ (no build yet)\n' })
    assert.match(readFileSync(dist('a.js'), 'utf8'), /export const a = b \+ 'a';/)
    const built = outputs()

    assert.deepEqual(run(), quiet)
    assert.deepEqual(run(), quiet)
    assert.deepEqual(outputs(), built, 'dist/ untouched: tsc did not run')
  })

  it('compiles again after a source file changes, and only once', () => {
    writeFileSync(src('b.ts'), "export const b: string = 'changed'\n")
    assert.deepEqual(run(), { status: 0, stdout: '', stderr: 'build: compiling src/ to dist/ (src/b.ts changed)\n' })
    assert.match(readFileSync(dist('b.js'), 'utf8'), /export const b = 'changed';/)
    const built = outputs()
    assert.deepEqual(run(), quiet)
    assert.deepEqual(outputs(), built)

    const now = new Date()
    utimesSync(src('a.ts'), now, now) // touched, not changed: compiled all the same
    assert.equal(run().stderr, 'build: compiling src/ to dist/ (src/a.ts changed)\n')
    assert.deepEqual(run(), quiet)
  })

  it('compiles again after a file is added or deleted, or a tsconfig changes', () => {
    writeFileSync(src('c.ts'), 'export const c = 1\n')
    // The new file and its directory have the same time; either may be named.
    assert.match(run().stderr, /^build: compiling src\/ to dist\/ \(src(\/c\.ts)? changed\)\n$/)
    assert.ok(existsSync(dist('c.js')))
    assert.deepEqual(run(), quiet)

    rmSync(src('c.ts'))
    assert.equal(run().stderr, 'build: compiling src/ to dist/ (src changed)\n')
    assert.deepEqual(run(), quiet)

    writeFileSync(join(dir, 'tsconfig.build.json'), readFileSync(join(ROOT, 'tsconfig.build.json')))
    assert.equal(run().stderr, 'build: compiling src/ to dist/ (tsconfig.build.json changed)\n')
    assert.deepEqual(run(), quiet)
  })

  it('fails with tsc on a type error, and tries again on the next start', () => {
    const good = readFileSync(src('a.ts'), 'utf8')
    writeFileSync(src('a.ts'), good.replace("b + 'a'", '42'))
    const failed = run()
    assert.equal(failed.status, 2)
    assert.match(failed.stdout, /src\/a\.ts\(2,14\): error TS2322: Type 'number' is not assignable to type 'string'\./)
    assert.equal(failed.stderr, 'build: compiling src/ to dist/ (src/a.ts changed)\nbuild: tsc failed; dist/ is not current\n')
    assert.equal(existsSync(dist('.build-stamp')), false)

    assert.equal(run().stderr, 'build: compiling src/ to dist/ (no build yet)\nbuild: tsc failed; dist/ is not current\n')

    writeFileSync(src('a.ts'), good)
    assert.equal(run().stderr, 'build: compiling src/ to dist/ (no build yet)\n')
    assert.deepEqual(run(), quiet)
  })

  it('compiles in any case with --always (npm run build)', () => {
    const built = outputs()
    assert.deepEqual(run('--always'), { status: 0, stdout: '', stderr: 'build: compiling src/ to dist/ (asked to)\n' })
    assert.ok(statSync(dist('.build-stamp')).mtimeMs > built[3]!, 'stamped anew')
    assert.deepEqual(run(), quiet)
  })
})
