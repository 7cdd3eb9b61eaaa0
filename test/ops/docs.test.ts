import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, it, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { ERRORS } from '../../src/errors.js'
import { securityHeaders } from '../../src/http/security-headers.js'
import { assertError, STUCK_AFTER_MS, testConfig } from '../helper.js'

const CHROMIUM = '/usr/bin/chromium'

/** Debian's Chromium, headless, closed after the test; undefined (the test skipped, saying why) when it is not installed. */
async function launchChromium (t: TestContext) {
  if (!existsSync(CHROMIUM)) {
    t.skip('chromium not installed: apt-get install chromium')
    return undefined
  }
  const { chromium } = await import('playwright-core')
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] })
  t.after(() => browser.close())
  return browser
}
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

describe('reference docs', () => {
  let app: FastifyInstance
  let doc: any
  let operations: Array<{ method: string, path: string }>

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    doc = (await app.inject({ url: '/v3/api-docs' })).json()
    operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).filter(m => METHODS.includes(m)).map(method => ({ method, path })))
  })
  after(() => app.close())

  describe('/docs/index.html', () => {
    it('is one HTML page, and /docs and /docs/ lead to it', async () => {
      const res = await app.inject({ url: '/docs/index.html' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
      assert.match(res.body, /^<!DOCTYPE html>/)
      for (const url of ['/docs', '/docs/']) {
        const redirect = await app.inject({ url })
        assert.equal(redirect.statusCode, 302, url)
        assert.equal(redirect.headers.location, '/docs/index.html')
      }
      assert.equal((await app.inject({ method: 'HEAD', url: '/docs/index.html' })).statusCode, 200)
    })

    it('is self-contained: no script, no external stylesheet, font or image', async () => {
      const html = (await app.inject({ url: '/docs/index.html' })).body
      assert.doesNotMatch(html, /<script/i)
      assert.doesNotMatch(html, /<link[^>]+stylesheet/i)
      assert.doesNotMatch(html, /@import|url\(/i)
      assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//i, 'nothing from another origin')
    })

    it('lists every operation of the OpenAPI document, once, with its access', async () => {
      const html = (await app.inject({ url: '/docs/index.html' })).body
      const sections = html.match(/<section class="operation" id="[^"]+">/g) ?? []
      assert.equal(sections.length, operations.length)
      assert.ok(operations.length >= 49)
      for (const { method, path } of operations) {
        const heading = `<span class="method ${method}">${method.toUpperCase()}</span> <code class="path">${path}</code>`
        assert.equal(html.split(heading).length - 1, 1, `${method} ${path}`)
      }
      const createOrder = section(html, 'post-api-v1-orders')
      assert.match(createOrder, /Place an order/)
      assert.match(createOrder, /authenticated<\/span> bearer token/)
      assert.match(createOrder, /<code>items\[\]\.quantity<\/code><\/td><td>integer<\/td><td><strong>yes<\/strong><\/td><td>≥ 1; ≤ 10000/)
      assert.match(createOrder, /<code>idempotency-key<\/code><\/td><td>header/)
      assert.match(createOrder, /<code class="status s2">201<\/code>/)
      assert.match(section(html, 'get-api-v1-health'), /public<\/span> no credential needed/)
      assert.match(section(html, 'get-api-v1-orders-search'), /<code>createdFrom<\/code><\/td><td>query/)
    })

    it('has the guide and every error code of the catalogue with its status and title', async () => {
      const html = (await app.inject({ url: '/docs/index.html' })).body
      for (const heading of ['Authentication', 'Idempotency', 'Paging', 'Errors']) assert.match(html, new RegExp(`<h3>${heading}</h3>`))
      const codes = Object.entries(ERRORS)
      assert.equal((html.match(/<code id="error-[a-z-]+">/g) ?? []).length, codes.length)
      for (const [code, { status, title }] of codes) {
        assert.match(html, new RegExp(`<code id="error-[a-z-]+">${code}</code></td><td><code class="status s\\d">${status}</code></td><td>${title}</td>`), code)
      }
    })

    it('is in the OpenAPI document as an operations endpoint (CONTRACT §11), not an envelope', () => {
      assert.deepEqual(Object.keys(doc.paths).filter(path => /^\/(docs|swagger-ui)/.test(path)).sort(), ['/docs', '/docs/index.html', '/swagger-ui.html'])
      assert.deepEqual(doc.paths['/docs/index.html'].get.tags, ['operations'])
      assert.deepEqual(Object.keys(doc.paths['/docs/index.html'].get.responses['200'].content), ['text/html'])
    })
  })

  describe('/', () => {
    it('leads a person who opens the service\'s address to the reference page, for GET and HEAD, with or without a credential', async () => {
      for (const [method, headers] of [['GET', {}], ['HEAD', {}], ['GET', { authorization: 'Bearer not-a-token' }]] as const) {
        const res = await app.inject({ method, url: '/', headers })
        const { date, 'x-request-id': requestId, ...rest } = res.headers
        assert.equal(res.statusCode, 302, method)
        assert.deepEqual(rest, { ...securityHeaders(), location: '/docs/index.html', 'content-length': '0', connection: 'keep-alive' }, method)
        assert.match(String(requestId), /^[0-9a-f-]{36}$/)
        assert.ok(date)
        assert.equal(res.body, '')
      }
      const target = await app.inject({ url: (await app.inject({ url: '/?utm_source=x' })).headers.location as string })
      assert.equal(target.statusCode, 200)
      assert.match(target.body, /^<!DOCTYPE html>/)
    })

    it('answers other methods 405 with Allow, as every known path does', async () => {
      const res = await app.inject({ method: 'POST', url: '/', payload: {} })
      assert.equal(res.statusCode, 405)
      assert.equal(res.headers.allow, 'GET, HEAD')
      assertError(res, { code: 'METHOD_NOT_ALLOWED', instance: '/', detail: 'This path does not support that method; it supports GET, HEAD.' })
    })
  })

  describe('Swagger UI', () => {
    it('/swagger-ui.html leads to the UI, whose assets are served locally', async () => {
      const redirect = await app.inject({ url: '/swagger-ui.html' })
      assert.equal(redirect.statusCode, 302)
      assert.equal(redirect.headers.location, '/swagger-ui/')
      const page = await app.inject({ url: '/swagger-ui/' })
      assert.equal(page.statusCode, 200)
      assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
      const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(m => m[1]!)
      assert.ok(assets.length >= 4)
      for (const asset of assets) {
        assert.doesNotMatch(asset, /^(https?:)?\/\//, 'no CDN')
        const res = await app.inject({ url: new URL(asset, 'http://localhost/swagger-ui/').pathname })
        assert.equal(res.statusCode, 200, asset)
      }
      const initializer = await app.inject({ url: '/swagger-ui/static/swagger-initializer.js' })
      assert.match(initializer.body, /"url":"\/v3\/api-docs"/)
    })

    it('does not serve files outside its assets', async () => {
      for (const url of ['/swagger-ui/static/../../package.json', '/swagger-ui/static/%2e%2e/%2e%2e/package.json']) {
        assert.notEqual((await app.inject({ url })).statusCode, 200, url)
      }
    })
  })
})

function section (html: string, id: string): string {
  const start = html.indexOf(`<section class="operation" id="${id}">`)
  assert.notEqual(start, -1, id)
  return html.slice(start, html.indexOf('</section>', start))
}

describe('reference docs in Chromium', () => {
  let app: FastifyInstance
  let base: string

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  })
  after(() => app.close())

  it('renders /docs/index.html and Swagger UI offline, under the service CSP', async (t) => {
    const browser = await launchChromium(t)
    if (!browser) return
    const page = await browser.newPage()
    page.setDefaultTimeout(STUCK_AFTER_MS) // the browser waits for the page, however busy the machine
    const requests: string[] = []
    const problems: string[] = []
    page.on('request', request => requests.push(request.url()))
    page.on('console', message => { if (message.type() === 'error') problems.push(`${message.text()} ${message.location().url}`) })
    page.on('pageerror', error => problems.push(String(error)))
    page.on('response', response => { if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`) })

    await page.goto(`${base}/docs/index.html`)
    const text = await page.locator('body').innerText()
    assert.match(text, /POST\s+\/api\/v1\/orders/)
    assert.match(text, /IDEMPOTENCY_KEY_REUSED/)
    for (const heading of ['Authentication', 'Idempotency', 'Paging', 'Errors']) {
      assert.ok(await page.getByRole('heading', { name: heading, exact: true }).isVisible(), heading)
    }

    await page.goto(`${base}/swagger-ui.html`)
    assert.equal(new URL(page.url()).pathname, '/swagger-ui/')
    await page.locator('.opblock', { hasText: '/api/v1/orders' }).first().waitFor()
    assert.ok(await page.locator('.opblock').count() >= 49)

    assert.ok(requests.some(url => url === `${base}/v3/api-docs`), 'Swagger UI reads /v3/api-docs')
    const elsewhere = requests.filter(url => !url.startsWith(`${base}/`) && !url.startsWith('data:'))
    assert.deepEqual(elsewhere, [], 'every request stays on 127.0.0.1')
    assert.deepEqual(problems, [], 'no console errors (CSP or other)')
  })

  it('wraps a long path in the sidebar only after a slash, and the page never scrolls sideways', async (t) => {
    const browser = await launchChromium(t)
    if (!browser) return
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${base}/docs/index.html`)
    // Each character's line (its box's top); a new line must start right after a '/' or the space after the method.
    const { links, wrapped, midWord, width } = await page.evaluate(() => {
      // Runs in the page; the project compiles without the DOM's types.
      const { document, NodeFilter } = globalThis as any
      const found = { links: 0, wrapped: 0, midWord: [] as string[], width: [document.documentElement.scrollWidth, document.documentElement.clientWidth] }
      for (const link of document.querySelectorAll('nav li li li a')) {
        found.links++
        const chars: Array<{ char: string, top: number | undefined }> = []
        const walker = document.createTreeWalker(link, NodeFilter.SHOW_TEXT)
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (let i = 0; i < node.textContent.length; i++) {
            const range = document.createRange()
            range.setStart(node, i)
            range.setEnd(node, i + 1)
            chars.push({ char: node.textContent[i], top: range.getClientRects()[0]?.top })
          }
        }
        let line: number | undefined
        let lines = 0
        chars.forEach(({ top }, i) => {
          if (top === undefined) return
          if (line !== undefined && top > line + 1) {
            const before = chars[i - 1]!.char
            if (before !== '/' && before !== ' ') found.midWord.push(`${link.textContent} (after "${chars.slice(0, i).map(c => c.char).join('')}")`)
            lines++
          }
          line = top
        })
        if (lines > 0) found.wrapped++
      }
      return found
    })
    assert.ok(links >= 49, `${links} operations in the sidebar`)
    assert.ok(wrapped >= 10, `only ${wrapped} long paths wrapped: the test would see nothing`)
    assert.deepEqual(midWord, [])
    assert.deepEqual(width, [1280, 1280], 'as wide as the window')
  })
})
