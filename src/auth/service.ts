import type { FastifyRequest } from 'fastify'
import type { Db } from '../db/schema.js'
import { unauthorized, type Authenticator } from '../http/access.js'
import { ApiError } from '../http/errors.js'
import { verifyAgainstNothing, verifyPassword } from '../members/passwords.js'
import { findMemberByEmail } from '../members/repository.js'
import type { LoginBody, TokenResponse } from './schemas.js'
import type { AccessTokens } from './tokens.js'

const BEARER = /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i

/** Reads `Authorization: Bearer <jwt>`; no header → anonymous, anything else invalid → 401. */
export function bearerAuthenticator (tokens: AccessTokens): Authenticator {
  return async (request: FastifyRequest) => {
    const header = request.headers.authorization
    if (header === undefined) return null
    const match = BEARER.exec(header)
    if (!match) throw unauthorized('The Authorization header must be "Bearer <access token>".')
    return tokens.verify(match[1]!)
  }
}

/** Wrong email and wrong password get the same answer, after the same amount of work. */
export async function login (db: Db, tokens: AccessTokens, body: LoginBody): Promise<TokenResponse> {
  const member = await findMemberByEmail(db, body.email.trim())
  const valid = member ? await verifyPassword(member.password_hash, body.password) : await verifyAgainstNothing(body.password)
  if (!member || !valid) throw unauthorized('The email or password is incorrect.', false)
  if (member.status === 'SUSPENDED') throw new ApiError('ACCOUNT_SUSPENDED', 'This account is suspended.')
  const access = await tokens.issue(member)
  return { accessToken: access.token, tokenType: 'Bearer', expiresIn: access.expiresIn }
}
