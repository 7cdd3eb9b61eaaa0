import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, ok } from '../http/schemas.js'
import { Member, RegisterBody } from './schemas.js'
import { registerMember } from './service.js'

export const memberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/api/v1/members', {
    config: { access: 'public' },
    schema: {
      tags: ['members'],
      summary: 'Register a member',
      body: RegisterBody,
      response: { 201: Envelope(Member) },
    },
  }, async (request, reply) => {
    const member = await registerMember(app.db, request.body)
    return reply.code(201).header('Location', `/api/v1/members/${member.memberId}`)
      .send(ok(member))
  })
}
