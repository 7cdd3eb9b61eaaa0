import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../helper.js'

type Doc = any

/** Every operation of the document as [key, operation]. */
function operations (doc: Doc): Array<[string, any]> {
  return Object.entries(doc.paths as Record<string, Record<string, any>>)
    .flatMap(([path, item]) => Object.entries(item).map(([method, operation]): [string, any] => [`${method} ${path}`, operation]))
}

describe('the OpenAPI document’s examples, webhooks and headers', () => {
  let app: FastifyInstance
  let doc: Doc

  before(async () => {
    app = await buildApp(testConfig(), { logger: false })
    const res = await app.inject({ url: '/v3/api-docs' })
    assert.equal(res.statusCode, 200)
    doc = res.json()
  })
  after(() => app.close())

  it('pre-fills no optional query parameter: optional filters carry no example, so Swagger UI’s "Try it out" filters nothing', () => {
    const prefilled: string[] = []
    for (const [key, operation] of operations(doc)) {
      for (const parameter of (operation.parameters ?? []).filter((p: any) => p.in === 'query' && p.required !== true)) {
        if (parameter.example !== undefined || parameter.examples !== undefined || parameter.schema?.example !== undefined ||
          parameter.schema?.examples !== undefined || (parameter.schema?.default !== undefined && !['size', 'page'].includes(parameter.name))) {
          prefilled.push(`${key} ${parameter.name}`)
        }
      }
    }
    assert.deepEqual(prefilled, [])
    // The filters still say how they are written.
    const status = doc.paths['/api/v1/orders'].get.parameters.find((p: any) => p.name === 'status')
    assert.match(status.description, /e\.g\. `PLACED,CONFIRMED`/)
  })
})
