import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import type { MemberRow } from '../members/table.js'
import { randomToken, tokenHash } from './secrets.js'

export const REFRESH_TOKEN_TTL_SECONDS = 14 * 24 * 3600

const refreshExpiry = () => sql<Date>`now() + ${REFRESH_TOKEN_TTL_SECONDS} * interval '1 second'`

async function issueRefreshToken (trx: Tx, sessionId: string): Promise<string> {
  const token = randomToken()
  await trx.insertInto('refresh_tokens')
    .values({ token_hash: tokenHash(token), session_id: sessionId, expires_at: refreshExpiry(), used_at: null })
    .execute()
  return token
}

/**
 * A new session for a member who just proved who they are; returns its id, its first refresh token
 * and the member as they are now. The member's row is read again under a share lock in the same
 * transaction, and `check` may refuse it: a suspension, role change or new password that commits
 * while a login is hashing would otherwise miss the session the login then opens. With the lock,
 * such a change either committed first (and `check` sees it) or waits for this session and revokes it.
 */
export function startSession (
  db: Db, memberId: number, check: (current: MemberRow) => void
): Promise<{ sessionId: string, refreshToken: string, member: MemberRow }> {
  return db.transaction().execute(async (trx) => {
    const member = await trx.selectFrom('members').selectAll().where('id', '=', memberId).forShare().executeTakeFirstOrThrow()
    check(member)
    const sessionId = randomUUID()
    await trx.insertInto('sessions').values({ id: sessionId, member_id: memberId, revoked_at: null, revoke_reason: null }).execute()
    return { sessionId, refreshToken: await issueRefreshToken(trx, sessionId), member }
  })
}

/**
 * Exchanges a refresh token for a new one in the same session. The old token is spent. Presenting a
 * spent token again means it leaked (or a client raced itself): the whole session is revoked and
 * both parties must log in again (reuse detection, as OAuth 2.0 Security BCP recommends).
 */
export type Rotation =
  | { kind: 'rotated', member: MemberRow, sessionId: string, refreshToken: string }
  | { kind: 'reused', sessionId: string }
  | { kind: 'invalid' }

export function rotateRefreshToken (db: Db, refreshToken: string): Promise<Rotation> {
  return db.transaction().execute(async (trx): Promise<Rotation> => {
    const row = await trx.selectFrom('refresh_tokens')
      .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .select(['refresh_tokens.token_hash', 'refresh_tokens.used_at', 'sessions.id as session_id', 'sessions.revoked_at', 'sessions.member_id'])
      .select(sql<boolean>`refresh_tokens.expires_at <= now()`.as('expired'))
      .where('refresh_tokens.token_hash', '=', tokenHash(refreshToken))
      .forUpdate('refresh_tokens')
      .executeTakeFirst()
    if (!row || row.revoked_at !== null || row.expired) return { kind: 'invalid' }
    if (row.used_at !== null) {
      await revokeSessions(trx, { sessionId: row.session_id }, 'refresh token reused')
      return { kind: 'reused', sessionId: row.session_id }
    }
    const member = await trx.selectFrom('members').selectAll().where('id', '=', row.member_id).executeTakeFirstOrThrow()
    if (member.status !== 'ACTIVE') return { kind: 'invalid' }
    await trx.updateTable('refresh_tokens').set({ used_at: sql<Date>`now()` }).where('token_hash', '=', row.token_hash).execute()
    return { kind: 'rotated', member, sessionId: row.session_id, refreshToken: await issueRefreshToken(trx, row.session_id) }
  })
}

/**
 * Revokes one session, or every session of a member (optionally but one). Returns the ids revoked,
 * so the caller can tell this instance's revocation list at once.
 */
export async function revokeSessions (
  db: Db | Tx,
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

/**
 * Deletes refresh tokens past their expiry, then sessions left without any: a session's last access
 * token was issued with its newest refresh token, 14 days before that expired, so it is long dead.
 * Returns how many sessions went.
 */
export async function purgeExpiredSessions (db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('refresh_tokens').where('expires_at', '<=', sql<Date>`now()`).execute()
    const result = await trx.deleteFrom('sessions')
      .where(eb => eb.not(eb.exists(eb.selectFrom('refresh_tokens').select(sql`1`.as('one'))
        .whereRef('refresh_tokens.session_id', '=', 'sessions.id'))))
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  })
}
