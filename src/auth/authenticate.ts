import type { FastifyRequest } from 'fastify'
import type { Db } from '../db/schema.js'
import { unauthorized, type Authenticator, type Principal } from '../http/access.js'
import { tokenHash } from '../members/secrets.js'
import { findApiKeyOwner } from './repository.js'
import type { Revocations } from './revocations.js'
import type { AccessTokens } from './tokens.js'

const BEARER = /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i

/**
 * Resolves the caller from `Authorization: Bearer <access token>` or, failing that, `X-API-Key`.
 * A bearer token costs no database round trip: its signature and expiry are checked, and its
 * session and member against the in-memory revocation list, synchronously (the answer, or the
 * UNAUTHORIZED error thrown). An API key is looked up by its hash: a promise. See `Authenticator`.
 */
export function createAuthenticator (deps: { db: Db, tokens: AccessTokens, revocations: Revocations }): Authenticator {
  return (request: FastifyRequest): Principal | null | Promise<Principal> => {
    const header = request.headers.authorization
    if (header !== undefined) {
      const match = BEARER.exec(header)
      if (!match) throw unauthorized('The Authorization header must be "Bearer <access token>".')
      const principal = deps.tokens.verify(match[1]!)
      if (deps.revocations.isRevoked(principal.sessionId) || deps.revocations.isSuspended(principal.memberId)) {
        throw unauthorized('The access token has been revoked.')
      }
      return principal
    }
    const apiKey = request.headers['x-api-key']
    if (apiKey === undefined) return null
    return findApiKeyOwner(deps.db, tokenHash(String(apiKey))).then(key => {
      if (!key || key.revoked_at !== null || key.status !== 'ACTIVE') throw unauthorized('The API key is invalid or revoked.')
      return { memberId: key.id, role: key.role, sessionId: null }
    })
  }
}
