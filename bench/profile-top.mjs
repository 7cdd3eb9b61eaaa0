/**
 * Summarises a V8 CPU profile (from `npm run bench -- --profile`, or any `node --cpu-prof` run):
 * self time by function and by package, as shares of the sampled time. For a flame graph, load the
 * same file in Chrome DevTools (Performance, "Load profile") or in speedscope.
 *
 *   node bench/profile-top.mjs [file.cpuprofile] [rows]     # default: the newest in bench/profiles/
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('./profiles', import.meta.url))
const file = process.argv[2] || readdirSync(dir).filter(name => name.endsWith('.cpuprofile'))
  .map(name => join(dir, name)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
if (!file) throw new Error(`no .cpuprofile in ${dir}; run npm run bench -- --profile first`)
const rowsShown = Number(process.argv[3] ?? 30)
const { nodes, samples, timeDeltas } = JSON.parse(readFileSync(file, 'utf8'))

const timeOf = new Map()
samples.forEach((id, i) => timeOf.set(id, (timeOf.get(id) ?? 0) + (timeDeltas[i] ?? 0)))

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

const byFunction = new Map()
const byPackage = new Map()
let total = 0
for (const node of nodes) {
  const time = timeOf.get(node.id) ?? 0
  if (!time) continue
  total += time
  const { functionName, url, lineNumber } = node.callFrame
  const fn = `${functionName || '(anonymous)'} ${url ? `${where(url)}:${lineNumber + 1}` : ''}`.trim()
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + time)
  const pkg = packageOf(node.callFrame)
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + time)
}

const print = (title, map) => {
  console.log(`\n${title}`)
  for (const [name, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rowsShown)) {
    console.log(`${(100 * time / total).toFixed(1).padStart(6)}%  ${name}`)
  }
}
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`)
print('self time by function', byFunction)
print('self time by package', byPackage)
