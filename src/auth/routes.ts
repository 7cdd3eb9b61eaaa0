import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { principalOf } from '../http/access.js'
import { Envelope, ok } from '../http/schemas.js'
import type { Identity } from './identity.js'
import { LoginBody, RefreshBody, TokenPair } from './schemas.js'
import { login, logout, refresh } from './service.js'

export const authRoutes: FastifyPluginAsyncTypebox<{ identity: Identity }> = async (app, { identity }) => {
  const tags = ['auth']

  app.post('/api/v1/auth/login', {
    config: { access: 'public', authRateLimited: true },
    schema: {
      tags,
      operationId: 'login',
      summary: 'Log in with email and password',
      description: 'Returns an access token (a JWT valid for 15 minutes) and a refresh token (14 days). Failed attempts are counted per email; too many answer 429.',
      body: LoginBody,
      response: { 201: Envelope(TokenPair) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await login(app.db, identity, request.body))))

  app.post('/api/v1/auth/refresh', {
    config: { access: 'public', authRateLimited: true },
    schema: {
      tags,
      operationId: 'refreshTokens',
      summary: 'Exchange a refresh token for a new token pair',
      description: 'Each refresh token works once. Presenting a spent one again revokes the whole session.',
      body: RefreshBody,
      response: { 201: Envelope(TokenPair) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await refresh(app.db, identity, request.body.refreshToken))))

  app.post('/api/v1/auth/logout', {
    config: { access: 'member', authRateLimited: true },
    schema: {
      tags,
      operationId: 'logout',
      summary: 'End the current session',
      description: 'The session’s refresh token and access tokens are rejected from then on, on every instance.',
      response: { 201: Envelope(Type.Null()) },
    },
  }, async (request, reply) => {
    await logout(app.db, identity, principalOf(request))
    return reply.code(201).send(ok(null))
  })
}
