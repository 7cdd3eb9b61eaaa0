/**
 * Summarises a V8 CPU profile (from `npm run bench -- --profile`, or any `node --cpu-prof` run):
 * self time by function, by file and by package. Idle time is left out: the shares are of the time
 * the main thread was busy (JavaScript, native code it called, garbage collection, "(program)").
 * With `--requests=N`, each line also shows µs per request (self time ÷ N). For a flame graph, load
 * the same file in Chrome DevTools (Performance, "Load profile") or in speedscope.
 *
 *   node bench/profile-top.mjs [file.cpuprofile] [rows] [--requests=N] [--window=FROM,TO]
 *
 * file defaults to the newest in bench/profiles/. --window keeps the samples taken between FROM and
 * TO seconds before the profile's end (the bench passes its measured window, so that start-up and
 * warm-up are left out).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const args = process.argv.slice(2)
const option = name => args.find(arg => arg.startsWith(`--${name}=`))?.slice(name.length + 3)
const positional = args.filter(arg => !arg.startsWith('--'))
const dir = fileURLToPath(new URL('./profiles', import.meta.url))
const file = positional[0] || readdirSync(dir).filter(name => name.endsWith('.cpuprofile'))
  .map(name => join(dir, name)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
if (!file) throw new Error(`no .cpuprofile in ${dir}; run npm run bench -- --profile first`)
const rowsShown = Number(positional[1] ?? 30)
const requests = option('requests') ? Number(option('requests')) : undefined
const window = option('window')?.split(',').map(Number)
const { nodes, samples, timeDeltas, endTime } = JSON.parse(readFileSync(file, 'utf8'))

// Sample i was taken at startTime + the sum of timeDeltas[0..i] (µs); the window is relative to the end.
const last = timeDeltas.reduce((at, delta) => at + delta, 0)
const [from, to] = window ? [last - window[0] * 1e6, last - window[1] * 1e6] : [-Infinity, Infinity]
const timeOf = new Map()
let at = 0
let windowUs = 0
samples.forEach((id, i) => {
  at += timeDeltas[i] ?? 0
  if (at < from || at > to) return
  const delta = timeDeltas[i + 1] ?? 0 // the time until the next sample is this sample's
  windowUs += delta
  timeOf.set(id, (timeOf.get(id) ?? 0) + delta)
})

const where = url => {
  const path = url.replace(/^file:\/\//, '')
  const inModules = path.split('node_modules/')[1]
  return inModules ?? path.replace(/^.*?\/(dist|src|bench)\//, '$1/')
}
const packageOf = ({ url, functionName }) => {
  if (!url) return functionName || '(native)'
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0]
  const inModules = url.split('node_modules/')[1]
  if (inModules) return inModules.split('/').slice(0, inModules.startsWith('@') ? 2 : 1).join('/')
  return 'the service'
}
const fileOf = ({ url, functionName }) => url ? where(url) : (functionName || '(native)')

const IDLE = '(idle)'
const byFunction = new Map()
const byFile = new Map()
const byPackage = new Map()
let busy = 0
let idle = 0
for (const node of nodes) {
  const time = timeOf.get(node.id) ?? 0
  if (!time) continue
  const { functionName, url, lineNumber } = node.callFrame
  if (functionName === IDLE) { idle += time; continue }
  busy += time
  const fn = `${functionName || '(anonymous)'} ${url ? `${where(url)}:${lineNumber + 1}` : ''}`.trim()
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + time)
  byFile.set(fileOf(node.callFrame), (byFile.get(fileOf(node.callFrame)) ?? 0) + time)
  byPackage.set(packageOf(node.callFrame), (byPackage.get(packageOf(node.callFrame)) ?? 0) + time)
}

const print = (title, map) => {
  console.log(`\n${title}`)
  console.log(`${'share'.padStart(6)}  ${requests ? `${'µs/req'.padStart(7)}  ` : ''}name`)
  for (const [name, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rowsShown)) {
    console.log(`${(100 * time / busy).toFixed(1).padStart(5)}%  ${requests ? `${(time / requests).toFixed(1).padStart(7)}  ` : ''}${name}`)
  }
}
const sampled = windowUs || (endTime ? last : 0)
console.log(`${file}: ${(sampled / 1e6).toFixed(1)} s sampled${window ? ` (the window ${window[0]}–${window[1]} s before the end)` : ''}, ` +
  `main thread busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s` +
  (requests ? `; ${requests} requests: ${(busy / requests).toFixed(0)} µs busy per request` : ''))
print('self time by function (share of busy time)', byFunction)
print('self time by file', byFile)
print('self time by package', byPackage)
