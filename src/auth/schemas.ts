import { Type, type Static } from 'typebox'
import { Component, documentAs, Envelope, Id, PathId, PlainName, Timestamp } from '../http/schemas.js'
import { Email, Password } from '../members/schemas.js'

/** Two shapes on one path: `{email, password}`, or `{loginCode}` from an OpenID sign-in (CONTRACT §13). */
const LoginPassword = Type.String({ minLength: 1, maxLength: 128 })
const LoginCode = Type.String({
  minLength: 1, maxLength: 200, description: 'The one-time code (60 s) an OpenID sign-in added to its redirect_uri; send it alone',
})
/** The service checks the either/or itself (auth/service.ts, naming the field); the document shows it as `oneOf`. */
export const LoginBody = documentAs(Type.Object({
  email: Type.Optional(Email),
  password: Type.Optional(LoginPassword),
  loginCode: Type.Optional(LoginCode),
}, { additionalProperties: false }), {
  oneOf: [
    Type.Object({ email: Email, password: LoginPassword }, { additionalProperties: false, title: 'PasswordLogin' }),
    Type.Object({ loginCode: LoginCode }, { additionalProperties: false, title: 'LoginCodeLogin' }),
  ],
})
export type LoginBody = Static<typeof LoginBody>

export const RefreshBody = Type.Object({
  refreshToken: Type.String({ minLength: 1, maxLength: 200 }),
}, { additionalProperties: false })
export type RefreshBody = Static<typeof RefreshBody>

export const TokenPair = Component('TokenPair', Type.Object({
  accessToken: Type.String({ description: 'JWT (HS256); send as Authorization: Bearer <accessToken>' }),
  refreshToken: Type.String({ description: 'Opaque; exchange at /auth/refresh for a new pair. Each one works once.' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Lifetime of the access token, in seconds' }),
  refreshExpiresIn: Type.Integer({ description: 'Lifetime of the refresh token, in seconds' }),
}, { description: 'An access token and the refresh token of its session' }))
export type TokenPair = Static<typeof TokenPair>

/** `currentPassword` may be left out only while the member has no password (signed up through an OpenID provider). */
export const ChangePasswordBody = Type.Object({
  currentPassword: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  newPassword: Password,
}, { additionalProperties: false })
export type ChangePasswordBody = Static<typeof ChangePasswordBody>

const ResetToken = Type.String({ minLength: 1, maxLength: 200 })

/**
 * Two shapes on one path: `{email}` asks for a reset mail; `{token, newPassword}` completes it. The
 * service checks the either/or itself (auth/service.ts, naming the field); the document shows it as `oneOf`.
 */
export const PasswordResetBody = documentAs(Type.Object({
  email: Type.Optional(Email),
  token: Type.Optional(ResetToken),
  newPassword: Type.Optional(Password),
}, { additionalProperties: false }), {
  oneOf: [
    Type.Object({ email: Email }, { additionalProperties: false, title: 'PasswordResetRequest', description: 'Mail a reset token to this address' }),
    Type.Object({ token: ResetToken, newPassword: Password }, { additionalProperties: false, title: 'PasswordResetCompletion', description: 'Set a new password with the mailed token' }),
  ],
})
export type PasswordResetBody = Static<typeof PasswordResetBody>

export const CreateApiKeyBody = Type.Object({
  name: PlainName({ minLength: 1, maxLength: 100, examples: ['warehouse sync'] }),
}, { additionalProperties: false })
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>

export const ApiKey = Component('ApiKey', Type.Object({
  keyId: Id,
  name: Type.String(),
  prefix: Type.String({ description: 'The first 8 characters of the secret, to recognise it' }),
  createdAt: Timestamp,
  revokedAt: Type.Union([Timestamp, Type.Null()]),
}, { description: 'An API key of the caller, without its secret' }))
export type ApiKey = Static<typeof ApiKey>

export const CreatedApiKey = Component('CreatedApiKey', Type.Object({
  keyId: Id,
  name: Type.String(),
  prefix: Type.String(),
  secret: Type.String({ description: 'Shown once: send it as X-API-Key. Only its hash is stored.' }),
  createdAt: Timestamp,
}, { description: 'A new API key with its secret, shown only in this answer' }))
export type CreatedApiKey = Static<typeof CreatedApiKey>

export const ApiKeyParams = Type.Object({ keyId: PathId }, { additionalProperties: false })

/** An OpenID provider's registration id, as GET /members/me lists it in identityProviders. */
export const IdentityParams = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z0-9-]+$', description: 'The registration id of the OpenID provider (as in identityProviders)', examples: ['google'] }),
}, { additionalProperties: false })

/** The answers' envelopes, made when this module loads (named components). */
export const TokenPairEnvelope = Envelope(TokenPair)
export const ApiKeyListEnvelope = Envelope(Type.Array(ApiKey))
export const CreatedApiKeyEnvelope = Envelope(CreatedApiKey)
