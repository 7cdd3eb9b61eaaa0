import { Type } from 'typebox'

/** A provider's registration id, as configured (OIDC_<ID>_*); an unknown one is 404, so any string reaches the route. */
export const RegistrationParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'The registration id of the OpenID provider (lower-case, e.g. google)', examples: ['google'] }),
}, { additionalProperties: false })

/** Unknown query parameters are ignored on the OpenID routes (CONTRACT §14), so no additionalProperties: false. */
export const StartSignInQuery = Type.Object({
  redirect_uri: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2000,
    format: 'uri',
    description: 'Where to send the browser afterwards, with login_code (or error); must start with an OIDC_REDIRECT_ALLOWLIST prefix',
  })),
  state: Type.Optional(Type.String({ maxLength: 1000, description: 'The client’s own value, returned unchanged beside login_code' })),
})

export const CallbackQuery = Type.Object({
  state: Type.Optional(Type.String({ maxLength: 1000 })),
  code: Type.Optional(Type.String({ maxLength: 4000 })),
  error: Type.Optional(Type.String({ maxLength: 1000 })),
  error_description: Type.Optional(Type.String({ maxLength: 4000 })),
})

export const Redirect = Type.Null({ description: 'A redirect; the target is in Location' })
