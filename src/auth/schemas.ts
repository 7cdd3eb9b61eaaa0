import { Type, type Static } from 'typebox'
import { Email } from '../members/schemas.js'

export const LoginBody = Type.Object({
  email: Email,
  password: Type.String({ minLength: 1, maxLength: 128 }),
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBody>

export const TokenResponse = Type.Object({
  accessToken: Type.String(),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Lifetime of the access token, in seconds' }),
})
export type TokenResponse = Static<typeof TokenResponse>
