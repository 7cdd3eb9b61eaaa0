import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Identity } from '../auth/identity.js'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, ok } from '../http/schemas.js'
import { createApiKey, listApiKeys, revokeApiKey } from './api-keys.js'
import {
  ApiKey, ApiKeyParams, ChangePasswordBody, CreateApiKeyBody, CreatedApiKey, Member, PasswordResetBody, RegisterBody,
  UpdateMemberBody, VerifyEmailBody,
} from './schemas.js'
import { changePassword, getMember, registerMember, resetPassword, updateMember, verifyEmail, type MemberDeps } from './service.js'

export const memberRoutes: FastifyPluginAsyncTypebox<{ identity: Identity }> = async (app, { identity }) => {
  const tags = ['members']
  const deps: MemberDeps = { mailer: identity.mailer, revocations: identity.revocations, loginFailures: identity.loginFailures, log: app.log }

  app.post('/api/v1/members', {
    config: { access: 'public', authRateLimited: true },
    schema: {
      tags,
      operationId: 'registerMember',
      summary: 'Register a member',
      description: 'Mails a verification token to the address.',
      body: RegisterBody,
      response: { 201: Envelope(Member) },
    },
  }, async (request, reply) => {
    const member = await registerMember(app.db, deps, request.body)
    return reply.code(201).header('Location', `/api/v1/members/${member.memberId}`).send(ok(member))
  })

  app.get('/api/v1/members/me', {
    config: { access: 'member' },
    schema: { tags, operationId: 'getMyAccount', summary: 'The caller’s own account', description: 'The account of whoever the credential belongs to.', response: { 200: Envelope(Member) } },
  }, async (request) => ok(await getMember(app.db, principalOf(request), principalOf(request).memberId)))

  app.get('/api/v1/members/:id', {
    config: { access: 'owner' },
    schema: { tags, operationId: 'getMember', summary: 'A member (the member or an admin)', description: 'A member reads only their own account; an admin reads any. Another member gets 403 whether or not the id exists.', params: IdParams, response: { 200: Envelope(Member) } },
  }, async (request) => ok(await getMember(app.db, principalOf(request), request.params.id)))

  app.patch('/api/v1/members/:id', {
    config: { access: 'owner' },
    schema: {
      tags,
      operationId: 'updateMember',
      summary: 'Change a member’s name (the member or an admin)',
      description: 'Only the name can change here; role and status are changed by an admin through /admin/members/{id}.',
      params: IdParams,
      body: UpdateMemberBody,
      response: { 200: Envelope(Member) },
    },
  }, async (request) => ok(await updateMember(app.db, principalOf(request), request.params.id, request.body)))

  app.patch('/api/v1/members/password/change', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'changePassword',
      summary: 'Change the caller’s password',
      description: 'Ends every other session of the caller.',
      body: ChangePasswordBody,
      response: { 200: Envelope(Type.Null()) },
    },
  }, async (request) => {
    await changePassword(app.db, deps, principalOf(request), request.body)
    return ok(null)
  })

  app.post('/api/v1/members/password/reset', {
    config: { access: 'public', authRateLimited: true },
    schema: {
      tags,
      operationId: 'resetPassword',
      summary: 'Request a password reset, or complete one',
      description: '`{email}` mails a one-time token valid for 1 hour (the answer is the same whether or not the email has an account). `{token, newPassword}` sets the password and ends every session.',
      body: PasswordResetBody,
      response: { 201: Envelope(Type.Null()) },
    },
  }, async (request, reply) => {
    await resetPassword(app.db, deps, request.body)
    return reply.code(201).send(ok(null))
  })

  app.post('/api/v1/members/email/verify', {
    config: { access: 'public' },
    schema: {
      tags,
      operationId: 'verifyEmail',
      summary: 'Verify an email address with the token mailed at registration',
      description: 'The token works once, for 7 days; a bad, used or expired one is 400 INVALID_TOKEN.',
      body: VerifyEmailBody,
      response: { 201: Envelope(Type.Null()) },
    },
  }, async (request, reply) => {
    await verifyEmail(app.db, request.body.token)
    return reply.code(201).send(ok(null))
  })

  app.post('/api/v1/members/me/api-keys', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description: 'The secret is in this answer only; send it as X-API-Key to act as this member.',
      body: CreateApiKeyBody,
      response: { 201: Envelope(CreatedApiKey) },
    },
  }, async (request, reply) => reply.code(201).send(ok(await createApiKey(app.db, principalOf(request), request.body.name))))

  app.get('/api/v1/members/me/api-keys', {
    config: { access: 'member' },
    schema: { tags, operationId: 'listApiKeys', summary: 'List the caller’s API keys (without secrets)', description: 'Every key of the caller, revoked ones included (with revokedAt), newest last; the secrets are never shown again.', response: { 200: Envelope(Type.Array(ApiKey)) } },
  }, async (request) => ok(await listApiKeys(app.db, principalOf(request))))

  app.patch('/api/v1/members/me/api-keys/:keyId/revoke', {
    config: { access: 'member' },
    schema: {
      tags,
      operationId: 'revokeApiKey',
      summary: 'Revoke one of the caller’s API keys',
      description: 'The key stops working at once. Revoking it again changes nothing; a key of someone else is 404.',
      params: ApiKeyParams,
      response: { 200: Envelope(Type.Null()) },
    },
  }, async (request) => {
    await revokeApiKey(app.db, principalOf(request), request.params.keyId)
    return ok(null)
  })
}
