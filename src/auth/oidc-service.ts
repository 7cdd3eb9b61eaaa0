import type { Db } from '../db/schema.js'
import { ApiError, invalidParam } from '../errors.js'
import fullFormatsModule from 'ajv-formats/dist/formats.js'
import {
  claimUnverifiedMember, deleteIdentitiesOfMember, findMemberByEmail, findMemberByIdentity, hasIdentityThrough, insertIdentity, insertMember,
  lockMember,
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
  if (hasTraversal(target)) return false
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

/** The path of a URL as written (before the URL parser resolves `..` and turns `\\` into `/`). */
const RAW_PATH = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*([^?#]*)/i
const ENCODED_SEPARATOR = /%(2f|5c|2e)/i

/**
 * Whether a redirect target's path could lead out of an allowed prefix on some server (CONTRACT §18):
 * an encoded `/`, `\` or `.`, a `..` segment, a `\` or a `;` (path parameters), judged on the path as
 * received and again after one percent-decoding.
 */
function hasTraversal (target: string): boolean {
  const raw = RAW_PATH.exec(target)?.[1] ?? ''
  let decoded: string
  try { decoded = decodeURIComponent(raw) } catch { return true }
  return [raw, decoded].some(path =>
    ENCODED_SEPARATOR.test(path) || path.includes(';') || path.includes('\\') || path.split('/').includes('..'))
}

function unknownRegistration (id: string): ApiError {
  return new ApiError('RESOURCE_NOT_FOUND', `There is no OpenID provider ${JSON.stringify(id)}.`)
}

export function unavailable (error: ProviderUnavailable): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', `The OpenID provider ${error.registrationId} cannot be reached; try again later.`, {
    headers: { 'Retry-After': String(PROVIDER_RETRY_AFTER_SECONDS) }, cause: error,
  })
}

/**
 * The cookie that ties a flow to the browser that started it (CONTRACT §18): one per flow, named
 * after its state so that sign-ins started in two tabs do not undo each other, and holding a random
 * value whose hash the flow keeps. Another browser handed the callback URL (login CSRF) lacks it.
 */
export const bindingCookieName = (state: string) => `oidc_flow_${tokenHash(state).slice(0, 16)}`
export const BINDING_COOKIE_PATH = '/login/oauth2/'
export const BINDING_MAX_AGE_SECONDS = FLOW_TTL_MS / 1000

/** A started sign-in: where to send the browser, and the cookie that binds the flow to it. */
export interface StartedSignIn {
  url: URL
  cookie: { name: string, value: string }
}

/** Starts a sign-in: stores the flow (any instance can finish it) and returns the provider's authorization URL. */
export async function startSignIn (
  db: Db, deps: OidcDeps, id: string, query: { redirect_uri?: string, state?: string }
): Promise<StartedSignIn> {
  if (!deps.providers.has(id)) throw unknownRegistration(id)
  if (query.redirect_uri !== undefined && !isAllowedRedirect(query.redirect_uri, deps.redirectAllowlist)) {
    throw invalidParam('redirect_uri', hasTraversal(query.redirect_uri)
      ? 'must not contain an encoded "/", "\\" or ".", a ".." segment, a "\\" or a ";" in its path'
      : 'is not an allowed redirect target (OIDC_REDIRECT_ALLOWLIST)')
  }
  const flow = { state: randomToken(), nonce: randomToken(), codeVerifier: randomToken() }
  const binding = randomToken()
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
    binding_hash: tokenHash(binding),
  }, FLOW_TTL_MS)
  return { url, cookie: { name: bindingCookieName(flow.state), value: binding } }
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
  db: Db, deps: OidcDeps, id: string, query: { state?: string, code?: string, error?: string }, rawQuery: string,
  binding: string | undefined
): Promise<SignInResult> {
  if (!deps.providers.has(id)) throw unknownRegistration(id)
  const flow = query.state === undefined ? undefined : await takeFlow(db, tokenHash(query.state))
  if (!flow || !flow.live || flow.registration_id !== id) {
    throw new ApiError('INVALID_TOKEN', 'The sign-in state is unknown, used or expired; start the sign-in again.')
  }
  const target: FlowTarget = { redirectUri: flow.redirect_uri, clientState: flow.client_state }
  try {
    if (binding === undefined || flow.binding_hash === null || tokenHash(binding) !== flow.binding_hash) {
      throw new ApiError('INVALID_TOKEN', 'This sign-in was not started in this browser; start the sign-in again.')
    }
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
 * The member of a provider account (CONTRACT §13, §14, §18): the one linked to (issuer, subject),
 * whatever the token now says of the email. Otherwise the email must be vouched for
 * (`email_verified: true`, else 401 before any matching by email) and well formed; an admin with that
 * email is never linked automatically (403); an unverified member with it is taken back (password,
 * sessions, API keys and every other link removed); else a new member is made.
 */
async function memberFor (db: Db, deps: OidcDeps, id: string, identity: VerifiedIdentity): Promise<MemberRow> {
  if (CONTROL.test(identity.subject) || (identity.email !== undefined && CONTROL.test(identity.email))) {
    throw invalidClaims('The ID token’s sub or email holds a control character.')
  }
  const linked = await findMemberByIdentity(db, identity.issuer, identity.subject)
  if (linked) return assertActive(linked)
  if (identity.email === undefined) throw new SignInRefused('The ID token carries no email.')
  if (!identity.emailVerified) {
    throw new ApiError('EMAIL_NOT_VERIFIED', 'The provider does not vouch for this email address (email_verified is not true), so no account is made or linked with it.')
  }
  const email = identity.email.trim()
  if (email.length > 254 || !EMAIL.test(email)) throw invalidClaims('The ID token’s email is not a valid email address.')
  const link = { issuer: identity.issuer, subject: identity.subject, registrationId: id }
  const { member, revoked } = await db.transaction().execute(async (trx) => {
    const existing = await findMemberByEmail(trx, email)
    if (existing) {
      let member = (await lockMember(trx, existing.id))!
      if (member.role === 'ADMIN' && !(await hasIdentityThrough(trx, member.id, id))) {
        throw new ApiError('ACCESS_DENIED', 'Admins sign in with their password: an admin account is never linked to an OpenID provider automatically.')
      }
      let revoked: string[] = []
      if (!member.email_verified) {
        member = await claimUnverifiedMember(trx, member.id)
        await revokeApiKeysOfMember(trx, member.id)
        await deleteIdentitiesOfMember(trx, member.id)
        revoked = await revokeSessions(trx, { memberId: member.id }, 'taken back by the address owner (OpenID sign-in)')
      }
      await linkOrFindRace(trx, { ...link, memberId: member.id })
      return { member, revoked }
    }
    const created = await insertMember(trx, { email, passwordHash: null, name: nameFromClaims(identity.name, email), emailVerified: true })
    if (!created) throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email was registered at the same moment; sign in again.')
    await linkOrFindRace(trx, { ...link, memberId: created.id })
    return { member: created, revoked: [] as string[] }
  })
  deps.revocations.revoke(revoked)
  return assertActive(member)
}

/** Control characters (Unicode Cc, U+0000 included): never in a sub or an email claim. */
const CONTROL = /\p{Cc}/u
/** What a `name` claim loses (CONTRACT §18): control and format characters (bidirectional ones among them) and line separators. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu
/** Registration's own email rule (ajv-formats' `email`, as the Email schema checks it). */
const EMAIL = fullFormatsModule.fullFormats.email as RegExp
const NAME_MAX = 100

/** A new member's name: the `name` claim cleaned and cut to the registration limit, else the email's local part. */
export function nameFromClaims (claim: string | undefined, email: string): string {
  const cleaned = [...(claim ?? '').replace(UNPRINTABLE, '').trim()].slice(0, NAME_MAX).join('').trim()
  return cleaned || [...email.slice(0, email.indexOf('@'))].slice(0, NAME_MAX).join('') || email.slice(0, NAME_MAX)
}

function invalidClaims (detail: string): ApiError {
  return new ApiError('INVALID_CLAIMS', detail)
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
