import { sql } from 'kysely'
import type { FastifyBaseLogger } from 'fastify'
import { revokeSessions } from '../auth/sessions.js'
import type { LoginFailures } from '../auth/limits.js'
import type { Revocations } from '../auth/revocations.js'
import type { Config } from '../config.js'
import type { Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { assertOwnerOrAdmin, type Principal } from '../http/access.js'
import { ApiError, invalidParam } from '../errors.js'
import { pageWindow, parseSort, toPage } from '../http/paging.js'
import type { Mail, Mailer } from '../mail/mailer.js'
import { consumeMemberToken, issueMemberToken } from './member-tokens.js'
import { hashPassword, verifyPassword } from './passwords.js'
import { findMemberByEmail, findMemberById, insertMember, pageMembers } from './repository.js'
import {
  MEMBER_SORT, type AdminMemberSearchQuery, type AdminUpdateMemberBody, type ChangePasswordBody, type Member, type PasswordResetBody,
  type RegisterBody, type UpdateMemberBody,
} from './schemas.js'
import type { MemberRow } from './table.js'

export interface MemberDeps {
  mailer: Mailer
  revocations: Revocations
  loginFailures: LoginFailures
  log: FastifyBaseLogger
}

export function toMember (row: MemberRow): Member {
  return {
    memberId: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.status,
    emailVerified: row.email_verified,
    createdAt: row.created_at.toISOString(),
  }
}

/**
 * Mail leaves after the response: a slow or failing mail server neither delays nor fails the
 * request. `compose` runs then too (it may issue the token the mail carries); a failure is logged.
 */
function mailInBackground (deps: MemberDeps, to: string, compose: () => Promise<Mail | undefined>): void {
  compose()
    .then(mail => mail && deps.mailer.send(mail))
    .catch(error => deps.log.warn({ err: error, to }, 'mail could not be sent'))
}

export async function registerMember (db: Db, deps: MemberDeps, body: RegisterBody): Promise<Member> {
  const email = body.email.trim()
  const row = await insertMember(db, { email, passwordHash: await hashPassword(body.password), name: body.name })
  if (!row) throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email already exists.')
  mailInBackground(deps, row.email, async () => ({
    to: row.email,
    subject: 'Verify your email address',
    text: `Welcome, ${row.name}.\n\nTo verify your email address, POST this token to /api/v1/members/email/verify:\n\n${await issueMemberToken(db, row.id, 'EMAIL_VERIFICATION')}\n\nIt works once, for 7 days.\n`,
  }))
  return toMember(row)
}

/** Creates the first admin from ADMIN_EMAIL / ADMIN_PASSWORD when no member has that email. */
export async function bootstrapAdmin (db: Db, config: Pick<Config, 'adminEmail' | 'adminPassword'>): Promise<'created' | 'exists' | 'skipped'> {
  if (!config.adminEmail || !config.adminPassword) return 'skipped'
  if (await findMemberByEmail(db, config.adminEmail)) return 'exists'
  const row = await insertMember(db, {
    email: config.adminEmail,
    passwordHash: await hashPassword(config.adminPassword),
    name: 'Administrator',
    role: 'ADMIN',
  })
  return row ? 'created' : 'exists'
}

/** A member's own record, or any member's for an admin; others get 403 whether or not it exists. */
export async function getMember (db: Db, principal: Principal, id: string | number): Promise<Member> {
  assertOwnerOrAdmin(principal, Number(id), 'account')
  const row = await findMemberById(db, id)
  if (!row) throw new ApiError('MEMBER_NOT_FOUND', `Member ${id} does not exist.`)
  return toMember(row)
}

export async function updateMember (db: Db, principal: Principal, id: string, body: UpdateMemberBody): Promise<Member> {
  const current = await getMember(db, principal, id)
  if (body.name === undefined || body.name === current.name) return current
  const row = await db.updateTable('members').set({ name: body.name, updated_at: sql<Date>`now()` })
    .where('id', '=', current.memberId).returningAll().executeTakeFirstOrThrow()
  return toMember(row)
}

/**
 * Changes the caller's password and ends every other session of theirs. A wrong currentPassword
 * counts as a failed login for the member's email: a stolen access token must not become an
 * unlimited password oracle.
 */
export async function changePassword (db: Db, deps: MemberDeps, principal: Principal, body: ChangePasswordBody): Promise<void> {
  const member = await findMemberById(db, principal.memberId)
  if (!member) throw new ApiError('MEMBER_NOT_FOUND', `Member ${principal.memberId} does not exist.`)
  await deps.loginFailures.begin(member.email)
  if (!(await verifyPassword(member.password_hash, body.currentPassword))) {
    throw invalidParam('currentPassword', 'is not the current password')
  }
  await deps.loginFailures.succeeded(member.email)
  const passwordHash = await hashPassword(body.newPassword)
  const revoked = await db.transaction().execute(async (trx) => {
    await trx.updateTable('members').set({ password_hash: passwordHash, updated_at: sql<Date>`now()` }).where('id', '=', member.id).execute()
    return revokeSessions(trx, { memberId: member.id, exceptSessionId: principal.sessionId }, 'password changed')
  })
  deps.revocations.revoke(revoked)
}

/**
 * `{email}`: mails a one-time token (1 h) if an account has that email; the answer is the same
 * either way. `{token, newPassword}`: sets the password and ends every session of the member.
 */
export async function resetPassword (db: Db, deps: MemberDeps, body: PasswordResetBody): Promise<void> {
  if (body.email !== undefined && (body.token !== undefined || body.newPassword !== undefined)) {
    throw invalidParam('token', 'send either {email} to request a reset or {token, newPassword} to complete one, not both')
  }
  if (body.email !== undefined) {
    // The lookup, the token and the mail all happen after the response, so that the answer and its
    // timing are the same whether or not an account has this email (no account enumeration).
    const email = body.email.trim()
    mailInBackground(deps, email, async () => {
      const member = await findMemberByEmail(db, email)
      if (!member || member.status !== 'ACTIVE') return undefined
      return {
        to: member.email,
        subject: 'Reset your password',
        text: `To choose a new password, POST this token with {"token", "newPassword"} to /api/v1/members/password/reset:\n\n${await issueMemberToken(db, member.id, 'PASSWORD_RESET')}\n\nIt works once, for 1 hour. If you did not ask for this, ignore this mail.\n`,
      }
    })
    return
  }
  if (body.token === undefined) throw invalidParam('email', 'is required (or send token and newPassword)')
  if (body.newPassword === undefined) throw invalidParam('newPassword', 'is required with token')
  const passwordHash = await hashPassword(body.newPassword)
  const token = body.token
  const { email, revoked } = await db.transaction().execute(async (trx) => {
    const memberId = await consumeMemberToken(trx, token, 'PASSWORD_RESET')
    // The mailed token proves the address too; and failed logins before the reset no longer lock it.
    const member = await trx.updateTable('members')
      .set({ password_hash: passwordHash, email_verified: true, updated_at: sql<Date>`now()` })
      .where('id', '=', memberId).returning('email').executeTakeFirstOrThrow()
    return { email: member.email, revoked: await revokeSessions(trx, { memberId }, 'password reset') }
  })
  deps.revocations.revoke(revoked)
  await deps.loginFailures.succeeded(email)
}

export async function verifyEmail (db: Db, token: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const memberId = await consumeMemberToken(trx, token, 'EMAIL_VERIFICATION')
    await trx.updateTable('members').set({ email_verified: true, updated_at: sql<Date>`now()` }).where('id', '=', memberId).execute()
  })
}

/** Every member, filtered and sorted, as a page (admin). */
export async function pageAllMembers (db: Db, query: Partial<AdminMemberSearchQuery>) {
  const window = pageWindow(query)
  const { rows, total } = await pageMembers(db, {
    role: query.role,
    status: query.status,
    q: query.q?.trim() || undefined,
    sort: parseSort(query.sort, MEMBER_SORT),
    ...window,
  })
  return toPage(rows, total, window, toMember)
}

/**
 * An admin changes a member's role, status or name. A new role or a suspension ends the member's
 * sessions (their tokens carry the old role; a suspended member's must stop working, and stay
 * stopped if the member is reinstated); a suspension also takes effect on this instance at once.
 *
 * It all happens in one transaction on the member's locked row, so two changes at once do not undo
 * each other (a rename racing a suspension would otherwise write the old status back). A change of
 * role or status first locks the active admins, in id order: the acting admin must still be one of
 * them, and cannot change their own role or status, so two admins demoting each other at once
 * cannot leave the service without an admin.
 */
export async function adminUpdateMember (
  db: Db, deps: Pick<MemberDeps, 'revocations'>, principal: Principal, id: string, body: AdminUpdateMemberBody
): Promise<Member> {
  const { row, revoked } = await db.transaction().execute(async (trx) => {
    if (body.role !== undefined || body.status !== undefined) {
      const admins = await trx.selectFrom('members').select('id')
        .where('role', '=', 'ADMIN').where('status', '=', 'ACTIVE').orderBy('id').forUpdate().execute()
      if (!admins.some(admin => admin.id === principal.memberId)) {
        throw new ApiError('ACCESS_DENIED', 'You are no longer an active admin.')
      }
    }
    const current = await trx.selectFrom('members').selectAll().where('id', '=', idValue(id)).forUpdate().executeTakeFirst()
    if (!current) throw new ApiError('MEMBER_NOT_FOUND', `Member ${id} does not exist.`)
    const role = body.role ?? current.role
    const status = body.status ?? current.status
    const name = body.name ?? current.name
    if (current.id === principal.memberId && (role !== current.role || status !== current.status)) {
      throw invalidParam(role !== current.role ? 'role' : 'status', 'an admin cannot change their own role or status; ask another admin')
    }
    if (role === current.role && status === current.status && name === current.name) return { row: current, revoked: [] }

    const endsSessions = role !== current.role || (status === 'SUSPENDED' && current.status !== 'SUSPENDED')
    const row = await trx.updateTable('members').set({ role, status, name, updated_at: sql<Date>`now()` })
      .where('id', '=', current.id).returningAll().executeTakeFirstOrThrow()
    const revoked = endsSessions
      ? await revokeSessions(trx, { memberId: current.id }, status === 'SUSPENDED' ? 'member suspended' : 'role changed')
      : []
    return { row, revoked }
  })
  deps.revocations.revoke(revoked)
  deps.revocations.setSuspended(row.id, row.status === 'SUSPENDED')
  return toMember(row)
}
