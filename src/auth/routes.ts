import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, ok } from '../http/schemas.js'
import { AdminUpdateMemberBody, Member, MyAccountEnvelope } from '../members/schemas.js'
import { unlinkIdentity } from '../members/service.js'
import type { Identity } from './identity.js'
import {
  ApiKey, ApiKeyParams, ChangePasswordBody, IdentityParams, CreateApiKeyBody, CreatedApiKey, LoginBody, PasswordResetBody, RefreshBody, TokenPair,
} from './schemas.js'
import {
  adminUpdateMember, changePassword, createApiKey, listApiKeys, login, logout, MAX_ACTIVE_API_KEYS, refresh, resetPassword, revokeApiKey,
  sessionRequired, type AuthDeps,
} from './service.js'

/**
 * Route hook of the routes that manage credentials: with an API key they are 403, decided with the
 * role check (after authentication, before the body is validated; CONTRACT §10 order).
 */
async function requireSession (request: FastifyRequest): Promise<void> {
  if (request.principal?.sessionId === null) throw sessionRequired()
}

/**
 * Sessions (login, refresh, logout) and the routes that change a member's credentials or end their
 * sessions: password change and reset, API keys, and an admin's change of role or status. The last
 * ones sit under /members and /admin/members, but they need the sessions, and members/ does not
 * depend on auth/.
 */
export const authRoutes: FastifyPluginAsyncTypebox<{ identity: Identity }> = async (app, { identity }) => {
  const tags = ['auth']
  const deps: AuthDeps = {
    tokens: identity.tokens,
    revocations: identity.revocations,
    loginFailures: identity.loginFailures,
    mailer: identity.mailer,
    log: app.log,
  }

  app.post('/api/v1/auth/login', {
    config: { access: 'public', authRateLimited: true, errors: ['UNAUTHORIZED', 'ACCOUNT_SUSPENDED'] },
    schema: {
      tags,
      operationId: 'login',
      summary: 'Log in with email and password',
      description: 'Returns an access token (a JWT valid for 15 minutes) and a refresh token (14 days). Failed attempts are counted per email and client address, and per email across all addresses; while either budget is spent the answer is 429, even with the right password. Alternatively `{loginCode}` alone trades the one-time code (60 s) that an OpenID sign-in with a redirect_uri handed over (GET /oauth2/authorization/{id}); an unknown, used or expired code is 401 like a wrong password, and loginCode with email or password is 400 naming loginCode.',
      body: LoginBody,
      response: { 201: Envelope(TokenPair) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await login(app.db, deps, request.body, request.ip))))

  app.post('/api/v1/auth/refresh', {
    config: { access: 'public', authRateLimited: true, errors: ['UNAUTHORIZED'] },
    schema: {
      tags,
      operationId: 'refreshTokens',
      summary: 'Exchange a refresh token for a new token pair',
      description: 'Each refresh token works once. Presenting a spent one again revokes the whole session.',
      body: RefreshBody,
      response: { 201: Envelope(TokenPair) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await refresh(app.db, deps, request.body.refreshToken))))

  app.post('/api/v1/auth/logout', {
    config: { access: 'member', authRateLimited: true, errors: ['ACCESS_DENIED'] },
    onRequest: requireSession,
    schema: {
      tags,
      operationId: 'logout',
      summary: 'End the current session',
      description: 'The session’s refresh token and access tokens are rejected from then on, on every instance. Needs a bearer session: with X-API-Key, 403.',
      response: { 201: Envelope(Type.Null()) },
    },
  }, async (request, reply) => {
    await logout(app.db, deps, principalOf(request))
    return reply.code(201).send(ok(null))
  })

  const memberTags = ['members']

  app.patch('/api/v1/members/password/change', {
    config: { access: 'member', authRateLimited: true, errors: ['ACCESS_DENIED'] },
    onRequest: requireSession,
    schema: {
      tags: memberTags,
      operationId: 'changePassword',
      summary: 'Change the caller’s password',
      description: 'Ends every other session of the caller and spends their outstanding reset tokens; API keys keep working. A wrong currentPassword counts as a failed login. A member without a password (signed up through an OpenID provider) leaves currentPassword out to set a first one; anyone else must send it. Needs a bearer session: with X-API-Key, 403.',
      body: ChangePasswordBody,
      response: { 200: Envelope(Type.Null()) },
    },
  }, async (request) => {
    await changePassword(app.db, deps, principalOf(request), request.body, request.ip)
    return ok(null)
  })

  app.post('/api/v1/members/password/reset', {
    config: { access: 'public', authRateLimited: true, errors: ['INVALID_TOKEN'] },
    schema: {
      tags: memberTags,
      operationId: 'resetPassword',
      summary: 'Request a password reset, or complete one',
      description: '`{email}` mails a one-time token valid for 1 hour (the answer is the same whether or not the email has an account). `{token, newPassword}` sets the password, ends every session and revokes every API key of the member.',
      body: PasswordResetBody,
      response: { 201: Envelope(Type.Null()) },
    },
  }, async (request, reply) => {
    await resetPassword(app.db, deps, request.body, request.ip)
    return reply.code(201).send(ok(null))
  })

  app.post('/api/v1/members/me/api-keys', {
    config: { access: 'member', authRateLimited: true, errors: ['ACCESS_DENIED', 'API_KEY_LIMIT_REACHED'] },
    onRequest: requireSession,
    schema: {
      tags: memberTags,
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description: `The secret is in this answer only; send it as X-API-Key to act as this member. At most ${MAX_ACTIVE_API_KEYS} active keys per member (one more: 409 API_KEY_LIMIT_REACHED). Needs a bearer session: with X-API-Key, 403.`,
      body: CreateApiKeyBody,
      response: { 201: Envelope(CreatedApiKey) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await createApiKey(app.db, principalOf(request), request.body.name))))

  app.get('/api/v1/members/me/api-keys', {
    config: { access: 'member', errors: ['ACCESS_DENIED'] },
    onRequest: requireSession,
    schema: { tags: memberTags, operationId: 'listApiKeys', summary: 'List the caller’s API keys (without secrets)', description: 'Every key of the caller, revoked ones included (with revokedAt), newest last; the secrets are never shown again. Needs a bearer session: with X-API-Key, 403.', response: { 200: Envelope(Type.Array(ApiKey)) } },
  }, async (request) => ok(await listApiKeys(app.db, principalOf(request))))

  app.patch('/api/v1/members/me/api-keys/:keyId/revoke', {
    config: { access: 'member', errors: ['ACCESS_DENIED', 'API_KEY_NOT_FOUND'] },
    onRequest: requireSession,
    schema: {
      tags: memberTags,
      operationId: 'revokeApiKey',
      summary: 'Revoke one of the caller’s API keys',
      description: 'The key stops working at once. Revoking it again changes nothing; a key of someone else is 404. Needs a bearer session: with X-API-Key, 403.',
      params: ApiKeyParams,
      response: { 200: Envelope(Type.Null()) },
    },
  }, async (request) => {
    await revokeApiKey(app.db, principalOf(request), request.params.keyId)
    return ok(null)
  })

  app.patch('/api/v1/members/me/identities/:provider/unlink', {
    config: { access: 'member', errors: ['ACCESS_DENIED', 'IDENTITY_NOT_FOUND', 'LAST_SIGN_IN_METHOD'] },
    onRequest: requireSession,
    schema: {
      tags: memberTags,
      operationId: 'unlinkIdentity',
      summary: 'Unlink the caller’s accounts at one OpenID provider',
      description: 'Removes every link between the caller and accounts at this provider (its registration id, as listed in identityProviders of GET /members/me); signing in through it then no longer reaches this account. Answers the account as GET /members/me shows it. Nothing linked through it: 404 IDENTITY_NOT_FOUND. It would leave no way to sign in (no password and no other provider): 400 LAST_SIGN_IN_METHOD. Needs a bearer session: with X-API-Key, 403.',
      params: IdentityParams,
      response: { 200: MyAccountEnvelope },
    },
  }, async (request) => ok(await unlinkIdentity(app.db, principalOf(request), request.params.provider)))

  const adminTags = ['admin']

  app.patch('/api/v1/admin/members/:id', {
    config: { access: 'admin', errors: ['MEMBER_NOT_FOUND'] },
    schema: {
      tags: adminTags,
      operationId: 'adminUpdateMember',
      summary: 'Change a member\'s role, status or name',
      description: 'A new role or a suspension ends the member\'s sessions: they sign in again (a suspended member cannot until reinstated). An admin cannot change their own role or status.',
      params: IdParams,
      body: AdminUpdateMemberBody,
      response: { 200: Envelope(Member) },
    },
  }, async (request) => ok(await adminUpdateMember(app.db, deps, principalOf(request), request.params.id, request.body)))
}
