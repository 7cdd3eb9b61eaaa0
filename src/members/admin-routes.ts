import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyPluginOptions } from 'fastify'
import { principalOf } from '../http/access.js'
import { Envelope, IdParams, Page, ok } from '../http/schemas.js'
import { AdminMemberListQuery, AdminMemberSearchQuery, Member } from './schemas.js'
import { getMember, pageAllMembers } from './service.js'

/**
 * The back office's members: list, search, read. Changes of role, status and name are in
 * auth/routes.ts, as a new role or a suspension ends the member's sessions. (No options needed;
 * app.ts still passes the identity.)
 */
export const adminMemberRoutes: FastifyPluginAsyncTypebox<FastifyPluginOptions> = async (app) => {
  const tags = ['admin']

  app.get('/api/v1/admin/members', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'adminListMembers',
      summary: 'List members (page shape)',
      description: 'Every member in the offset (page) shape; filters role and status; sort by createdAt, email or name.',
      querystring: AdminMemberListQuery,
      response: { 200: Envelope(Page(Member)) },
    },
  }, async (request) => ok(await pageAllMembers(app.db, request.query)))

  app.get('/api/v1/admin/members/search', {
    config: { access: 'admin' },
    schema: {
      tags,
      operationId: 'adminSearchMembers',
      summary: 'Search members by email or name (page shape)',
      description: 'The list’s filters plus q, a case-insensitive part of the email or the name.',
      querystring: AdminMemberSearchQuery,
      response: { 200: Envelope(Page(Member)) },
    },
  }, async (request) => ok(await pageAllMembers(app.db, request.query)))

  app.get('/api/v1/admin/members/:id', {
    config: { access: 'admin', errors: ['MEMBER_NOT_FOUND'] },
    schema: { tags, operationId: 'adminGetMember', summary: 'Get a member', description: 'Any member’s account.', params: IdParams, response: { 200: Envelope(Member) } },
  }, async (request) => ok(await getMember(app.db, principalOf(request), request.params.id)))
}
