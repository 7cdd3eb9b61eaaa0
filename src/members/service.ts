import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import type { Db, Tx } from '../db/schema.js'
import { assertOwnerOrAdmin, type Principal } from '../http/access.js'
import { ApiError, invalidParam } from '../errors.js'
import { pageWindow, parseSort, toPage } from '../http/paging.js'
import type { Mail, Mailer } from '../mail/mailer.js'
import { passwordResetMail, verificationMail } from './mails.js'
import { consumeMemberToken, issueMemberToken } from './member-tokens.js'
import { assertPasswordAllowed, hashPassword } from './passwords.js'
import {
  deleteIdentitiesThrough, findIdentityProviders, findMemberByEmail, findMemberById, insertMember, lockActiveAdminIds, lockMember,
  markEmailVerified, pageMembers, updateMemberRow,
} from './repository.js'
import {
  MEMBER_SORT, type AdminMemberSearchQuery, type AdminUpdateMemberBody, type Member, type MyAccount, type RegisterBody, type UpdateMemberBody,
} from './schemas.js'
import type { MemberRow } from './table.js'

export interface MailDeps {
  mailer: Mailer
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
function mailInBackground (deps: MailDeps, to: string, compose: () => Promise<Mail | undefined>): void {
  compose()
    .then(mail => mail && deps.mailer.send(mail))
    .catch(error => deps.log.warn({ err: error, to }, 'mail could not be sent'))
}

/** Registers a member (the password must pass `assertPasswordAllowed`) and mails a verification token. */
export async function registerMember (db: Db, deps: MailDeps, body: RegisterBody): Promise<Member> {
  const email = body.email.trim()
  assertPasswordAllowed('password', body.password, email)
  const row = await insertMember(db, { email, passwordHash: await hashPassword(body.password), name: body.name })
  if (!row) throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email already exists.')
  mailInBackground(deps, row.email, async () => verificationMail(row, await issueMemberToken(db, row.id, 'EMAIL_VERIFICATION')))
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
    // The operator vouches for the address (CONTRACT §18).
    emailVerified: true,
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

/** The caller's own account, with the OpenID providers linked to it. */
export async function getMyAccount (db: Db, principal: Principal): Promise<MyAccount> {
  const member = await getMember(db, principal, principal.memberId)
  return { ...member, identityProviders: await findIdentityProviders(db, principal.memberId) }
}

/**
 * Removes the caller's links to one OpenID provider (CONTRACT §18), on the member's locked row so that
 * two unlinks at once cannot both pass the last-way-in check. 404 when nothing is linked through it;
 * 400 when it would leave no way to sign in (no password and no other link).
 */
export async function unlinkIdentity (db: Db, principal: Principal, provider: string): Promise<MyAccount> {
  await db.transaction().execute(async (trx) => {
    const member = await lockMember(trx, principal.memberId)
    if (!member) throw new ApiError('MEMBER_NOT_FOUND', `Member ${principal.memberId} does not exist.`)
    const links = await findIdentityProviders(trx, member.id)
    if (!links.includes(provider)) throw new ApiError('IDENTITY_NOT_FOUND', `No account at the OpenID provider ${JSON.stringify(provider)} is linked to yours.`)
    if (member.password_hash === null && links.every(link => link === provider)) {
      throw new ApiError('LAST_SIGN_IN_METHOD', 'This is your last way to sign in: set a password (or link another provider) before unlinking it.')
    }
    await deleteIdentitiesThrough(trx, member.id, provider)
  })
  return getMyAccount(db, principal)
}

export async function updateMember (db: Db, principal: Principal, id: string, body: UpdateMemberBody): Promise<Member> {
  const current = await getMember(db, principal, id)
  if (body.name === undefined || body.name === current.name) return current
  return toMember(await updateMemberRow(db, current.memberId, { name: body.name }))
}

/**
 * Mails a one-time reset token (1 h) if an active account has this email. The lookup, the token and
 * the mail all happen after the response, so that the answer and its timing are the same whether or
 * not an account has this email (no account enumeration).
 */
export function requestPasswordReset (db: Db, deps: MailDeps, email: string): void {
  mailInBackground(deps, email, async () => {
    const member = await findMemberByEmail(db, email)
    if (!member || member.status !== 'ACTIVE') return undefined
    return passwordResetMail(member, await issueMemberToken(db, member.id, 'PASSWORD_RESET'))
  })
}

export async function verifyEmail (db: Db, token: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const memberId = await consumeMemberToken(trx, token, 'EMAIL_VERIFICATION')
    await markEmailVerified(trx, memberId)
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
 * An admin changes a member's role, status or name, on the member's locked row, so that two changes
 * at once do not undo each other (a rename racing a suspension would otherwise write the old status
 * back). A change of role or status first locks the active admins, in id order: the acting admin
 * must still be one of them, and cannot change their own role or status, so two admins demoting each
 * other at once cannot leave the service without an admin. Returns the row before and after.
 */
export async function changeMemberAsAdmin (
  trx: Tx, principal: Principal, id: string, body: AdminUpdateMemberBody
): Promise<{ before: MemberRow, after: MemberRow }> {
  if (body.role !== undefined || body.status !== undefined) {
    const admins = await lockActiveAdminIds(trx)
    if (!admins.includes(principal.memberId)) throw new ApiError('ACCESS_DENIED', 'You are no longer an active admin.')
  }
  const before = await lockMember(trx, id)
  if (!before) throw new ApiError('MEMBER_NOT_FOUND', `Member ${id} does not exist.`)
  const role = body.role ?? before.role
  const status = body.status ?? before.status
  const name = body.name ?? before.name
  if (before.id === principal.memberId && (role !== before.role || status !== before.status)) {
    throw invalidParam(role !== before.role ? 'role' : 'status', 'an admin cannot change their own role or status; ask another admin')
  }
  if (role === before.role && status === before.status && name === before.name) return { before, after: before }
  return { before, after: await updateMemberRow(trx, before.id, { role, status, name }) }
}
