import type { Db } from '../db/schema.js'
import { ApiError, invalidParam } from '../errors.js'
import {
  claimUnverifiedMember, findMemberByEmail, findMemberByIdentity, insertIdentity, insertMember, lockMember,
} from '../members/repository.js'
import { randomToken, tokenHash } from '../members/secrets.js'
import type { MemberRow } from '../members/table.js'
import { insertFlow, insertLoginCode, takeFlow } from './oidc-repository.js'
import { ProviderUnavailable, SignInRefused, type OidcProviders, type VerifiedIdentity } from './oidc-providers.js'
import { revokeApiKeysOfMember, revokeSessions } from './repository.js'
import type { TokenPair } from './schemas.js'
import { openSession, type AuthDeps } from './service.js'

const FLOW_TTL_MS = 10 * 60 * 1000
const LOGIN_CODE_TTL_MS = 60 * 1000
/** What a 503 for an unreachable provider tells the client to wait, in seconds. */
export const PROVIDER_RETRY_AFTER_SECONDS = 30

export type OidcDeps = Pick<AuthDeps, 'tokens' | 'revocations'> & {
  providers: OidcProviders
  redirectAllowlist: readonly string[]
}

/**
 * Whether `target` starts with one of the allowlist's prefixes, compared as parsed URLs: scheme, host
 * and port exactly, the path by whole segments (`/cb` allows `/cb` and `/cb/x`, not `/cb-evil`).
 */
export function isAllowedRedirect (target: string, allowlist: readonly string[]): boolean {
  let url: URL
  try { url = new URL(target) } catch { return false }
  if (!['http:', 'https:'].includes(url.protocol) || url.username !== '' || url.password !== '' || url.hash !== '') return false
  return allowlist.some((prefix) => {
    const allowed = new URL(prefix)
    if (allowed.protocol !== url.protocol || allowed.host !== url.host) return false
    const base = allowed.pathname.replace(/\/+$/, '')
    return base === '' || url.pathname === base || url.pathname.startsWith(base + '/')
  })
}

function unknownRegistration (id: string): ApiError {
  return new ApiError('RESOURCE_NOT_FOUND', `There is no OpenID provider ${JSON.stringify(id)}.`)
}

export function unavailable (error: ProviderUnavailable): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', `The OpenID provider ${error.registrationId} cannot be reached; try again later.`, {
    headers: { 'Retry-After': String(PROVIDER_RETRY_AFTER_SECONDS) }, cause: error,
  })
}

/** Starts a sign-in: stores the flow (any instance can finish it) and returns the provider's authorization URL. */
export async function startSignIn (
  db: Db, deps: OidcDeps, id: string, query: { redirect_uri?: string, state?: string }
): Promise<URL> {
  if (!deps.providers.has(id)) throw unknownRegistration(id)
  if (query.redirect_uri !== undefined && !isAllowedRedirect(query.redirect_uri, deps.redirectAllowlist)) {
    throw invalidParam('redirect_uri', 'is not an allowed redirect target (OIDC_REDIRECT_ALLOWLIST)')
  }
  const flow = { state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() }
  let url: URL
  try {
    url = await deps.providers.authorizationUrl(id, flow)
  } catch (error) {
    if (error instanceof ProviderUnavailable) throw unavailable(error)
    throw error
  }
  await insertFlow(db, {
    state_hash: tokenHash(flow.state),
    registration_id: id,
    code_verifier: flow.codeVerifier,
    nonce: flow.nonce,
    redirect_uri: query.redirect_uri ?? null,
    client_state: query.state ?? null,
  }, FLOW_TTL_MS)
  return url
}

/** Where a sign-in goes once its state is known: back to the client's redirect_uri, or answered here. */
export interface FlowTarget {
  redirectUri: string | null
  clientState: string | null
}

export type SignInResult =
  | { kind: 'tokens', tokens: TokenPair }
  | { kind: 'redirect', location: string }

/** A failure after the flow is known: the route answers it, or sends it to the flow's redirect_uri. */
export class FlowFailure extends Error {
  constructor (readonly error: ApiError, readonly target: FlowTarget) {
    super(error.message)
    this.name = 'FlowFailure'
  }
}

/** `redirectUri` with `params` added to its query (those already there are kept). */
export function withQuery (redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  return url.toString()
}

/**
 * Finishes a sign-in at the callback. The state is checked first and used up (also when the exchange
 * then fails); unknown, used or expired → 400 INVALID_TOKEN. After that every failure is a FlowFailure.
 */
export async function finishSignIn (
  db: Db, deps: OidcDeps, id: string, query: { state?: string, code?: string, error?: string }, rawQuery: string
): Promise<SignInResult> {
  if (!deps.providers.has(id)) throw unknownRegistration(id)
  const flow = query.state === undefined ? undefined : await takeFlow(db, tokenHash(query.state))
  if (!flow || !flow.live || flow.registration_id !== id) {
    throw new ApiError('INVALID_TOKEN', 'The sign-in state is unknown, used or expired; start the sign-in again.')
  }
  const target: FlowTarget = { redirectUri: flow.redirect_uri, clientState: flow.client_state }
  try {
    if (query.error !== undefined) throw new SignInRefused('The provider did not sign the member in.')
    if (query.code === undefined) throw new SignInRefused('The provider sent no authorization code.')
    const identity = await deps.providers.exchange(id, rawQuery, { state: query.state!, nonce: flow.nonce, codeVerifier: flow.code_verifier })
    const member = await memberFor(db, deps, id, identity)
    if (target.redirectUri === null) return { kind: 'tokens', tokens: await openSession(db, deps, member.id) }
    if (member.status === 'SUSPENDED') throw new ApiError('ACCOUNT_SUSPENDED', 'This account is suspended.')
    const code = randomToken()
    await insertLoginCode(db, { hash: tokenHash(code), memberId: member.id, ttlMs: LOGIN_CODE_TTL_MS })
    return {
      kind: 'redirect',
      location: withQuery(target.redirectUri, { login_code: code, ...(target.clientState !== null && { state: target.clientState }) }),
    }
  } catch (error) {
    if (error instanceof ProviderUnavailable) throw new FlowFailure(unavailable(error), target)
    if (error instanceof SignInRefused) {
      throw new FlowFailure(new ApiError('UNAUTHORIZED', error.message, { cause: error.cause }), target)
    }
    if (error instanceof ApiError) throw new FlowFailure(error, target)
    throw error
  }
}

/**
 * The member of a provider account (CONTRACT §13, §14): the one linked to (issuer, subject); on first
 * sign-in, the member with the token's email if the token says it is verified (an unverified member is
 * taken back: password removed, sessions and API keys revoked), else 409; or a new member.
 */
async function memberFor (db: Db, deps: OidcDeps, id: string, identity: VerifiedIdentity): Promise<MemberRow> {
  const linked = await findMemberByIdentity(db, identity.issuer, identity.subject)
  if (linked) return assertActive(linked)
  const email = identity.email
  if (email === undefined) throw new SignInRefused('The ID token carries no email.')
  const link = { issuer: identity.issuer, subject: identity.subject, registrationId: id }
  const { member, revoked } = await db.transaction().execute(async (trx) => {
    const existing = await findMemberByEmail(trx, email)
    if (existing) {
      if (!identity.emailVerified) {
        throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email exists; the provider does not vouch for the address, so it is not linked.')
      }
      let member = (await lockMember(trx, existing.id))!
      let revoked: string[] = []
      if (!member.email_verified) {
        member = await claimUnverifiedMember(trx, member.id)
        await revokeApiKeysOfMember(trx, member.id)
        revoked = await revokeSessions(trx, { memberId: member.id }, 'taken back by the address owner (OpenID sign-in)')
      }
      await linkOrFindRace(trx, { ...link, memberId: member.id })
      return { member, revoked }
    }
    const name = (identity.name?.trim() || email.slice(0, email.indexOf('@')) || email).slice(0, 100)
    const created = await insertMember(trx, { email, passwordHash: null, name, emailVerified: identity.emailVerified })
    if (!created) throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email was registered at the same moment; sign in again.')
    await linkOrFindRace(trx, { ...link, memberId: created.id })
    return { member: created, revoked: [] as string[] }
  })
  deps.revocations.revoke(revoked)
  return assertActive(member)
}

/** Links the account; if a concurrent first sign-in of the same account linked it meanwhile, this one is refused (sign in again). */
async function linkOrFindRace (trx: Parameters<typeof insertIdentity>[0], identity: Parameters<typeof insertIdentity>[1]): Promise<void> {
  if (!(await insertIdentity(trx, identity))) {
    throw new SignInRefused('This provider account was linked by a sign-in at the same moment; sign in again.')
  }
}

function assertActive (member: MemberRow): MemberRow {
  if (member.status === 'SUSPENDED') throw new ApiError('ACCOUNT_SUSPENDED', 'This account is suspended.')
  return member
}
