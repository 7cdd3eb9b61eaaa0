import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, ok } from '../http/schemas.js'
import type { Mailer } from '../mail/mailer.js'
import { Member, MyAccount, RegisterBody, UpdateMemberBody, VerifyEmailBody } from './schemas.js'
import { getMember, getMyAccount, registerMember, updateMember, verifyEmail, type MailDeps } from './service.js'

/**
 * Accounts: registration, the member's own record, email verification. Password change and reset and
 * API keys are in auth/routes.ts: they end sessions or are credentials.
 */
export const memberRoutes: FastifyPluginAsyncTypebox<{ identity: { mailer: Mailer } }> = async (app, { identity }) => {
  const tags = ['members']
  const deps: MailDeps = { mailer: identity.mailer, log: app.log }

  app.post('/api/v1/members', {
    config: { access: 'public', authRateLimited: true, errors: ['EMAIL_ALREADY_REGISTERED'], sends: ['Location'] },
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
    schema: { tags, operationId: 'getMyAccount', summary: 'The caller’s own account', description: 'The account of whoever the credential belongs to, with the registration ids of the OpenID providers linked to it.', response: { 200: Envelope(MyAccount) } },
  }, async (request) => ok(await getMyAccount(app.db, principalOf(request))))

  app.get('/api/v1/members/:id', {
    config: { access: 'owner', errors: ['MEMBER_NOT_FOUND'] },
    schema: { tags, operationId: 'getMember', summary: 'A member (the member or an admin)', description: 'A member reads only their own account; an admin reads any. Another member gets 403 whether or not the id exists.', params: IdParams, response: { 200: Envelope(Member) } },
  }, async (request) => ok(await getMember(app.db, principalOf(request), request.params.id)))

  app.patch('/api/v1/members/:id', {
    config: { access: 'owner', errors: ['MEMBER_NOT_FOUND'] },
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

  app.post('/api/v1/members/email/verify', {
    config: { access: 'public', errors: ['INVALID_TOKEN'] },
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
}
