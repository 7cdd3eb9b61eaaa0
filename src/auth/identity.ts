import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config.js'
import type { Db } from '../db/schema.js'
import type { Authenticator } from '../http/access.js'
import { createMailer, type Mailer } from '../mail/mailer.js'
import { createAuthenticator } from './authenticate.js'
import { createCounterStore, LoginFailures, type CounterStore } from './limits.js'
import { Revocations } from './revocations.js'
import { AccessTokens, loadSigningKey } from './tokens.js'

/** Everything the identity features share: signing key, revocation list, limits, mail. */
export interface Identity {
  readonly tokens: AccessTokens
  readonly revocations: Revocations
  readonly counters: CounterStore
  readonly loginFailures: LoginFailures
  readonly mailer: Mailer
  readonly authenticate: Authenticator
  close (): Promise<void>
}

export async function createIdentity (
  db: Db,
  config: Config,
  log: FastifyBaseLogger,
  options: { revocationPollMs?: number | undefined } = {}
): Promise<Identity> {
  const signingKey = await loadSigningKey(db, config)
  const tokens = new AccessTokens(signingKey)
  const revocations = new Revocations(db, log, options.revocationPollMs)
  await revocations.start()
  const counters = await createCounterStore(config, log)
  const mailer = await createMailer(config, log)
  return {
    tokens,
    revocations,
    counters,
    loginFailures: new LoginFailures(counters, config.loginFailureLimit, signingKey),
    mailer,
    authenticate: createAuthenticator({ db, tokens, revocations }),
    async close () {
      revocations.stop()
      mailer.close()
      await counters.close()
    },
  }
}
