import { Type, type Static } from 'typebox'
import { Email } from '../members/schemas.js'

export const LoginBody = Type.Object({
  email: Email,
  password: Type.String({ minLength: 1, maxLength: 128 }),
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBody>

export const RefreshBody = Type.Object({
  refreshToken: Type.String({ minLength: 1, maxLength: 200 }),
}, { additionalProperties: false })
export type RefreshBody = Static<typeof RefreshBody>

export const TokenPair = Type.Object({
  accessToken: Type.String({ description: 'JWT (HS256); send as Authorization: Bearer <accessToken>' }),
  refreshToken: Type.String({ description: 'Opaque; exchange at /auth/refresh for a new pair. Each one works once.' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Lifetime of the access token, in seconds' }),
  refreshExpiresIn: Type.Integer({ description: 'Lifetime of the refresh token, in seconds' }),
})
export type TokenPair = Static<typeof TokenPair>
