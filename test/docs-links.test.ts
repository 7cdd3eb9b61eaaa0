import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'

// The repository stands on its own: no link leaves it (but for the service on this machine), every relative link in its Markdown (README.md, client/README.md,
// docs/*.md, and any other .md it has) leads to a file of the repository, and an anchor (`#…`) to a
// heading of that file. A link to ../shared/… or to dist/ works only on one machine.

const ROOT = resolve(import.meta.dirname, '..')
/** Directories a clone does not have (or that are not the project's own). */
const NOT_IN_A_CLONE = new Set(['node_modules', 'dist', 'data', 'coverage', 'scratch', '.git'])

function markdownFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_IN_A_CLONE.has(entry.name)) return []
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return markdownFiles(path)
    return entry.name.endsWith('.md') ? [path] : []
  })
}

/** The text without fenced code blocks and code spans, where `[x](y)` is not a link. */
function prose (markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`]*?\1/g, '')
}

/** Every link target: inline `[x](target "title")`, reference definitions `[x]: target`, and `<a href="target">`. */
function linkTargets (markdown: string): string[] {
  const text = prose(markdown)
  return [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+["'(][^)]*)?\)/g)].map(m => m[1]!),
    ...[...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)/gm)].map(m => m[1]!),
    ...[...text.matchAll(/<a\s[^>]*?href\s*=\s*["']([^"']*)["']/gi)].map(m => m[1]!),
  ]
}

/** The anchors of a Markdown file's headings, as GitHub makes them (`## The feed` → `the-feed`, repeats `-1`, `-2`). */
function headingAnchors (markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '')
  for (const [, heading] of text.matchAll(/^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = heading!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

/** What is wrong with each relative link of `file` (a path under `root`), as `file: target: reason`. */
function brokenLinks (root: string, file: string, markdown: string): string[] {
  const problems: string[] = []
  const name = relative(root, file)
  for (const target of linkTargets(markdown)) {
    const fail = (reason: string) => problems.push(`${name}: ${target}: ${reason}`)
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) {
      // A link to a site: only to the service running on this machine (the walk-throughs); nothing else outside the repository.
      if (!/^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?(\/|$)/.test(target)) fail('leaves the repository')
      continue
    }
    const [path = '', fragment] = target.split('#', 2) as [string, string | undefined]
    if (path === '') {
      if (fragment !== undefined && !headingAnchors(markdown).has(decodeURIComponent(fragment))) fail('no such heading')
      continue
    }
    if (isAbsolute(path)) { fail('absolute path; links are relative to the file'); continue }
    const resolved = resolve(dirname(file), decodeURIComponent(path))
    const inside = relative(root, resolved)
    if (inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) { fail('outside the repository'); continue }
    if (NOT_IN_A_CLONE.has(inside.split(sep)[0]!)) { fail('not in a clone'); continue }
    if (!existsSync(resolved)) { fail('no such file'); continue }
    if (fragment !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile() &&
      !headingAnchors(readFileSync(resolved, 'utf8')).has(decodeURIComponent(fragment))) fail('no such heading')
  }
  return problems
}

describe('links in the documentation', () => {
  const files = markdownFiles(ROOT)

  it('finds the README, the client README and every page of docs/', () => {
    const names = files.map(file => relative(ROOT, file))
    for (const name of ['README.md', 'client/README.md', 'docs/decisions.md', 'docs/events.md', 'docs/operations.md']) {
      assert.ok(names.includes(name), name)
    }
    assert.ok(linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8')).length >= 10)
  })

  it('lead to files of the repository and headings that exist', () => {
    const problems = files.flatMap(file => brokenLinks(ROOT, file, readFileSync(file, 'utf8')))
    assert.deepEqual(problems, [])
  })

  it('are all found, and a link out of the repository, to a missing file or heading, or into dist/ is refused', () => {
    const file = join(ROOT, 'docs/example.md')
    const markdown = [
      '# Example page', '## Second `part`', '## Second part', '',
      'See [the spec](../../shared/seed/order-api-spec.md) and [contract][c], and <a href="../../elsewhere.md">this</a>.',
      '[a gone page](gone.md), [a gone heading](events.md#no-such-heading), [built](../dist/server.js), [root](/README.md).',
      '[fine](events.md#the-feed), [fine too](../README.md#quick-start "title"), [here](#second-part-1), [not here](#third-part), [site](https://example.com), [local](http://localhost:8080/docs/)',
      '`[in code](../nowhere.md)`', '```', '[in a block](../nowhere.md)', '```', '',
      '[c]: ../../shared/CONTRACT.md',
    ].join('\n')
    assert.deepEqual(brokenLinks(ROOT, file, markdown), [
      'docs/example.md: ../../shared/seed/order-api-spec.md: outside the repository',
      'docs/example.md: gone.md: no such file',
      'docs/example.md: events.md#no-such-heading: no such heading',
      'docs/example.md: ../dist/server.js: not in a clone',
      'docs/example.md: /README.md: absolute path; links are relative to the file',
      'docs/example.md: #third-part: no such heading',
      'docs/example.md: https://example.com: leaves the repository',
      'docs/example.md: ../../shared/CONTRACT.md: outside the repository',
      'docs/example.md: ../../elsewhere.md: outside the repository',
    ])
    assert.deepEqual([...headingAnchors(markdown)], ['example-page', 'second-part', 'second-part-1'])
  })
})
