/**
 * A local OpenID provider for trying the sign-in by hand (README "Sign in with an OpenID provider"):
 * oidc-provider on 127.0.0.1 with one confidential client and one account, its own development login
 * page (any password). Prints the variables to start the service with. For development only.
 *
 * Its client secret, signing key and cookie key are made on the first start and kept in a git-ignored
 * file (data/oidc-dev-provider.json; OIDC_DEV_STATE names another), together with its port: stopped
 * and started again, it is the same provider, and the service signs in with it without a restart.
 * Delete the file for a fresh provider.
 *
 *   npm run oidc:dev-provider            # provider on 127.0.0.1:9090, service expected on 127.0.0.1:8080
 *   OIDC_DEV_PORT=9191 SERVICE_URL=http://127.0.0.1:3000 npm run oidc:dev-provider
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { exportJWK, generateKeyPair, type JWK } from 'jose'
import Provider from 'oidc-provider'

interface DevState { port: number, clientSecret: string, signingKey: JWK, cookieKey: string }

const stateFile = process.env.OIDC_DEV_STATE ?? fileURLToPath(new URL('../data/oidc-dev-provider.json', import.meta.url))

/** The kept state, or a new one (written with owner-only access: it holds a secret and a private key). */
async function loadState (): Promise<{ state: DevState, created: boolean, changed: boolean }> {
  const kept = await readFile(stateFile, 'utf8').then(text => JSON.parse(text) as DevState, () => undefined)
  const port = process.env.OIDC_DEV_PORT ? Number(process.env.OIDC_DEV_PORT) : kept?.port ?? 9090
  if (kept) return { state: { ...kept, port }, created: false, changed: kept.port !== port }
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const state: DevState = {
    port,
    clientSecret: randomBytes(24).toString('base64url'),
    signingKey: { ...(await exportJWK(privateKey)), kid: `dev-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' },
    cookieKey: randomBytes(16).toString('hex'),
  }
  return { state, created: true, changed: true }
}

const { state, created, changed } = await loadState()
if (changed) {
  await mkdir(dirname(stateFile), { recursive: true })
  await writeFile(stateFile, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 })
}

const serviceUrl = (process.env.SERVICE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
const issuer = `http://127.0.0.1:${state.port}`
const account = { sub: 'dev-user-1', email: 'dev.user@example.com', email_verified: true, name: 'Dev User' }

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'order-service-dev',
    client_secret: state.clientSecret,
    redirect_uris: [`${serviceUrl}/login/oauth2/code/dev`],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  jwks: { keys: [state.signingKey] },
  cookies: { keys: [state.cookieKey] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Put email and name into the ID token, where the service reads them.
  conformIdTokenClaims: false,
  // The development login and consent pages: any login name and password sign in as the one account.
  features: { devInteractions: { enabled: true } },
  async findAccount (_ctx: unknown, id: string) {
    return { accountId: id, claims: async () => ({ ...account, sub: id === account.sub ? id : account.sub }) }
  },
})

const server = createServer(provider.callback())
server.listen(state.port, '127.0.0.1')
server.once('error', (error: NodeJS.ErrnoException) => {
  console.error(`The development OpenID provider cannot listen on 127.0.0.1:${state.port}: ${error.message}`)
  process.exit(1)
})
server.once('listening', () => {
  console.log(`OpenID provider (for development only: any name and password sign in) at ${issuer}
Its client secret and keys are ${created ? 'new, kept' : 'the ones kept'} in ${stateFile}: restarted, it signs in with them again.

Start the service with:

  PUBLIC_URL=${serviceUrl} \\
  OIDC_DEV_ISSUER=${issuer} \\
  OIDC_DEV_CLIENT_ID=order-service-dev \\
  OIDC_DEV_CLIENT_SECRET=${state.clientSecret} \\
  OIDC_REDIRECT_ALLOWLIST=http://localhost:5173/auth/callback \\
  npm start

Then open ${serviceUrl}/oauth2/authorization/dev in a browser.`)
})
