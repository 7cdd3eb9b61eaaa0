import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Envelope, ok } from '../http/schemas.js'
import type { Identity } from './identity.js'
import type { OidcProviders } from './oidc-providers.js'
import { CallbackQuery, Redirect, RegistrationParams, StartSignInQuery } from './oidc-schemas.js'
import {
  BINDING_COOKIE_PATH, BINDING_MAX_AGE_SECONDS, bindingCookieName, finishSignIn, FlowFailure, startSignIn, withQuery, type OidcDeps,
} from './oidc-service.js'
import { TokenPair } from './schemas.js'

/** The answers of the sign-in routes are never cached: they carry tokens, codes or one-time redirects. */
async function noStore (_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('cache-control', 'no-store')
}

/** A failure once the flow is known: to the flow's redirect_uri with `error=<CODE>`, or the error envelope. */
function answerFailure (request: FastifyRequest, reply: FastifyReply, failure: FlowFailure): FastifyReply {
  if (failure.target.redirectUri === null) throw failure.error
  // Only the messages: the underlying errors may hold claims or the provider's answer (never logged whole).
  const cause = failure.error.cause instanceof Error ? failure.error.cause : undefined
  const underlying = cause?.cause instanceof Error ? cause.cause : undefined
  request.log.info({ code: failure.error.code, reason: failure.error.message, cause: cause?.message, underlying: underlying?.message }, 'OpenID sign-in failed')
  return reply.redirect(withQuery(failure.target.redirectUri, { error: failure.error.code }), 302)
}

/** One cookie's value from the request's Cookie header, or undefined. */
function cookieValue (request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/** The browser-binding cookie (CONTRACT §18): HttpOnly, SameSite=Lax, Secure behind an https PUBLIC_URL, for the flow's lifetime. */
function bindingCookie (name: string, value: string, maxAge: number, secure: boolean): string {
  return `${name}=${value}; Path=${BINDING_COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
}

/** The raw query string of the request (the callback checks the provider's parameters as sent). */
const rawQuery = (url: string) => url.includes('?') ? url.slice(url.indexOf('?')) : ''

/**
 * Sign-in with an OpenID Connect provider (CONTRACT §13, §14; docs/identity.md): the start, which
 * sends the browser to the provider, and the callback the provider sends it back to.
 */
export const oidcRoutes: FastifyPluginAsyncTypebox<{ identity: Identity, providers: OidcProviders }> = async (app, { identity, providers }) => {
  app.addHook('onReady', async () => providers.warmUp())
  const deps: OidcDeps = {
    tokens: identity.tokens, revocations: identity.revocations, providers, redirectAllowlist: app.config.oidcRedirectAllowlist,
  }
  const tags = ['auth']
  const secureCookie = app.config.publicUrl?.startsWith('https://') === true

  app.get('/oauth2/authorization/:id', {
    config: { access: 'public', authRateLimited: true, errors: ['RESOURCE_NOT_FOUND'] },
    onRequest: noStore,
    schema: {
      tags,
      operationId: 'startOidcSignIn',
      summary: 'Sign in with an OpenID provider: redirects to it',
      description: 'Answers 302 to the provider (authorization code flow with PKCE S256, state and nonce, scope `openid email profile`); the provider sends the browser back to GET /login/oauth2/code/{id}. The flow is stored for 10 minutes and works once. With redirect_uri (which must start with an OIDC_REDIRECT_ALLOWLIST prefix, compared as a URL: scheme, host and port exactly, path by whole segments; a path with an encoded `/`, `\\` or `.`, a `..` segment, a `\\` or a `;` is refused even under an allowed prefix; else 400 naming redirect_uri) the sign-in ends with a 302 there carrying login_code (traded at POST /api/v1/auth/login) and the client’s own state. The answer sets a short-lived cookie (HttpOnly, SameSite=Lax, path /login/oauth2/, 10 minutes) that binds the flow to this browser: the callback refuses a flow without it. Counts against AUTH_RATE_LIMIT. Unknown id: 404. A provider that cannot be reached: 503 with Retry-After. Unknown query parameters are ignored.',
      params: RegistrationParams,
      querystring: StartSignInQuery,
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    const { url, cookie } = await startSignIn(app.db, deps, request.params.id, request.query)
    reply.header('set-cookie', bindingCookie(cookie.name, cookie.value, BINDING_MAX_AGE_SECONDS, secureCookie))
    return reply.redirect(url.toString(), 302)
  })

  app.get('/login/oauth2/code/:id', {
    config: {
      access: 'public',
      errors: ['RESOURCE_NOT_FOUND', 'INVALID_TOKEN', 'UNAUTHORIZED', 'EMAIL_NOT_VERIFIED', 'INVALID_CLAIMS', 'ACCESS_DENIED', 'ACCOUNT_SUSPENDED', 'EMAIL_ALREADY_REGISTERED'],
    },
    onRequest: noStore,
    schema: {
      tags,
      operationId: 'finishOidcSignIn',
      summary: 'Where the OpenID provider sends the browser back',
      description: 'Checks and uses up the state (unknown, used or expired: 400 INVALID_TOKEN), then that the browser holds the cookie the start set for this flow (missing or wrong: INVALID_TOKEN; the cookie is cleared either way), exchanges the code and checks the ID token (signature, iss, aud, exp, nonce; refused, the provider’s error=, or no email: 401). The member is the one linked to the provider account. Otherwise the token must say email_verified: true (else 401 EMAIL_NOT_VERIFIED) and carry a valid email (an email or sub with a control character: 401 INVALID_CLAIMS); an admin with that email is never linked automatically (403 ACCESS_DENIED); another existing member with it is linked (an unverified one is taken back first: password, sessions, API keys and other links removed); else a member is created with the name claim cleaned of control and format characters. Suspended: 403. Without a redirect_uri the answer is the login answer (200); with one, a 302 to it with login_code and the client’s state, and any failure after the state is known is a 302 there with error=<CODE>. Answers carry Cache-Control: no-store.',
      params: RegistrationParams,
      querystring: CallbackQuery,
      response: { 200: Envelope(TokenPair), 302: Redirect },
    },
  }, async (request, reply) => {
    // The flow's cookie is spent with the flow, whatever the outcome.
    const cookie = request.query.state === undefined ? undefined : bindingCookieName(request.query.state)
    if (cookie !== undefined) reply.header('set-cookie', bindingCookie(cookie, '', 0, secureCookie))
    try {
      const binding = cookie === undefined ? undefined : cookieValue(request, cookie)
      const result = await finishSignIn(app.db, deps, request.params.id, request.query, rawQuery(request.url), binding)
      if (result.kind === 'tokens') return ok(result.tokens)
      return reply.redirect(result.location, 302)
    } catch (error) {
      if (error instanceof FlowFailure) return answerFailure(request, reply, error)
      throw error
    }
  })
}
