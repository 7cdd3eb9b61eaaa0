/**
 * A local OpenID provider for trying the sign-in by hand (README "Sign in with an OpenID provider"):
 * oidc-provider on 127.0.0.1 with one confidential client and one account, its own development login
 * page (any password). Prints the variables to start the service with. Development only: the keys and
 * secrets are made up at each start and nothing is stored.
 *
 *   npm run oidc:dev-provider            # provider on 127.0.0.1:9090, service expected on 127.0.0.1:8080
 *   OIDC_DEV_PORT=9191 SERVICE_URL=http://127.0.0.1:3000 npm run oidc:dev-provider
 */
import { randomBytes } from 'node:crypto'
import { exportJWK, generateKeyPair } from 'jose'
import Provider from 'oidc-provider'

const port = Number(process.env.OIDC_DEV_PORT ?? 9090)
const serviceUrl = (process.env.SERVICE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '')
const issuer = `http://127.0.0.1:${port}`
const clientSecret = randomBytes(24).toString('base64url')
const account = { sub: 'dev-user-1', email: 'dev.user@example.com', email_verified: true, name: 'Dev User' }

const { privateKey } = await generateKeyPair('RS256', { extractable: true })
const key = { ...(await exportJWK(privateKey)), kid: 'dev-key-1', alg: 'RS256', use: 'sig' }

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'order-service-dev',
    client_secret: clientSecret,
    redirect_uris: [`${serviceUrl}/login/oauth2/code/dev`],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  jwks: { keys: [key] },
  cookies: { keys: [randomBytes(16).toString('hex')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Put email and name into the ID token, where the service reads them.
  conformIdTokenClaims: false,
  // The development login and consent pages: any login name and password sign in as the one account.
  features: { devInteractions: { enabled: true } },
  async findAccount (_ctx: unknown, id: string) {
    return { accountId: id, claims: async () => ({ ...account, sub: id === account.sub ? id : account.sub }) }
  },
})

provider.listen(port, '127.0.0.1')
console.log(`OpenID provider (development) at ${issuer}; sign in there with any name and password.

Start the service with:

  PUBLIC_URL=${serviceUrl} \\
  OIDC_DEV_ISSUER=${issuer} \\
  OIDC_DEV_CLIENT_ID=order-service-dev \\
  OIDC_DEV_CLIENT_SECRET=${clientSecret} \\
  OIDC_REDIRECT_ALLOWLIST=http://localhost:5173/auth/callback \\
  npm start

Then open ${serviceUrl}/oauth2/authorization/dev in a browser.`)
