import { Type, type Static } from 'typebox'
import { Id, PathId, PlainName, Timestamp } from '../http/schemas.js'
import { Email, Password } from '../members/schemas.js'

/** Two shapes on one path: `{email, password}`, or `{loginCode}` from an OpenID sign-in (CONTRACT §13). */
export const LoginBody = Type.Object({
  email: Type.Optional(Email),
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  loginCode: Type.Optional(Type.String({
    minLength: 1, maxLength: 200, description: 'The one-time code (60 s) an OpenID sign-in added to its redirect_uri; send it alone',
  })),
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

/** `currentPassword` may be left out only while the member has no password (signed up through an OpenID provider). */
export const ChangePasswordBody = Type.Object({
  currentPassword: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  newPassword: Password,
}, { additionalProperties: false })
export type ChangePasswordBody = Static<typeof ChangePasswordBody>

/** Two shapes on one path: `{email}` asks for a reset mail; `{token, newPassword}` completes it. */
export const PasswordResetBody = Type.Object({
  email: Type.Optional(Email),
  token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  newPassword: Type.Optional(Password),
}, { additionalProperties: false })
export type PasswordResetBody = Static<typeof PasswordResetBody>

export const CreateApiKeyBody = Type.Object({
  name: PlainName({ minLength: 1, maxLength: 100, examples: ['warehouse sync'] }),
}, { additionalProperties: false })
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>

export const ApiKey = Type.Object({
  keyId: Id,
  name: Type.String(),
  prefix: Type.String({ description: 'The first 8 characters of the secret, to recognise it' }),
  createdAt: Timestamp,
  revokedAt: Type.Union([Timestamp, Type.Null()]),
})
export type ApiKey = Static<typeof ApiKey>

export const CreatedApiKey = Type.Object({
  keyId: Id,
  name: Type.String(),
  prefix: Type.String(),
  secret: Type.String({ description: 'Shown once: send it as X-API-Key. Only its hash is stored.' }),
  createdAt: Timestamp,
})
export type CreatedApiKey = Static<typeof CreatedApiKey>

export const ApiKeyParams = Type.Object({ keyId: PathId }, { additionalProperties: false })
