import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { MemberStatus, Role } from '../members/schemas.js'
import type { ApiKeyRow } from './table.js'

/** The database's clock, to compare with the times the database wrote (a process's clock may differ). */
export async function databaseNow (db: Db): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db)
  return rows[0]!.now
}

/** Stores `value` under `key` unless a value is there already; returns the stored one. */
export async function keepSetting (db: Db, key: string, value: string): Promise<string> {
  await db.insertInto('settings').values({ key, value }).onConflict(oc => oc.column('key').doNothing()).execute()
  const row = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirstOrThrow()
  return row.value
}

// Sessions and their refresh tokens

export async function insertSession (trx: Tx, id: string, memberId: number): Promise<void> {
  await trx.insertInto('sessions').values({ id, member_id: memberId, revoked_at: null, revoke_reason: null }).execute()
}

export async function insertRefreshToken (trx: Tx, token: { hash: string, sessionId: string, ttlSeconds: number }): Promise<void> {
  await trx.insertInto('refresh_tokens').values({
    token_hash: token.hash,
    session_id: token.sessionId,
    expires_at: sql<Date>`now() + ${token.ttlSeconds} * interval '1 second'`,
    used_at: null,
  }).execute()
}

/** A refresh token with its session, the token's row locked until the transaction ends. */
export function lockRefreshToken (trx: Tx, hash: string) {
  return trx.selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select(['refresh_tokens.token_hash', 'refresh_tokens.used_at', 'sessions.id as session_id', 'sessions.revoked_at', 'sessions.member_id'])
    .select(sql<boolean>`refresh_tokens.expires_at <= now()`.as('expired'))
    .where('refresh_tokens.token_hash', '=', hash)
    .forUpdate('refresh_tokens')
    .executeTakeFirst()
}

export async function spendRefreshToken (trx: Tx, hash: string): Promise<void> {
  await trx.updateTable('refresh_tokens').set({ used_at: sql<Date>`now()` }).where('token_hash', '=', hash).execute()
}

/**
 * Revokes one session, or every session of a member (optionally but one). Returns the ids revoked,
 * so the caller can tell this instance's revocation list at once.
 */
export async function revokeSessions (
  db: Db,
  which: { sessionId: string } | { memberId: number, exceptSessionId?: string | null },
  reason: string
): Promise<string[]> {
  let query = db.updateTable('sessions')
    .set({ revoked_at: sql<Date>`now()`, revoke_reason: reason })
    .where('revoked_at', 'is', null)
  if ('sessionId' in which) query = query.where('id', '=', which.sessionId)
  else {
    query = query.where('member_id', '=', which.memberId)
    if (which.exceptSessionId) query = query.where('id', '<>', which.exceptSessionId)
  }
  const rows = await query.returning('id').execute()
  return rows.map(row => row.id)
}

/** Whether the session exists and has not been revoked (read in the caller's transaction). */
export async function isSessionLive (trx: Tx, sessionId: string): Promise<boolean> {
  const row = await trx.selectFrom('sessions').select('id').where('id', '=', sessionId).where('revoked_at', 'is', null).executeTakeFirst()
  return row !== undefined
}

export async function findSessionsRevokedSince (db: Db, since: Date): Promise<Array<{ id: string, revokedAt: Date }>> {
  const rows = await db.selectFrom('sessions').select(['id', 'revoked_at']).where('revoked_at', '>=', since).execute()
  return rows.map(row => ({ id: row.id, revokedAt: row.revoked_at! }))
}

export async function deleteExpiredRefreshTokens (trx: Tx): Promise<void> {
  await trx.deleteFrom('refresh_tokens').where('expires_at', '<=', sql<Date>`now()`).execute()
}

/** Deletes the sessions that have no refresh token left; returns how many. */
export async function deleteSessionsWithoutRefreshTokens (trx: Tx): Promise<number> {
  const result = await trx.deleteFrom('sessions')
    .where(eb => eb.not(eb.exists(eb.selectFrom('refresh_tokens').select(sql`1`.as('one'))
      .whereRef('refresh_tokens.session_id', '=', 'sessions.id'))))
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}

// API keys

export function insertApiKey (
  db: Db, key: { memberId: number, name: string, prefix: string, secretHash: string }
): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values({
    member_id: key.memberId,
    name: key.name,
    prefix: key.prefix,
    secret_hash: key.secretHash,
    revoked_at: null,
  }).returningAll().executeTakeFirstOrThrow()
}

/** How many unrevoked keys the member has; count under the member's lock (see createApiKey). */
export async function countActiveApiKeys (trx: Tx, memberId: number): Promise<number> {
  const row = await trx.selectFrom('api_keys').select(eb => eb.fn.countAll<string>().as('n'))
    .where('member_id', '=', memberId).where('revoked_at', 'is', null).executeTakeFirstOrThrow()
  return Number(row.n)
}

/** Revokes every key of the member that is not revoked yet (a password reset). */
export async function revokeApiKeysOfMember (trx: Tx, memberId: number): Promise<void> {
  await trx.updateTable('api_keys').set({ revoked_at: sql<Date>`now()` })
    .where('member_id', '=', memberId).where('revoked_at', 'is', null).execute()
}

export function findApiKeys (db: Db, memberId: number): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('member_id', '=', memberId).orderBy('id').execute()
}

/** Revokes a key of the member's (already revoked: unchanged); false when the member has no such key. */
export async function markApiKeyRevoked (db: Db, memberId: number, keyId: string): Promise<boolean> {
  const row = await db.updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
    .where('id', '=', idValue(keyId)).where('member_id', '=', memberId)
    .returning('id').executeTakeFirst()
  return row !== undefined
}

/** The key with this secret hash and its member's role and status. */
export function findApiKeyOwner (
  db: Db, secretHash: string
): Promise<{ id: number, role: Role, status: MemberStatus, revoked_at: Date | null } | undefined> {
  return db.selectFrom('api_keys')
    .innerJoin('members', 'members.id', 'api_keys.member_id')
    .select(['members.id', 'members.role', 'members.status', 'api_keys.revoked_at'])
    .where('api_keys.secret_hash', '=', secretHash)
    .executeTakeFirst()
}
