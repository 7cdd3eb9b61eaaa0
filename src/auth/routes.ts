import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, ok } from '../http/schemas.js'
import { LoginBody, TokenResponse } from './schemas.js'
import { login } from './service.js'
import type { AccessTokens } from './tokens.js'

export const authRoutes: FastifyPluginAsyncTypebox<{ tokens: AccessTokens }> = async (app, { tokens }) => {
  app.post('/api/v1/auth/login', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      summary: 'Log in with email and password',
      body: LoginBody,
      response: { 201: Envelope(TokenResponse) },
    },
  }, async (request, reply) => {
    const tokenPair = await login(app.db, tokens, request.body)
    return reply.code(201).send(ok(tokenPair))
  })
}
