import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

export const opsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/v3/api-docs', {
    config: { access: 'public' },
    schema: { hide: true },
  }, async () => app.swagger())
}
