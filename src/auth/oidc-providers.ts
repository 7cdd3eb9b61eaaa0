import type * as OpenIdClient from 'openid-client'
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose'
import type { FastifyBaseLogger } from 'fastify'
import type { Config, OidcProviderConfig } from '../config.js'

/** The callback path of a registration; `{PUBLIC_URL}` in front of it is the redirect URI registered at the provider. */
export const callbackPath = (id: string) => `/login/oauth2/code/${id}`

/** A provider could not be reached (discovery, token endpoint or keys): the sign-in answers 503. */
export class ProviderUnavailable extends Error {
  constructor (readonly registrationId: string, options: { cause: unknown }) {
    super(`The OpenID provider ${registrationId} cannot be reached.`, options)
    this.name = 'ProviderUnavailable'
  }
}

/** The provider refused the sign-in, or what it sent back does not check out: the sign-in answers 401. */
export class SignInRefused extends Error {
  constructor (message: string, options?: { cause: unknown }) {
    super(message, options)
    this.name = 'SignInRefused'
  }
}

export interface OidcOptions {
  /** The least time between two fetches of a provider's key set for an unknown `kid` (default 30 s; tests shorten it). */
  jwksCooldownMs?: number
  /** How long a request to a provider may take (default 10 s). */
  timeoutMs?: number
  /** How long a provider that answered is taken to be up before a sign-in asks again (default 5 s; tests set 0). */
  reachableForMs?: number
  /** How long the check before a sign-in waits for the provider's answer (default 3 s). */
  reachCheckTimeoutMs?: number
}

export interface VerifiedIdentity {
  issuer: string
  subject: string
  email: string | undefined
  emailVerified: boolean
  name: string | undefined
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ERR_JWKS_TIMEOUT'])

/** Whether an error (or one of its causes) means the provider could not be reached, rather than that it said no. */
export function isUnreachable (error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('UND_ERR'))) return true
    if (current.name === 'TimeoutError' || current.name === 'AbortError') return true
    if (current instanceof TypeError && current.message === 'fetch failed') return true
    // A provider answering 5xx (or a gateway in front of it) is down for this purpose.
    const status = (current as { status?: unknown }).status
    if (typeof status === 'number' && status >= 500) return true
    if (current.cause instanceof Response && current.cause.status >= 500) return true
  }
  return false
}

/**
 * openid-client, loaded on first use: most deployments configure no provider, and it costs ~0.9 MB
 * of heap (issue 22). Imported once; every caller shares the import.
 */
let openIdClient: Promise<typeof OpenIdClient> | undefined
const loadOpenIdClient = () => (openIdClient ??= import('openid-client'))

interface Registration {
  readonly config: OidcProviderConfig
  readonly redirectUri: string
  /** The discovered configuration; undefined until discovery succeeds (tried again on each use until then). */
  discovered: Promise<OpenIdClient.Configuration> | undefined
  keys: ReturnType<typeof createRemoteJWKSet> | undefined
  /** What the last discovery or reachability check found, for admin health: UNKNOWN until one has finished. */
  reachable: 'UP' | 'DOWN' | 'UNKNOWN'
  lastError: string | undefined
  /** When the provider last answered (performance.now()); -Infinity before it has. */
  answeredAt: number
  /** The reachability check under way, shared by the sign-ins that start meanwhile. */
  checking: Promise<void> | undefined
}

/**
 * The configured OpenID providers. Discovery (`/.well-known/openid-configuration`) runs at start-up in
 * the background and is kept; a provider unreachable then is tried again on use. ID tokens are checked
 * by openid-client (iss, aud, exp, nonce) and their signature against the provider's published keys
 * (jose's remote key set: cached, fetched again once for an unknown `kid`, at most once per cooldown).
 */
export class OidcProviders {
  private readonly registrations = new Map<string, Registration>()

  constructor (config: Config, private readonly log: FastifyBaseLogger, private readonly options: OidcOptions = {}) {
    for (const provider of config.oidcProviders) {
      this.registrations.set(provider.id, {
        config: provider,
        redirectUri: config.publicUrl + callbackPath(provider.id),
        discovered: undefined,
        keys: undefined,
        reachable: 'UNKNOWN',
        lastError: undefined,
        answeredAt: -Infinity,
        checking: undefined,
      })
    }
  }

  has (id: string): boolean {
    return this.registrations.has(id)
  }

  ids (): string[] {
    return [...this.registrations.keys()]
  }

  /**
   * Each provider as admin health shows it (CONTRACT §14: a component, never the instance's status):
   * UP once discovered and while it answers, DOWN while its discovery, the check before a sign-in or
   * the code exchange cannot reach it (tried again on the next sign-in), UNKNOWN before.
   */
  health (): { status: 'UP' | 'DOWN' | 'UNKNOWN', components: Record<string, { status: string, details: Record<string, string> }> } {
    const components: Record<string, { status: string, details: Record<string, string> }> = {}
    for (const [id, registration] of this.registrations) {
      components[id] = {
        status: registration.reachable,
        details: { issuer: registration.config.issuer, ...(registration.lastError ? { error: 'The OpenID provider could not be reached.' } : {}) },
      }
    }
    const states = Object.values(components).map(component => component.status)
    return { status: states.includes('DOWN') ? 'DOWN' : states.includes('UNKNOWN') ? 'UNKNOWN' : 'UP', components }
  }

  /**
   * Loads openid-client when a provider is configured (a failure to load fails start-up, as the static
   * import did), then starts discovery of every provider without waiting; its failures are logged and
   * retried on use.
   */
  async warmUp (): Promise<void> {
    if (this.registrations.size === 0) return
    await loadOpenIdClient()
    for (const id of this.registrations.keys()) {
      this.configuration(id).catch(() => { /* logged in configuration(); tried again on use */ })
    }
  }

  private configuration (id: string): Promise<OpenIdClient.Configuration> {
    const registration = this.registrations.get(id)!
    if (registration.discovered) return registration.discovered
    const { issuer, clientId, clientSecret } = registration.config
    const insecure = new URL(issuer).protocol === 'http:' // only loopback issuers pass config.ts
    const discovered = loadOpenIdClient().then(client => client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretBasic(clientSecret), {
      timeout: (this.options.timeoutMs ?? 10_000) / 1000,
      ...(insecure && { execute: [client.allowInsecureRequests] }),
    })).then((configuration) => {
      const jwksUri = configuration.serverMetadata().jwks_uri
      if (!jwksUri) throw new Error(`The OpenID provider ${id} publishes no jwks_uri`)
      registration.keys = createRemoteJWKSet(new URL(jwksUri), {
        cooldownDuration: this.options.jwksCooldownMs ?? 30_000,
        timeoutDuration: this.options.timeoutMs ?? 10_000,
      })
      this.log.info({ provider: id, issuer }, 'OpenID provider discovered')
      this.answered(registration)
      return configuration
    }, (error: unknown) => {
      registration.discovered = undefined
      this.unanswered(registration, error)
      this.log.warn({ provider: id, issuer, reason: error instanceof Error ? error.message : String(error) }, 'OpenID provider discovery failed; trying again on the next sign-in')
      throw new ProviderUnavailable(id, { cause: error })
    })
    registration.discovered = discovered
    return discovered
  }

  private answered (registration: Registration): void {
    registration.answeredAt = performance.now()
    registration.reachable = 'UP'
    registration.lastError = undefined
  }

  private unanswered (registration: Registration, error: unknown): void {
    registration.answeredAt = -Infinity
    registration.reachable = 'DOWN'
    registration.lastError = error instanceof Error ? error.message : String(error)
  }

  /**
   * Checks that the provider answers before a browser is sent to it (CONTRACT §13: a provider that
   * cannot be reached → 503 with Retry-After). Discovery is kept once made, so without this a provider
   * that went down later would get the browser a redirect it cannot follow. The check is a GET of the
   * discovery document with a short timeout; an answer is trusted for `reachableForMs` (a burst of
   * sign-ins asks once, and checks under way are shared), a failure is not kept (the first sign-in
   * after the provider is back goes through).
   */
  private async assertReachable (id: string): Promise<void> {
    const registration = this.registrations.get(id)!
    if (performance.now() - registration.answeredAt < (this.options.reachableForMs ?? 5_000)) return
    registration.checking ??= this.checkReachable(id, registration).finally(() => { registration.checking = undefined })
    await registration.checking
  }

  private async checkReachable (id: string, registration: Registration): Promise<void> {
    const issuer = registration.config.issuer
    const document = new URL('.well-known/openid-configuration', issuer.endsWith('/') ? issuer : `${issuer}/`)
    try {
      const res = await fetch(document, { redirect: 'manual', signal: AbortSignal.timeout(this.options.reachCheckTimeoutMs ?? 3_000) })
      await res.body?.cancel()
      // A provider answering 5xx (or a gateway in front of it) is down for this purpose.
      if (res.status >= 500) throw Object.assign(new Error(`The discovery document answered HTTP ${res.status}`), { status: res.status })
      this.answered(registration)
    } catch (error) {
      this.unanswered(registration, error)
      this.log.warn({ provider: id, issuer, reason: error instanceof Error ? error.message : String(error) }, 'OpenID provider cannot be reached; sign-ins answer 503 until it is back')
      throw new ProviderUnavailable(id, { cause: error })
    }
  }

  /**
   * The provider's authorization URL for a new flow (PKCE S256, state, nonce, scope `openid email
   * profile`), once the provider is known to answer (else ProviderUnavailable).
   */
  async authorizationUrl (id: string, flow: { state: string, nonce: string, codeVerifier: string }): Promise<URL> {
    const configuration = await this.configuration(id)
    await this.assertReachable(id)
    const client = await loadOpenIdClient()
    return client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.registrations.get(id)!.redirectUri,
      scope: 'openid email profile',
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(flow.codeVerifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    })
  }

  /**
   * Exchanges the code the provider sent to the callback (`query` is the callback's raw query string)
   * and checks the ID token: iss, aud, exp and nonce (openid-client), then its signature.
   */
  async exchange (id: string, query: string, flow: { state: string, nonce: string, codeVerifier: string }): Promise<VerifiedIdentity> {
    const configuration = await this.configuration(id)
    const client = await loadOpenIdClient()
    const registration = this.registrations.get(id)!
    const currentUrl = new URL(registration.redirectUri)
    currentUrl.search = query
    let idToken: string | undefined
    try {
      const tokens = await client.authorizationCodeGrant(configuration, currentUrl, {
        pkceCodeVerifier: flow.codeVerifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      })
      idToken = tokens.id_token
    } catch (error) {
      if (isUnreachable(error)) {
        this.unanswered(registration, error)
        throw new ProviderUnavailable(id, { cause: error })
      }
      throw new SignInRefused('The provider refused the sign-in, or its answer did not check out.', { cause: error })
    }
    if (!idToken) throw new SignInRefused('The provider sent no ID token.')
    let claims: JWTPayload
    try {
      const metadata = configuration.serverMetadata()
      ;({ payload: claims } = await jwtVerify(idToken, registration.keys!, { issuer: metadata.issuer, audience: registration.config.clientId }))
      if (claims.nonce !== flow.nonce) throw new Error('nonce mismatch')
    } catch (error) {
      if (isUnreachable(error)) throw new ProviderUnavailable(id, { cause: error })
      throw new SignInRefused('The ID token did not check out (signature, issuer, audience, expiry or nonce).', { cause: error })
    }
    return {
      issuer: String(claims.iss),
      subject: String(claims.sub),
      email: typeof claims.email === 'string' && claims.email.length > 0 ? claims.email : undefined,
      emailVerified: claims.email_verified === true,
      name: typeof claims.name === 'string' ? claims.name : undefined,
    }
  }
}
