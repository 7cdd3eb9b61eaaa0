// Compiles src/ to dist/ when dist/ is missing or older than its sources, so that `npm start` costs
// a compile only after a change: a start with nothing changed checks file times (milliseconds)
// instead of running tsc (seconds even when incremental).
//
//   node scripts/build.mjs           compile only when something changed since the last build
//   node scripts/build.mjs --always  compile in any case (`npm run build`)
//
// Plain JavaScript run by node itself: loading tsx or TypeScript would cost what this saves.
// The stamp dist/.build-stamp carries the time the last successful build started; a build counts
// as current when no input (a file or directory under src/, a tsconfig, package-lock.json) changed
// after it. Directories count too, so a deleted or renamed file is seen. A failed build leaves no
// stamp, so the next start tries again.
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative } from 'node:path'

const root = process.cwd()
const STAMP = join(root, 'dist', '.build-stamp')
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json']

/** The latest modification time (ms) of a file or directory tree, and the path that has it. */
function newest (path, found = { mtimeMs: 0, path: '' }) {
  let stats
  try {
    stats = statSync(path)
  } catch (error) {
    if (error.code === 'ENOENT') return found
    throw error
  }
  if (stats.mtimeMs > found.mtimeMs) found = { mtimeMs: stats.mtimeMs, path }
  if (stats.isDirectory()) {
    for (const entry of readdirSync(path)) found = newest(join(path, entry), found)
  }
  return found
}

/** Why a build is needed, or undefined when dist/ is current. */
function staleness () {
  let built
  try {
    built = statSync(STAMP).mtimeMs
  } catch {
    return 'no build yet'
  }
  let changed = newest(join(root, 'src'))
  for (const input of INPUTS) changed = newest(join(root, input), changed)
  return changed.mtimeMs > built ? `${relative(root, changed.path)} changed` : undefined
}

const always = process.argv.includes('--always')
const reason = always ? 'asked to' : staleness()
if (reason !== undefined) {
  const started = new Date()
  rmSync(STAMP, { force: true })
  process.stderr.write(`build: compiling src/ to dist/ (${reason})\n`)
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc')
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) {
    process.stderr.write('build: tsc failed; dist/ is not current\n')
    process.exit(result.status ?? 1)
  }
  // Stamped with the start time: a file saved while tsc ran is newer, and the next start compiles again.
  closeSync(openSync(STAMP, 'w'))
  utimesSync(STAMP, started, started)
}
