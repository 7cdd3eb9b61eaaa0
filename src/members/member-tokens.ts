import type { Db, Tx } from '../db/schema.js'
import { ApiError } from '../errors.js'
import {
  findMemberTokenOwner, insertMemberToken, lockMember, spendMemberToken, spendUnusedMemberTokens,
} from './repository.js'
import { randomToken, tokenHash } from './secrets.js'
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
    await lockMember(trx, memberId)
    await spendUnusedMemberTokens(trx, memberId, purpose)
    await insertMemberToken(trx, { hash: tokenHash(token), memberId, purpose, ttlMs: TOKEN_TTL_MS[purpose] })
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
  const hash = tokenHash(token)
  const owner = await findMemberTokenOwner(trx, hash)
  if (owner !== undefined) await lockMember(trx, owner)
  const memberId = await spendMemberToken(trx, hash, purpose)
  if (memberId === undefined) throw new ApiError('INVALID_TOKEN', 'The token is invalid, has expired or was already used.')
  await spendUnusedMemberTokens(trx, memberId, purpose)
  return memberId
}
