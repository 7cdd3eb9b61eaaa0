import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { Sort } from '../http/paging.js'
import type { MemberStatus, Role } from './schemas.js'
import type { MemberRow, MemberTokenPurpose } from './table.js'

export function findMemberById (db: Db, id: number | string): Promise<MemberRow | undefined> {
  return db.selectFrom('members').selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

/** Emails are unique regardless of case. */
export function findMemberByEmail (db: Db, email: string): Promise<MemberRow | undefined> {
  return db.selectFrom('members').selectAll().where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst()
}

/** The member's row, locked until the transaction ends: changes to one member take turns. */
export function lockMember (trx: Tx, id: number | string): Promise<MemberRow | undefined> {
  return trx.selectFrom('members').selectAll().where('id', '=', idValue(id)).forUpdate().executeTakeFirst()
}

/**
 * The member's row under a share lock: it cannot change until the transaction ends, and a change
 * already under way is waited for (a login reads it so, to open a session; see auth/service.ts).
 */
export function shareLockMember (trx: Tx, id: number): Promise<MemberRow> {
  return trx.selectFrom('members').selectAll().where('id', '=', id).forShare().executeTakeFirstOrThrow()
}

/** The ids of the active admins, locked in id order (so that two admins' changes take turns, not deadlock). */
export async function lockActiveAdminIds (trx: Tx): Promise<number[]> {
  const rows = await trx.selectFrom('members').select('id')
    .where('role', '=', 'ADMIN').where('status', '=', 'ACTIVE').orderBy('id').forUpdate().execute()
  return rows.map(row => row.id)
}

/** Inserts a member; `undefined` when the email is already registered. */
export function insertMember (
  db: Db,
  member: { email: string, passwordHash: string | null, name: string, role?: Role, emailVerified?: boolean }
): Promise<MemberRow | undefined> {
  return db.insertInto('members')
    .values({
      email: member.email,
      password_hash: member.passwordHash,
      name: member.name,
      role: member.role ?? 'USER',
      ...(member.emailVerified !== undefined && { email_verified: member.emailVerified }),
    })
    .onConflict(oc => oc.expression(sql`lower(email)`).doNothing())
    .returningAll()
    .executeTakeFirst()
}

/** Changes a member's name, role or status; returns the new row. */
export function updateMemberRow (
  db: Db, id: number, change: { name?: string, role?: Role, status?: MemberStatus }
): Promise<MemberRow> {
  return db.updateTable('members').set({ ...change, updated_at: sql<Date>`now()` })
    .where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/**
 * Sets a member's password; with `emailVerified`, also marks the address proven (a mailed reset
 * token proves it). Returns the member's email.
 */
export async function setPassword (db: Db, id: number, passwordHash: string, emailVerified?: true): Promise<string> {
  const row = await db.updateTable('members')
    .set({ password_hash: passwordHash, ...(emailVerified && { email_verified: true }), updated_at: sql<Date>`now()` })
    .where('id', '=', id).returning('email').executeTakeFirstOrThrow()
  return row.email
}

export async function markEmailVerified (db: Db, id: number): Promise<void> {
  await db.updateTable('members').set({ email_verified: true, updated_at: sql<Date>`now()` }).where('id', '=', id).execute()
}

export async function findSuspendedMemberIds (db: Db): Promise<number[]> {
  const rows = await db.selectFrom('members').select('id').where('status', '=', 'SUSPENDED').execute()
  return rows.map(row => row.id)
}

/** The status of every member changed at or after `since`. */
export function findStatusesChangedSince (db: Db, since: Date): Promise<Array<{ id: number, status: MemberStatus }>> {
  return db.selectFrom('members').select(['id', 'status']).where('updated_at', '>=', since).execute()
}

export interface MemberFilter {
  role?: Role
  status?: MemberStatus
  /** Part of the email or the name, any case. */
  q?: string
}

/**
 * `%` and `_` in a search term match themselves. The pattern is lower-cased by PostgreSQL, as the
 * columns are: JavaScript lower-cases some letters another way (`İ`, a final `Σ`).
 */
const likePattern = (term: string) => sql<string>`lower(${`%${term.replace(/[\\%_]/g, match => `\\${match}`)}%`})`

/** The admin list: one page in the requested order, and how many members match in all. */
export async function pageMembers (
  db: Db, filter: MemberFilter & { sort: Sort<'created_at' | 'email' | 'name'>, offset: number, limit: number }
): Promise<{ rows: MemberRow[], total: number }> {
  const matching = db.selectFrom('members')
    .$if(filter.role !== undefined, qb => qb.where('role', '=', filter.role!))
    .$if(filter.status !== undefined, qb => qb.where('status', '=', filter.status!))
    .$if(filter.q !== undefined, qb => qb.where(eb => eb.or([
      eb(sql`lower(email)`, 'like', likePattern(filter.q!)),
      eb(sql`lower(name)`, 'like', likePattern(filter.q!)),
    ])))
  const [rows, count] = await Promise.all([
    matching.selectAll().orderBy(filter.sort.column, filter.sort.direction).orderBy('id', filter.sort.direction)
      .limit(filter.limit).offset(filter.offset).execute(),
    matching.select(eb => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.total) }
}

// Provider accounts linked to members (OpenID sign-in, CONTRACT §13)

/** The member linked to a provider account, if any. */
export function findMemberByIdentity (db: Db, issuer: string, subject: string): Promise<MemberRow | undefined> {
  return db.selectFrom('member_identities').innerJoin('members', 'members.id', 'member_identities.member_id')
    .selectAll('members').where('issuer', '=', issuer).where('subject', '=', subject).executeTakeFirst()
}

/** Links a provider account to a member; false when the account is already linked (to anyone). */
export async function insertIdentity (
  trx: Tx, identity: { issuer: string, subject: string, registrationId: string, memberId: number }
): Promise<boolean> {
  const row = await trx.insertInto('member_identities').values({
    issuer: identity.issuer, subject: identity.subject, registration_id: identity.registrationId, member_id: identity.memberId,
  }).onConflict(oc => oc.columns(['issuer', 'subject']).doNothing()).returning('member_id').executeTakeFirst()
  return row !== undefined
}

/**
 * The registration id of each provider account linked to a member, one entry per link (two accounts
 * at one provider appear twice), in the order they were linked. Subjects stay out of answers.
 */
export async function findIdentityProviders (db: Db, memberId: number): Promise<string[]> {
  const rows = await db.selectFrom('member_identities').select('registration_id')
    .where('member_id', '=', memberId).orderBy('created_at').orderBy('registration_id').orderBy('subject').execute()
  return rows.map(row => row.registration_id)
}

/** Whether the member has a provider account linked through this registration. */
export async function hasIdentityThrough (db: Db, memberId: number, registrationId: string): Promise<boolean> {
  const row = await db.selectFrom('member_identities').select('member_id')
    .where('member_id', '=', memberId).where('registration_id', '=', registrationId).executeTakeFirst()
  return row !== undefined
}

/** Removes every provider account linked to the member (account recovery takes back every way in). */
export async function deleteIdentitiesOfMember (trx: Tx, memberId: number): Promise<void> {
  await trx.deleteFrom('member_identities').where('member_id', '=', memberId).execute()
}

/** Removes the member's links through one registration; returns how many went. */
export async function deleteIdentitiesThrough (trx: Tx, memberId: number, registrationId: string): Promise<number> {
  const result = await trx.deleteFrom('member_identities')
    .where('member_id', '=', memberId).where('registration_id', '=', registrationId).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/**
 * The address owner takes an unverified account back (CONTRACT §14): its password goes and the address
 * counts as proven. The caller revokes the sessions and API keys in the same transaction.
 */
export async function claimUnverifiedMember (trx: Tx, id: number): Promise<MemberRow> {
  return trx.updateTable('members').set({ password_hash: null, email_verified: true, updated_at: sql<Date>`now()` })
    .where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

// Mailed one-time tokens (member-tokens.ts says how they are issued and spent).

/** Spends every unused token of `purpose` the member has. */
export async function spendUnusedMemberTokens (trx: Tx, memberId: number, purpose: MemberTokenPurpose): Promise<void> {
  await trx.updateTable('member_tokens').set({ used_at: sql<Date>`now()` })
    .where('member_id', '=', memberId).where('purpose', '=', purpose).where('used_at', 'is', null).execute()
}

export async function insertMemberToken (
  trx: Tx, token: { hash: string, memberId: number, purpose: MemberTokenPurpose, ttlMs: number }
): Promise<void> {
  await trx.insertInto('member_tokens').values({
    token_hash: token.hash,
    member_id: token.memberId,
    purpose: token.purpose,
    expires_at: sql<Date>`now() + ${token.ttlMs} * interval '1 millisecond'`,
    used_at: null,
  }).execute()
}

/** Whose token this is (whatever its purpose or state), to lock that member before the token. */
export async function findMemberTokenOwner (trx: Tx, hash: string): Promise<number | undefined> {
  const row = await trx.selectFrom('member_tokens').select('member_id').where('token_hash', '=', hash).executeTakeFirst()
  return row?.member_id
}

/** Spends the token if it is of `purpose`, unused and unexpired; returns its member, else undefined. */
export async function spendMemberToken (trx: Tx, hash: string, purpose: MemberTokenPurpose): Promise<number | undefined> {
  const row = await trx.updateTable('member_tokens')
    .set({ used_at: sql<Date>`now()` })
    .where('token_hash', '=', hash).where('purpose', '=', purpose)
    .where('used_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
    .returning('member_id')
    .executeTakeFirst()
  return row?.member_id
}

/** Deletes mailed tokens past their expiry (used or not); returns how many. */
export async function purgeExpiredMemberTokens (db: Db): Promise<number> {
  const result = await db.deleteFrom('member_tokens').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  return Number(result.numDeletedRows)
}
