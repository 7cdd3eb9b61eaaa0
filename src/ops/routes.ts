import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Envelope, ok } from '../http/schemas.js'

export const opsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/v1/health', {
    config: { access: 'public' },
    schema: {
      tags: ['operations'],
      operationId: 'getHealth',
      summary: 'Is the service up',
      description: 'Answers while the process serves requests; it checks no dependency. Operators use /actuator/health for the database.',
      response: { 200: Envelope(Type.Object({ status: Type.Literal('UP') })) },
    },
  }, async () => ok({ status: 'UP' as const }))

  app.get('/v3/api-docs', {
    config: { access: 'public' },
    schema: { hide: true },
  }, async () => app.swagger())
}
