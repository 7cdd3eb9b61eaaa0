import { randomUUID } from 'node:crypto'
import type { Db, Tx } from '../db/schema.js'
import { unauthorized, type Principal } from '../http/access.js'
import { ApiError, invalidParam } from '../errors.js'
import { consumeMemberToken } from '../members/member-tokens.js'
import { assertPasswordAllowed, hashPassword, verifyAgainstNothing, verifyPassword } from '../members/passwords.js'
import {
  deleteIdentitiesOfMember, findMemberByEmail, findMemberById, lockMember, setPassword, shareLockMember, spendUnusedMemberTokens,
} from '../members/repository.js'
import type { AdminUpdateMemberBody, Member } from '../members/schemas.js'
import { randomToken, tokenHash } from '../members/secrets.js'
import { changeMemberAsAdmin, requestPasswordReset, toMember, type MailDeps } from '../members/service.js'
import type { MemberRow } from '../members/table.js'
import type { Identity } from './identity.js'
import {
  countActiveApiKeys, deleteExpiredRefreshTokens, deleteSessionsWithoutRefreshTokens, findApiKeys, insertApiKey, insertRefreshToken,
  insertSession, isSessionLive, lockRefreshToken, markApiKeyRevoked, revokeApiKeysOfMember, revokeSessions, spendRefreshToken,
} from './repository.js'
import { spendLoginCode } from './oidc-repository.js'
import type { ApiKey, ChangePasswordBody, CreatedApiKey, LoginBody, PasswordResetBody, TokenPair } from './schemas.js'
import type { ApiKeyRow } from './table.js'

export type AuthDeps = Pick<Identity, 'tokens' | 'revocations' | 'loginFailures'> & MailDeps

export const REFRESH_TOKEN_TTL_SECONDS = 14 * 24 * 3600

const WRONG_CREDENTIALS = 'The email or password is incorrect.'
const NOT_CURRENT = 'is not the current password'

/**
 * 403 for an API key on a route that manages credentials (keys, password, logout): those need a
 * bearer session, so that a leaked key cannot mint more keys or lock its owner out (CONTRACT §11).
 */
export function sessionRequired (): ApiError {
  return new ApiError('ACCESS_DENIED',
    'This operation needs a bearer session (Authorization: Bearer <access token> from a login); an API key cannot manage credentials.')
}

async function issueRefreshToken (trx: Tx, sessionId: string): Promise<string> {
  const token = randomToken()
  await insertRefreshToken(trx, { hash: tokenHash(token), sessionId, ttlSeconds: REFRESH_TOKEN_TTL_SECONDS })
  return token
}

async function tokenPair (deps: Pick<AuthDeps, 'tokens'>, member: MemberRow, sessionId: string, refreshToken: string): Promise<TokenPair> {
  const access = await deps.tokens.issue(member, sessionId)
  return {
    accessToken: access.token,
    refreshToken,
    tokenType: 'Bearer',
    expiresIn: access.expiresIn,
    refreshExpiresIn: REFRESH_TOKEN_TTL_SECONDS,
  }
}

function assertMayLogIn (member: MemberRow): void {
  if (member.status === 'SUSPENDED') throw new ApiError('ACCOUNT_SUSPENDED', 'This account is suspended.')
}

/**
 * Logs in. Wrong email and wrong password get the same answer after the same amount of work;
 * failures count per (email, client address) and per email (limits.ts), and while either budget is
 * spent the answer is 429, even with the right password.
 */
export async function login (db: Db, deps: AuthDeps, body: LoginBody, clientAddress: string): Promise<TokenPair> {
  if (body.loginCode !== undefined) {
    if (body.email !== undefined || body.password !== undefined) {
      throw bodyInvalid([{ field: 'loginCode', message: 'send either {loginCode} or {email, password}, not both' }])
    }
    return redeemLoginCode(db, deps, body.loginCode)
  }
  if (body.email === undefined || body.password === undefined) {
    throw bodyInvalid([
      ...(body.email === undefined ? [{ field: 'email', message: 'is required' }] : []),
      ...(body.password === undefined ? [{ field: 'password', message: 'is required' }] : []),
    ])
  }
  return loginWithPassword(db, deps, { email: body.email, password: body.password }, clientAddress)
}

/** A 400 about the body's shape, worded as the schema validation words it (the rule relates two fields, so it is checked here). */
function bodyInvalid (invalidParams: Array<{ field: string, message: string }>): ApiError {
  return new ApiError('VALIDATION_FAILED', 'The request body has invalid parameters.', { invalidParams })
}

async function loginWithPassword (db: Db, deps: AuthDeps, body: { email: string, password: string }, clientAddress: string): Promise<TokenPair> {
  const email = body.email.trim()
  await deps.loginFailures.begin(email, clientAddress)
  const member = await findMemberByEmail(db, email)
  const valid = member ? await verifyPassword(member.password_hash, body.password) : await verifyAgainstNothing(body.password)
  if (!member || !valid) throw unauthorized(WRONG_CREDENTIALS, false)
  // Clears the pair's count only, and makes the address known for the email (CONTRACT §18.1).
  await deps.loginFailures.loggedIn(email, clientAddress)
  assertMayLogIn(member)
  // The password was checked against the row read before hashing. The session opens in a transaction
  // that reads the member again under a share lock: a suspension, role change or new password that
  // commits meanwhile is seen here, and one that commits later waits for this session and revokes it.
  // The token carries the role the member has now.
  const session = await db.transaction().execute(async (trx) => {
    const current = await shareLockMember(trx, member.id)
    if (current.password_hash !== member.password_hash) throw unauthorized(WRONG_CREDENTIALS, false)
    assertMayLogIn(current)
    const sessionId = randomUUID()
    await insertSession(trx, sessionId, current.id)
    return { member: current, sessionId, refreshToken: await issueRefreshToken(trx, sessionId) }
  })
  return tokenPair(deps, session.member, session.sessionId, session.refreshToken)
}

/**
 * Opens a session for a member another way has proven (an OpenID sign-in): under a share lock on the
 * member, as a password login does, so that a suspension committing meanwhile is seen.
 */
export async function openSession (db: Db, deps: Pick<AuthDeps, 'tokens'>, memberId: number): Promise<TokenPair> {
  const session = await db.transaction().execute(async (trx) => {
    const current = await shareLockMember(trx, memberId)
    assertMayLogIn(current)
    const sessionId = randomUUID()
    await insertSession(trx, sessionId, current.id)
    return { member: current, sessionId, refreshToken: await issueRefreshToken(trx, sessionId) }
  })
  return tokenPair(deps, session.member, session.sessionId, session.refreshToken)
}

/** Trades a one-time login code (from an OpenID sign-in's redirect) for a session; a bad code is a 401 like a wrong password. */
async function redeemLoginCode (db: Db, deps: AuthDeps, code: string): Promise<TokenPair> {
  const memberId = await spendLoginCode(db, tokenHash(code))
  if (memberId === undefined) throw unauthorized('The login code is invalid, expired or already used.', false)
  return openSession(db, deps, memberId)
}

type Rotation =
  | { kind: 'rotated', member: MemberRow, sessionId: string, refreshToken: string }
  | { kind: 'reused', sessionId: string }
  | { kind: 'invalid' }

/**
 * Exchanges a refresh token for a new pair in the same session; the old token is spent. Presenting a
 * spent token again means it leaked (or a client raced itself): the whole session is revoked and
 * both parties must log in again (reuse detection, as OAuth 2.0 Security BCP recommends).
 */
export async function refresh (db: Db, deps: AuthDeps, refreshToken: string): Promise<TokenPair> {
  const rotation = await db.transaction().execute(async (trx): Promise<Rotation> => {
    const hash = tokenHash(refreshToken)
    const row = await lockRefreshToken(trx, hash)
    if (!row || row.revoked_at !== null || row.expired) return { kind: 'invalid' }
    if (row.used_at !== null) {
      await revokeSessions(trx, { sessionId: row.session_id }, 'refresh token reused')
      return { kind: 'reused', sessionId: row.session_id }
    }
    const member = await findMemberById(trx, row.member_id)
    if (member?.status !== 'ACTIVE') return { kind: 'invalid' } // a session's member is always there
    await spendRefreshToken(trx, hash)
    return { kind: 'rotated', member, sessionId: row.session_id, refreshToken: await issueRefreshToken(trx, row.session_id) }
  })
  if (rotation.kind === 'reused') deps.revocations.revoke([rotation.sessionId])
  if (rotation.kind !== 'rotated') throw unauthorized('The refresh token is invalid, expired or revoked.')
  return tokenPair(deps, rotation.member, rotation.sessionId, rotation.refreshToken)
}

/** Ends the caller's session at once: its refresh token and access tokens stop working. */
export async function logout (db: Db, deps: AuthDeps, principal: Principal): Promise<void> {
  if (principal.sessionId === null) throw sessionRequired()
  deps.revocations.revoke(await revokeSessions(db, { sessionId: principal.sessionId }, 'logout'))
}

/**
 * Changes the caller's password, ends every other session of theirs and spends their outstanding
 * reset tokens (a reset mailed before the change must not undo it); API keys are left alone. A wrong
 * currentPassword counts as a failed login for the member's email from this address: a stolen access
 * token must not become an unlimited password oracle.
 */
export async function changePassword (
  db: Db, deps: AuthDeps, principal: Principal, body: ChangePasswordBody, clientAddress: string
): Promise<void> {
  if (principal.sessionId === null) throw sessionRequired()
  const member = await findMemberById(db, principal.memberId)
  if (!member) throw new ApiError('MEMBER_NOT_FOUND', `Member ${principal.memberId} does not exist.`)
  assertPasswordAllowed('newPassword', body.newPassword, member.email)
  // A member without a password (signed up through an OpenID provider) sets a first one without
  // currentPassword; everyone else proves the current one (CONTRACT §14).
  if (member.password_hash !== null) {
    if (body.currentPassword === undefined) throw bodyInvalid([{ field: 'currentPassword', message: 'is required' }])
    await deps.loginFailures.begin(member.email, clientAddress)
    if (!(await verifyPassword(member.password_hash, body.currentPassword))) throw invalidParam('currentPassword', NOT_CURRENT)
    await deps.loginFailures.succeeded(member.email, clientAddress)
  }
  const passwordHash = await hashPassword(body.newPassword)
  const revoked = await db.transaction().execute(async (trx) => {
    // The password checked above must still be the member's: a reset that committed meanwhile wins.
    const current = await lockMember(trx, member.id)
    if (current?.password_hash !== member.password_hash) throw invalidParam('currentPassword', NOT_CURRENT)
    await setPassword(trx, member.id, passwordHash)
    await spendUnusedMemberTokens(trx, member.id, 'PASSWORD_RESET')
    return revokeSessions(trx, { memberId: member.id, exceptSessionId: principal.sessionId }, 'password changed')
  })
  deps.revocations.revoke(revoked)
}

/**
 * `{email}`: mails a one-time token (1 h) if an account has that email; the answer is the same
 * either way. `{token, newPassword}`: sets the password and, in the same transaction, ends every
 * session and revokes every API key of the member: account recovery takes the account back from
 * whoever held it (CONTRACT §11).
 */
export async function resetPassword (db: Db, deps: AuthDeps, body: PasswordResetBody, clientAddress: string): Promise<void> {
  if (body.email !== undefined && (body.token !== undefined || body.newPassword !== undefined)) {
    throw invalidParam('token', 'send either {email} to request a reset or {token, newPassword} to complete one, not both')
  }
  if (body.email !== undefined) {
    requestPasswordReset(db, deps, body.email.trim())
    return
  }
  if (body.token === undefined) throw invalidParam('email', 'is required (or send token and newPassword)')
  const newPassword = body.newPassword
  if (newPassword === undefined) throw invalidParam('newPassword', 'is required with token')
  assertPasswordAllowed('newPassword', newPassword) // the list; the email is known once the token is
  const passwordHash = await hashPassword(newPassword)
  const token = body.token
  const { email, revoked } = await db.transaction().execute(async (trx) => {
    const memberId = await consumeMemberToken(trx, token, 'PASSWORD_RESET')
    const member = await findMemberById(trx, memberId)
    assertPasswordAllowed('newPassword', newPassword, member!.email) // refused: the token stays unspent
    // The mailed token proves the address too; and failed logins before the reset no longer lock it.
    const email = await setPassword(trx, memberId, passwordHash, true)
    await revokeApiKeysOfMember(trx, memberId)
    await deleteIdentitiesOfMember(trx, memberId) // every OpenID link too (CONTRACT §18)
    return { email, revoked: await revokeSessions(trx, { memberId }, 'password reset') }
  })
  deps.revocations.revoke(revoked)
  await deps.loginFailures.succeeded(email, clientAddress)
}

/**
 * An admin changes a member's role, status or name (members/service.ts has the rules). A new role or
 * a suspension ends the member's sessions in the same transaction (their tokens carry the old role; a
 * suspended member's must stop working, and stay stopped if the member is reinstated); a suspension
 * also takes effect on this instance at once.
 */
export async function adminUpdateMember (
  db: Db, deps: Pick<AuthDeps, 'revocations'>, principal: Principal, id: string, body: AdminUpdateMemberBody
): Promise<Member> {
  const { row, revoked } = await db.transaction().execute(async (trx) => {
    const { before, after } = await changeMemberAsAdmin(trx, principal, id, body)
    const endsSessions = after.role !== before.role || (after.status === 'SUSPENDED' && before.status !== 'SUSPENDED')
    const revoked = endsSessions
      ? await revokeSessions(trx, { memberId: after.id }, after.status === 'SUSPENDED' ? 'member suspended' : 'role changed')
      : []
    return { row: after, revoked }
  })
  deps.revocations.revoke(revoked)
  deps.revocations.setSuspended(row.id, row.status === 'SUSPENDED')
  return toMember(row)
}

/**
 * Deletes refresh tokens past their expiry, then sessions left without any: a session's last access
 * token was issued with its newest refresh token, 14 days before that expired, so it is long dead.
 * Returns how many sessions went.
 */
export function purgeExpiredSessions (db: Db): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await deleteExpiredRefreshTokens(trx)
    return deleteSessionsWithoutRefreshTokens(trx)
  })
}

const API_KEY_PREFIX = 'osk_'

function toApiKey (row: ApiKeyRow): ApiKey {
  return {
    keyId: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
  }
}

/** How many unrevoked API keys a member may hold at once (CONTRACT §11). */
export const MAX_ACTIVE_API_KEYS = 25

/**
 * A new key for the caller (a bearer session); the secret is returned this once and only its hash is
 * kept. The member's row is locked while the active keys are counted, so that creations at the same
 * moment take turns and cannot pass the limit together; and the session is checked again under that
 * lock, so that a key cannot be created by a session that a password reset (which takes the same lock)
 * has just ended.
 */
export async function createApiKey (db: Db, principal: Principal, name: string): Promise<CreatedApiKey> {
  const sessionId = principal.sessionId
  if (sessionId === null) throw sessionRequired()
  const secret = API_KEY_PREFIX + randomToken()
  const row = await db.transaction().execute(async (trx) => {
    await lockMember(trx, principal.memberId)
    if (!(await isSessionLive(trx, sessionId))) throw unauthorized('The access token has been revoked.')
    if (await countActiveApiKeys(trx, principal.memberId) >= MAX_ACTIVE_API_KEYS) {
      throw new ApiError('API_KEY_LIMIT_REACHED', `A member may have at most ${MAX_ACTIVE_API_KEYS} active API keys; revoke one to create another.`)
    }
    return insertApiKey(trx, { memberId: principal.memberId, name, prefix: secret.slice(0, 8), secretHash: tokenHash(secret) })
  })
  return { keyId: row.id, name: row.name, prefix: row.prefix, secret, createdAt: row.created_at.toISOString() }
}

export async function listApiKeys (db: Db, principal: Principal): Promise<ApiKey[]> {
  if (principal.sessionId === null) throw sessionRequired()
  return (await findApiKeys(db, principal.memberId)).map(toApiKey)
}

/** Revokes one of the caller's keys; someone else's or an unknown key is 404; twice is fine. */
export async function revokeApiKey (db: Db, principal: Principal, keyId: string): Promise<void> {
  if (principal.sessionId === null) throw sessionRequired()
  if (!(await markApiKeyRevoked(db, principal.memberId, keyId))) {
    throw new ApiError('API_KEY_NOT_FOUND', `API key ${keyId} does not exist.`)
  }
}
