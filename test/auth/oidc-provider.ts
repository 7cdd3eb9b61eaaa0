import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, type JWK } from 'jose'
import Provider from 'oidc-provider'

/**
 * A real OpenID provider for the sign-in tests: oidc-provider (the certified implementation) on
 * 127.0.0.1, with confidential clients, accounts whose claims each test chooses, and a minimal login
 * page of our own (interactionDetails / interactionFinished) that the test's browser submits.
 * `misbehave` re-signs the token endpoint's ID token (with the provider's own key unless told otherwise)
 * after changing a claim, to check that the service refuses it.
 */
export interface TestProvider {
  readonly issuer: string
  readonly port: number
  /** Claims of each account, by subject; a test sets them before signing in. */
  readonly accounts: Map<string, Record<string, unknown>>
  /** Changes to the next ID tokens: claims to override, or a foreign key to sign with. */
  misbehave: { claims?: Record<string, unknown>, foreignKey?: boolean } | undefined
  /** Replaces the signing key with a new one (new kid); the key set then publishes the new key only. */
  rotateKeys (): Promise<void>
  stop (): Promise<void>
  start (): Promise<void>
}

export interface TestClient { clientId: string, clientSecret: string, redirectUris: string[] }

async function signingKey (): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = await exportJWK(privateKey)
  return { ...jwk, kid: `k-${Math.random().toString(36).slice(2, 10)}`, alg: 'RS256', use: 'sig' }
}

function buildProvider (issuer: string, clients: TestClient[], accounts: Map<string, Record<string, unknown>>, key: JWK): Provider {
  const provider = new Provider(issuer, {
    clients: clients.map(client => ({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      redirect_uris: client.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    })),
    jwks: { keys: [key] },
    cookies: { keys: ['test-cookie-key-not-secret'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The ID token carries the scopes' claims (by default they are only at userinfo when an access token is issued).
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // First-party clients: consent is given by configuration, so the login is the only interaction.
    async loadExistingGrant (ctx: any) {
      const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId)
      if (grantId) return ctx.oidc.provider.Grant.find(grantId)
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId })
      grant.addOIDCScope('openid email profile')
      await grant.save()
      return grant
    },
    async findAccount (_ctx: unknown, sub: string) {
      const claims = accounts.get(sub)
      if (!claims) return undefined
      return { accountId: sub, claims: async () => ({ sub, ...claims }) }
    },
  })
  return provider
}

/** Starts a provider on 127.0.0.1:`port` (0: a free one). */
export async function startTestProvider (options: { port?: number, clients: TestClient[], listen?: boolean }): Promise<TestProvider> {
  const accounts = new Map<string, Record<string, unknown>>()
  let server: Server | undefined
  let port = options.port ?? 0
  let key = await signingKey()
  let issuer = ''
  let provider: Provider | undefined
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined

  const state: TestProvider = {
    get issuer () { return issuer },
    get port () { return port },
    accounts,
    misbehave: undefined,
    async rotateKeys () {
      key = await signingKey()
      install()
    },
    async start () {
      server = createServer((req, res) => { serve(req, res).catch(() => res.destroy()) })
      await new Promise<void>(resolve => server!.listen(port, '127.0.0.1', resolve))
      port = (server.address() as { port: number }).port
      if (!provider) { issuer = `http://127.0.0.1:${port}`; install() }
    },
    async stop () {
      if (!server) return
      const closing = new Promise(resolve => server!.close(resolve))
      server.closeAllConnections()
      await closing
      server = undefined
    },
  }

  function install (): void {
    provider = buildProvider(issuer, options.clients, accounts, key)
    // The misbehaving provider: after the token endpoint answers, its ID token is changed and signed again.
    provider.use(async (ctx, next) => {
      await next()
      const body = ctx.body as { id_token?: string } | undefined
      if (ctx.path !== '/token' || !state.misbehave || !body?.id_token) return
      const claims = { ...decodeJwt(body.id_token), ...state.misbehave.claims }
      const signWith = state.misbehave.foreignKey ? await signingKey() : key
      body.id_token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: signWith.kid! }).sign(await importPrivate(signWith))
    })
    handler = provider.callback()
  }

  async function serve (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, issuer)
    const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(url.pathname)
    if (!match) return handler!(req, res)
    try {
      const details = await provider!.interactionDetails(req, res)
      if (req.method === 'GET') {
        // The login page: one field, the account to sign in as.
        res.writeHead(200, { 'content-type': 'text/html' })
        res.end(`<form method="post" action="/interaction/${details.uid}/login"><input name="login"><button>Sign in</button></form>`)
        return
      }
      const body = new URLSearchParams(await new Promise<string>((resolve) => {
        let text = ''
        req.on('data', (chunk: Buffer) => { text += chunk.toString() })
        req.on('end', () => resolve(text))
      }))
      const login = body.get('login') ?? ''
      const result = body.get('deny') !== null
        ? { error: 'access_denied', error_description: 'The user said no' }
        : { login: { accountId: login } }
      await provider!.interactionFinished(req, res, result, { mergeWithLastSubmission: false })
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' })
      res.end(String(error))
    }
  }

  if (options.listen !== false) await state.start()
  else {
    issuer = `http://127.0.0.1:${port}`
    install()
  }
  return state
}

async function importPrivate (jwk: JWK) {
  const { importJWK } = await import('jose')
  return importJWK(jwk, 'RS256')
}

/**
 * A browser over fetch: follows redirects by hand with a cookie jar, and submits the provider's login
 * page as `login` (or refuses with `deny`). Stops at the first answer that is not a redirect, or at a
 * redirect to a URL `stopAt` accepts (the client's redirect_uri); `rewrite` may send a URL elsewhere
 * (another instance behind the same public URL).
 */
export class Browser {
  private readonly cookies = new Map<string, string>()

  constructor (private readonly options: { login?: string, deny?: boolean, stopAt?: (url: URL) => boolean, rewrite?: (url: URL) => URL, beforeCallback?: (url: URL) => Promise<void> } = {}) {}

  async go (start: string): Promise<{ status: number, url: URL, headers: Headers, body: string }> {
    let url = new URL(start)
    let init: RequestInit = {}
    for (let hop = 0; hop < 20; hop++) {
      if (this.options.rewrite) url = this.options.rewrite(url)
      if (this.options.beforeCallback && url.pathname.startsWith('/login/oauth2/code/')) await this.options.beforeCallback(url)
      const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: this.cookieHeader() } })
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';', 1)
        const [name, ...value] = pair!.split('=')
        if (/max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name!.trim())
        else this.cookies.set(name!.trim(), value.join('='))
      }
      const body = await res.text()
      const location = res.headers.get('location')
      if (res.status >= 300 && res.status < 400 && location) {
        const next = new URL(location, url)
        if (this.options.stopAt?.(next)) return { status: res.status, url: next, headers: res.headers, body }
        url = next
        init = {}
        continue
      }
      const form = /<form method="post" action="([^"]+)"/.exec(body)
      if (res.status === 200 && form) {
        url = new URL(form[1]!, url)
        const fields: Record<string, string> = this.options.deny ? { deny: '1' } : { login: this.options.login ?? '' }
        init = { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() }
        continue
      }
      return { status: res.status, url, headers: res.headers, body }
    }
    throw new Error('too many redirects')
  }

  private cookieHeader (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}
