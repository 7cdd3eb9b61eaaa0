import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { BACKENDS, createTestDatabase, testConfig, waitFor } from '../helper.js'

// Two instances of the service on one database, as behind a load balancer.
for (const backend of BACKENDS) {
  describe(`two instances on one database [${backend}]`, () => {
    let database: DatabaseHandle
    let a: FastifyInstance
    let b: FastifyInstance
    before(async () => {
      database = await createTestDatabase(backend)
      a = await buildApp(testConfig(), { database, logger: false, revocationPollMs: 100 })
      b = await buildApp(testConfig(), { database, logger: false, revocationPollMs: 100 })
    })
    after(async () => {
      await a?.close()
      await b?.close()
      await database?.close()
    })

    async function session (app: FastifyInstance, email: string) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: 'correct horse' } })
      assert.equal(res.statusCode, 201, res.body)
      return res.json().data as { accessToken: string, refreshToken: string }
    }
    const me = (app: FastifyInstance, token: string) =>
      app.inject({ url: '/api/v1/members/me', headers: { authorization: `Bearer ${token}` } })

    it("accept each other's tokens and see each other's logouts", async () => {
      const email = `both-${Date.now()}@example.com`
      assert.equal((await a.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name: 'B' } })).statusCode, 201)
      const fromA = await session(a, email)
      const fromB = await session(b, email)
      assert.equal((await me(b, fromA.accessToken)).statusCode, 200)
      assert.equal((await me(a, fromB.accessToken)).statusCode, 200)

      // A refresh token issued by A is exchanged at B.
      const rotated = await b.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken: fromA.refreshToken } })
      assert.equal(rotated.statusCode, 201)
      const token = rotated.json().data.accessToken as string

      // Logout at A: A rejects at once, B within its poll interval.
      assert.equal((await a.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${token}` } })).statusCode, 201)
      assert.equal((await me(a, token)).statusCode, 401)
      await waitFor(async () => (await me(b, token)).statusCode === 401)
      assert.equal((await me(b, fromA.accessToken)).statusCode, 401) // the same session's earlier token
      assert.equal((await me(b, fromB.accessToken)).statusCode, 200) // another session is untouched
    })
  })
}
