import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { randomToken, tokenHash } from '../auth/secrets.js'
import { ApiError } from '../errors.js'
import type { MemberTokenPurpose } from './table.js'

export const TOKEN_TTL_MS: Readonly<Record<MemberTokenPurpose, number>> = {
  PASSWORD_RESET: 3600_000, // 1 hour (CONTRACT §4)
  EMAIL_VERIFICATION: 7 * 24 * 3600_000, // a week: verification is not urgent
}

/**
 * Issues a one-time token for mailing; earlier unused tokens of the same purpose stop working. The
 * member's row is locked first, so that requests at the same moment take turns and leave one token.
 */
export async function issueMemberToken (db: Db, memberId: number, purpose: MemberTokenPurpose): Promise<string> {
  const token = randomToken()
  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('members').select('id').where('id', '=', memberId).forUpdate().execute()
    await trx.updateTable('member_tokens').set({ used_at: sql<Date>`now()` })
      .where('member_id', '=', memberId).where('purpose', '=', purpose).where('used_at', 'is', null).execute()
    await trx.insertInto('member_tokens').values({
      token_hash: tokenHash(token),
      member_id: memberId,
      purpose,
      expires_at: sql<Date>`now() + ${TOKEN_TTL_MS[purpose]} * interval '1 millisecond'`,
      used_at: null,
    }).execute()
  })
  return token
}

/**
 * Spends a token (once, atomically) and returns its member; a bad, expired or used one is 400
 * INVALID_TOKEN. The member's other unused tokens of the same purpose are spent with it. The member
 * is locked before any token, as `issueMemberToken` does, so that issuing and spending at the same
 * moment take turns instead of deadlocking.
 */
export async function consumeMemberToken (trx: Tx, token: string, purpose: MemberTokenPurpose): Promise<number> {
  const owner = await trx.selectFrom('member_tokens').select('member_id').where('token_hash', '=', tokenHash(token)).executeTakeFirst()
  if (owner) await trx.selectFrom('members').select('id').where('id', '=', owner.member_id).forUpdate().execute()
  const row = await trx.updateTable('member_tokens')
    .set({ used_at: sql<Date>`now()` })
    .where('token_hash', '=', tokenHash(token)).where('purpose', '=', purpose)
    .where('used_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
    .returning('member_id')
    .executeTakeFirst()
  if (!row) throw new ApiError('INVALID_TOKEN', 'The token is invalid, has expired or was already used.')
  await trx.updateTable('member_tokens').set({ used_at: sql<Date>`now()` })
    .where('member_id', '=', row.member_id).where('purpose', '=', purpose).where('used_at', 'is', null).execute()
  return row.member_id
}

/** Deletes mailed tokens past their expiry (used or not); returns how many. */
export async function purgeExpiredMemberTokens (db: Db): Promise<number> {
  const result = await db.deleteFrom('member_tokens').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  return Number(result.numDeletedRows)
}
