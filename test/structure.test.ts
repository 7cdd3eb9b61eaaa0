import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'

// The layering of docs/architecture.md, checked on the source itself: imports point one way
// (features → http/ → db/ → the root modules), with no circle anywhere in src/.

const SRC = resolve(import.meta.dirname, '../src')

interface Import { target: string, typeOnly: boolean }

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** Every relative import of every file under src/, as paths relative to src/. */
function importGraph (): Map<string, Import[]> {
  const graph = new Map<string, Import[]>()
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8')
    const imports: Import[] = []
    const statements = /(?:^|\n)\s*(import|export)(\s+type)?\b[^'"]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g
    for (const match of text.matchAll(statements)) {
      const spec = (match[3] ?? match[4])!
      const target = relative(SRC, resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      imports.push({ target, typeOnly: match[2] !== undefined })
    }
    graph.set(relative(SRC, file), imports)
  }
  return graph
}

/** The strongly connected components with more than one file (Tarjan). */
function circles (graph: Map<string, Import[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (file: string): void => {
    index.set(file, next); low.set(file, next); next++
    stack.push(file); onStack.add(file)
    for (const { target } of graph.get(file) ?? []) {
      if (!graph.has(target)) continue
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = []
      let member: string
      do { member = stack.pop()!; onStack.delete(member); component.push(member) } while (member !== file)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return found
}

const layerOf = (file: string) => file.includes('/') ? file.slice(0, file.indexOf('/')) : file
const ROOT_MODULES = new Set(['config.ts', 'errors.ts', 'limits.ts'])

describe('source layout', () => {
  const graph = importGraph()

  it('finds the source files it checks', () => {
    assert.ok(graph.size > 50, `only ${graph.size} files found under src/`)
    assert.ok(graph.get('orders/routes.ts')!.length > 0)
  })

  it('has no import circle in src/', () => {
    assert.deepEqual(circles(graph), [])
  })

  it('keeps the root modules (errors, limits) free of imports from the rest of src/', () => {
    for (const file of ['errors.ts', 'limits.ts']) {
      assert.deepEqual(graph.get(file), [], `${file} imports from src/`)
    }
  })

  it('lets db/ import only db/, migrations/, the root modules and the table types', () => {
    const wrong = [...graph].filter(([file]) => layerOf(file) === 'db').flatMap(([file, imports]) =>
      imports.filter(({ target, typeOnly }) =>
        !['db', 'migrations'].includes(layerOf(target)) && !ROOT_MODULES.has(target) &&
        !(typeOnly && target.endsWith('/table.ts'))
      ).map(({ target }) => `${file} → ${target}`))
    assert.deepEqual(wrong, [])
  })

  it('lets http/ import only http/, db/ and the root modules, never a feature', () => {
    const wrong = [...graph].filter(([file]) => layerOf(file) === 'http').flatMap(([file, imports]) =>
      imports.filter(({ target }) => !['http', 'db'].includes(layerOf(target)) && !ROOT_MODULES.has(target))
        .map(({ target }) => `${file} → ${target}`))
    assert.deepEqual(wrong, [])
  })

  it('keeps db/schema.ts to table types', () => {
    const text = readFileSync(join(SRC, 'db/schema.ts'), 'utf8')
    assert.doesNotMatch(text, /^export (const|function|let|class)\b/m)
    assert.ok(graph.get('db/schema.ts')!.every(({ typeOnly }) => typeOnly))
  })

  it('has no service that chooses an HTTP status or a URL path', () => {
    const services = [...graph.keys()].filter((file) => /(^|\/)service\.ts$/.test(file))
    assert.ok(services.length >= 5, `services found: ${services.join(', ')}`)
    const wrong = services.filter((file) => {
      const text = readFileSync(join(SRC, file), 'utf8')
      return /\bstatus:\s*[1-5]\d\d\b|['"`]\/api\/v\d|\blocation\s*:\s*['"`]/i.test(text)
    })
    assert.deepEqual(wrong, [])
  })

  it('gives every feature folder the same shape', () => {
    const features = ['auth', 'catalog', 'events', 'members', 'orders', 'payments']
    const missing = features.flatMap((feature) =>
      ['routes.ts', 'schemas.ts', 'service.ts', 'repository.ts', 'table.ts']
        .filter((role) => !graph.has(`${feature}/${role}`))
        .map((role) => `${feature}/${role}`))
    assert.deepEqual(missing, [])
  })
})
