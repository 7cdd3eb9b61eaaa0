import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Envelope, ok } from '../http/schemas.js'

export const opsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/api/v1/health', {
    config: { access: 'public' },
    schema: {
      tags: ['operations'],
      summary: 'Is the service up',
      response: { 200: Envelope(Type.Object({ status: Type.Literal('UP') })) },
    },
  }, async () => ok({ status: 'UP' as const }))

  app.get('/v3/api-docs', {
    config: { access: 'public' },
    schema: { hide: true },
  }, async () => app.swagger())
}
