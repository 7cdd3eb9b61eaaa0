import type { Db } from '../db/schema.js'
import { unauthorized, type Principal } from '../http/access.js'
import { ApiError } from '../errors.js'
import { verifyAgainstNothing, verifyPassword } from '../members/passwords.js'
import { findMemberByEmail } from '../members/repository.js'
import type { MemberRow } from '../members/table.js'
import type { Identity } from './identity.js'
import type { LoginBody, TokenPair } from './schemas.js'
import { REFRESH_TOKEN_TTL_SECONDS, revokeSessions, rotateRefreshToken, startSession } from './sessions.js'

type Deps = Pick<Identity, 'tokens' | 'revocations' | 'loginFailures'>

const WRONG_CREDENTIALS = 'The email or password is incorrect.'

async function tokenPair (deps: Deps, member: { id: number, role: Principal['role'] }, sessionId: string, refreshToken: string): Promise<TokenPair> {
  const access = await deps.tokens.issue(member, sessionId)
  return {
    accessToken: access.token,
    refreshToken,
    tokenType: 'Bearer',
    expiresIn: access.expiresIn,
    refreshExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
  }
}

/**
 * Logs in. Wrong email and wrong password get the same answer after the same amount of work;
 * failures count per email, and a locked email is 429 even with the right password.
 */
export async function login (db: Db, deps: Deps, body: LoginBody): Promise<TokenPair> {
  const email = body.email.trim()
  await deps.loginFailures.begin(email)
  const member = await findMemberByEmail(db, email)
  const valid = member ? await verifyPassword(member.password_hash, body.password) : await verifyAgainstNothing(body.password)
  if (!member || !valid) throw unauthorized(WRONG_CREDENTIALS, false)
  await deps.loginFailures.succeeded(email)
  const assertMayLogIn = (current: MemberRow) => {
    if (current.status === 'SUSPENDED') throw new ApiError('ACCOUNT_SUSPENDED', 'This account is suspended.')
  }
  assertMayLogIn(member)
  // The password was checked against the row read before hashing; the session opens only if the member
  // still has that password and may still log in. The token carries the role the member has now.
  const session = await startSession(db, member.id, (current) => {
    if (current.password_hash !== member.password_hash) throw unauthorized(WRONG_CREDENTIALS, false)
    assertMayLogIn(current)
  })
  return tokenPair(deps, session.member, session.sessionId, session.refreshToken)
}

/** Rotates the refresh token; a spent token presented again revokes its whole session. */
export async function refresh (db: Db, deps: Deps, refreshToken: string): Promise<TokenPair> {
  const rotation = await rotateRefreshToken(db, refreshToken)
  if (rotation.kind === 'reused') deps.revocations.revoke([rotation.sessionId])
  if (rotation.kind !== 'rotated') throw unauthorized('The refresh token is invalid, expired or revoked.')
  return tokenPair(deps, rotation.member, rotation.sessionId, rotation.refreshToken)
}

/** Ends the caller's session at once: its refresh token and access tokens stop working. */
export async function logout (db: Db, deps: Deps, principal: Principal): Promise<void> {
  if (principal.sessionId === null) return // an API key has no session; revoke the key instead
  deps.revocations.revoke(await revokeSessions(db, { sessionId: principal.sessionId }, 'logout'))
}
