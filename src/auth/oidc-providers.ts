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
  /** What the last discovery did, for admin health: UNKNOWN until one has finished. */
  reachable: 'UP' | 'DOWN' | 'UNKNOWN'
  lastError: string | undefined
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
   * UP once discovered, DOWN while its discovery fails (tried again on the next sign-in), UNKNOWN before.
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
      registration.reachable = 'UP'
      registration.lastError = undefined
      return configuration
    }, (error: unknown) => {
      registration.discovered = undefined
      registration.reachable = 'DOWN'
      registration.lastError = error instanceof Error ? error.message : String(error)
      this.log.warn({ provider: id, issuer, reason: error instanceof Error ? error.message : String(error) }, 'OpenID provider discovery failed; trying again on the next sign-in')
      throw new ProviderUnavailable(id, { cause: error })
    })
    registration.discovered = discovered
    return discovered
  }

  /** The provider's authorization URL for a new flow (PKCE S256, state, nonce, scope `openid email profile`). */
  async authorizationUrl (id: string, flow: { state: string, nonce: string, codeVerifier: string }): Promise<URL> {
    const configuration = await this.configuration(id)
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
      if (isUnreachable(error)) throw new ProviderUnavailable(id, { cause: error })
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
