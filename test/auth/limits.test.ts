import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import type { DatabaseHandle } from '../../src/db/database.js'
import { ADMIN, assertError, BACKENDS, createTestDatabase, describeEachBackend, errorBody, STUCK_AFTER_MS, testConfig } from '../helper.js'
import { insertLoginCode } from '../../src/auth/oidc-repository.js'
import { randomToken, tokenHash } from '../../src/members/secrets.js'

const LOGIN = '/api/v1/auth/login'
const ADDRESS_LIMITED = 'Too many requests from this address; retry after the time in Retry-After.'
const EMAIL_LOCKED = 'Too many failed logins for this email; retry after the time in Retry-After.'
const WRONG = { code: 'UNAUTHORIZED', instance: LOGIN, detail: 'The email or password is incorrect.' }

/** A client address of its own for every call, so counters (per address) never leak between tests or runs. */
const address = () => `10.${[...randomBytes(3)].join('.')}`
const unique = (name: string) => `${name}-${Date.now()}-${randomBytes(4).toString('hex')}@example.com`

function assertSeconds (value: unknown, max: number, name: string): number {
  assert.match(String(value), /^\d+$/, `${name}: ${value}`)
  const seconds = Number(value)
  assert.ok(seconds >= 1 && seconds <= max, `${name} ${seconds} is not within 1..${max}`)
  return seconds
}

function assertRateLimitHeaders (res: LightMyRequestResponse, limit: number, remaining: number): void {
  assert.equal(res.headers['ratelimit-limit'], String(limit), res.body)
  assert.equal(res.headers['ratelimit-remaining'], String(remaining), res.body)
  assertSeconds(res.headers['ratelimit-reset'], 60, 'RateLimit-Reset')
}

function assertAddressLimited (res: LightMyRequestResponse, instance: string, limit: number): void {
  assertError(res, { code: 'TOO_MANY_REQUESTS', instance, detail: ADDRESS_LIMITED })
  assertRateLimitHeaders(res, limit, 0)
  assert.equal(assertSeconds(res.headers['retry-after'], 60, 'Retry-After'), Number(res.headers['ratelimit-reset']))
}

/**
 * A login-failure 429, whichever budget was spent: the same detail, and the RateLimit figures of the
 * pair's budget (LOGIN_FAILURE_LIMIT, 3 in these suites) with nothing remaining; Reset = Retry-After.
 */
function assertEmailLocked (res: LightMyRequestResponse, instance = LOGIN, limit = 3): void {
  assertError(res, { code: 'TOO_MANY_REQUESTS', instance, detail: EMAIL_LOCKED })
  const retryAfter = assertSeconds(res.headers['retry-after'], 900, 'Retry-After')
  assert.equal(res.headers['ratelimit-limit'], String(limit))
  assert.equal(res.headers['ratelimit-remaining'], '0')
  assert.equal(res.headers['ratelimit-reset'], String(retryAfter))
}

const loginRequest = (email: string, password: string, remoteAddress = address()) =>
  ({ method: 'POST' as const, url: LOGIN, payload: { email, password }, remoteAddress })

describeEachBackend('AUTH_RATE_LIMIT per client address', (ctx) => {
  const login = (remoteAddress: string) => ctx.api.inject(loginRequest(ADMIN.email, ADMIN.password, remoteAddress))

  it('answers the request over AUTH_RATE_LIMIT with 429, Retry-After and RateLimit headers', async () => {
    const client = address()
    for (const remaining of [2, 1, 0]) {
      const res = await login(client)
      assert.equal(res.statusCode, 201, res.body)
      assertRateLimitHeaders(res, 3, remaining)
    }
    assertAddressLimited(await login(client), LOGIN, 3)
  })
  it('counts register, password reset and refresh against the same budget, and a refused register creates nothing', async () => {
    const client = address()
    const register = (email: string) => ctx.api.inject({
      method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name: 'R' }, remoteAddress: client,
    })
    const registered = await register(unique('first'))
    assert.equal(registered.statusCode, 201, registered.body)
    assertRateLimitHeaders(registered, 3, 2)
    const reset = await ctx.api.inject({ method: 'POST', url: '/api/v1/members/password/reset', payload: { email: unique('nobody') }, remoteAddress: client })
    assert.equal(reset.statusCode, 201, reset.body)
    assertRateLimitHeaders(reset, 3, 1)
    const refresh = await ctx.api.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken: 'x'.repeat(43) }, remoteAddress: client })
    assert.equal(refresh.statusCode, 401, refresh.body)
    assertRateLimitHeaders(refresh, 3, 0)

    const refused = unique('refused')
    assertAddressLimited(await register(refused), '/api/v1/members', 3)
    const rows = await ctx.api.app.db.selectFrom('members').select('id').where('email', '=', refused).execute()
    assert.deepEqual(rows, [])
    assertAddressLimited(await login(client), LOGIN, 3)
  })

  it('keeps a budget per address: another address is unaffected', async () => {
    const limited = address()
    for (let i = 0; i < 3; i++) assert.equal((await login(limited)).statusCode, 201)
    assertAddressLimited(await login(limited), LOGIN, 3)
    const other = await login(address())
    assert.equal(other.statusCode, 201, other.body)
    assertRateLimitHeaders(other, 3, 2)
  })

  it('ignores X-Forwarded-For without TRUST_PROXY: a client cannot escape its budget by naming another address', async () => {
    const client = address()
    for (let i = 0; i < 3; i++) {
      const res = await ctx.api.inject({ ...loginRequest(ADMIN.email, ADMIN.password, client), headers: { 'x-forwarded-for': address() } })
      assert.equal(res.statusCode, 201, res.body)
    }
    const spoofed = await ctx.api.inject({ ...loginRequest(ADMIN.email, ADMIN.password, client), headers: { 'x-forwarded-for': address() } })
    assertAddressLimited(spoofed, LOGIN, 3)
  })

  it('never limits routes outside auth, and they carry no RateLimit headers', async () => {
    const client = address()
    const reads = async () => {
      for (let i = 0; i < 4; i++) {
        const health = await ctx.api.inject({ url: '/api/v1/health', remoteAddress: client })
        assert.equal(health.statusCode, 200, health.body)
        const product = await ctx.api.inject({ url: '/api/v1/products/1', remoteAddress: client })
        assertError(product, { code: 'PRODUCT_NOT_FOUND', instance: '/api/v1/products/1', detail: 'Product 1 does not exist.' })
        for (const res of [health, product]) {
          assert.deepEqual(Object.keys(res.headers).filter(name => name.startsWith('ratelimit')), [])
        }
      }
    }
    await reads() // they use none of the budget ...
    for (let i = 0; i < 3; i++) assert.equal((await login(client)).statusCode, 201)
    assertAddressLimited(await login(client), LOGIN, 3)
    await reads() // ... and are served once it is spent
  })
}, { env: { AUTH_RATE_LIMIT: '3' } })

describeEachBackend('AUTH_RATE_LIMIT behind a trusted proxy (TRUST_PROXY 1)', (ctx) => {
  const proxy = address()
  const viaProxy = (client: string) =>
    ctx.api.inject({ ...loginRequest(ADMIN.email, ADMIN.password, proxy), headers: { 'x-forwarded-for': client } })

  it('keeps a budget per forwarded client address, not one for the proxy', async () => {
    const first = address()
    const second = address()
    assert.equal((await viaProxy(first)).statusCode, 201)
    assert.equal((await viaProxy(second)).statusCode, 201, 'another client behind the same proxy has its own budget')
    assertAddressLimited(await viaProxy(first), LOGIN, 1)
  })
}, { env: { AUTH_RATE_LIMIT: '1', TRUST_PROXY: '1' } })

describeEachBackend('AUTH_RATE_LIMIT on password change and API-key creation', (ctx) => {
  it('counts a password change and an API-key creation against the address’s budget', async () => {
    const member = await ctx.api.member()
    const client = address()
    const change = (newPassword: string, currentPassword: string) => ctx.api.inject({
      method: 'PATCH', url: '/api/v1/members/password/change', headers: member.headers, payload: { currentPassword, newPassword }, remoteAddress: client,
    })
    const createKey = () => ctx.api.inject({
      method: 'POST', url: '/api/v1/members/me/api-keys', headers: member.headers, payload: { name: 'limited' }, remoteAddress: client,
    })
    const changed = await change('battery staple', 'correct horse')
    assert.equal(changed.statusCode, 200, changed.body)
    assertRateLimitHeaders(changed, 3, 2)
    const created = await createKey()
    assert.equal(created.statusCode, 201, created.body)
    assertRateLimitHeaders(created, 3, 1)
    assert.equal((await change('staple battery', 'battery staple')).statusCode, 200)
    assertAddressLimited(await change('correct horse', 'staple battery'), '/api/v1/members/password/change', 3)
    assertAddressLimited(await createKey(), '/api/v1/members/me/api-keys', 3)
    const keys = await ctx.api.app.db.selectFrom('api_keys').select('id').execute()
    assert.equal(keys.length, 1, 'the refused creation made no key')
    assert.equal((await ctx.api.inject(loginRequest(member.email, 'staple battery'))).statusCode, 201, 'the refused change kept the password')
  })
}, { env: { AUTH_RATE_LIMIT: '3' } })

describeEachBackend('LOGIN_FAILURE_LIMIT per (email, client address), and 10 × that per email', (ctx) => {
  const login = (email: string, password: string, from: string) => ctx.api.inject(loginRequest(email, password, from))
  /** `count` failed logins for `email`, `perAddress` from each of fresh addresses; each must be a 401. */
  async function failFromManyAddresses (email: string, count: number, perAddress = 2): Promise<void> {
    for (let done = 0; done < count;) {
      const from = address()
      for (let i = 0; i < perAddress && done < count; i++, done++) assertError(await login(email, 'wrong password', from), WRONG)
    }
  }

  it('locks the (email, address) pair after LOGIN_FAILURE_LIMIT wrong passwords: then even the right password gets 429 there', async () => {
    const member = await ctx.api.member()
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await login(member.email, 'wrong password', guesser), WRONG)
    assertEmailLocked(await login(member.email, 'correct horse', guesser))
    const other = await ctx.api.member('other')
    assert.equal((await login(other.email, 'correct horse', guesser)).statusCode, 201, 'another email from that address is not locked')
  })

  it('lets the member log in from another address while a guesser’s address is locked out', async () => {
    const member = await ctx.api.member()
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await login(member.email, 'wrong password', guesser), WRONG)
    assertEmailLocked(await login(member.email, 'wrong password', guesser))
    const res = await login(member.email, 'correct horse', address())
    assert.equal(res.statusCode, 201, res.body)
    assertEmailLocked(await login(member.email, 'correct horse', guesser)) // the member's success clears only their own pair
  })

  it('matches the email whatever its case: wrong attempts in upper case lock the lower-case login from that address', async () => {
    const member = await ctx.api.member('case')
    const from = address()
    for (let i = 0; i < 3; i++) assertError(await login(member.email.toUpperCase(), 'wrong password', from), WRONG)
    assertEmailLocked(await login(member.email, 'correct horse', from))
  })

  it('answers every address 429 for an email once 10 × LOGIN_FAILURE_LIMIT failures from many addresses spent its wider budget', async () => {
    const member = await ctx.api.member()
    await failFromManyAddresses(member.email, 30) // 15 addresses, none of them locked on its own
    assertEmailLocked(await login(member.email, 'correct horse', address()))
    assertEmailLocked(await login(member.email, 'wrong password', address()))
    const other = await ctx.api.member('other')
    assert.equal((await login(other.email, 'correct horse', address())).statusCode, 201, 'other emails are unaffected')
  })

  it('answers both budgets’ 429 with the same body and headers, for a known and an unknown email alike', async () => {
    const member = await ctx.api.member()
    const unknown = unique('nobody')
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await login(member.email, 'wrong password', guesser), WRONG)
    const pairSpent = await login(member.email, 'correct horse', guesser)
    await failFromManyAddresses(unknown, 30)
    const emailSpent = await login(unknown, 'correct horse', address())
    for (const res of [pairSpent, emailSpent]) assertEmailLocked(res)
    assert.deepEqual(errorBody(emailSpent), { ...errorBody(pairSpent), instance: LOGIN })
    const headerNames = (res: LightMyRequestResponse) => Object.keys(res.headers).filter(name => name !== 'x-request-id').sort()
    assert.deepEqual(headerNames(emailSpent), headerNames(pairSpent))
  })

  it('does not count an attempt answered 429 toward either budget', async () => {
    const member = await ctx.api.member()
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await login(member.email, 'wrong password', guesser), WRONG)
    for (let i = 0; i < 30; i++) assertEmailLocked(await login(member.email, 'wrong password', guesser))
    await failFromManyAddresses(member.email, 27) // 3 + 27 = the wider budget of 30, the 429s not among them
    assertEmailLocked(await login(member.email, 'wrong password', address()))
  })

  it('resets only the pair’s count on a successful login: the email’s wider budget runs out with its window (§18.1)', async () => {
    const member = await ctx.api.member()
    const home = address()
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201)
    for (let i = 0; i < 2; i++) assertError(await login(member.email, 'wrong password', home), WRONG)
    await failFromManyAddresses(member.email, 30) // the wider budget spent
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201)
    // The pair starts again from 0 (home is known, so only its own budget applies there) ...
    for (let i = 0; i < 3; i++) assertError(await login(member.email, 'wrong password', home), WRONG)
    assertEmailLocked(await login(member.email, 'correct horse', home))
    // ... while every other address finds the email's budget still spent.
    assertEmailLocked(await login(member.email, 'correct horse', address()))
  })

  it('does not count a successful login toward the email’s wider budget', async () => {
    const member = await ctx.api.member()
    for (let i = 0; i < 5; i++) assert.equal((await login(member.email, 'correct horse', address())).statusCode, 201)
    await failFromManyAddresses(member.email, 30) // all 30 failures fit: the 6 logins took nothing
    assertEmailLocked(await login(member.email, 'correct horse', address()))
  })

  it('counts each attempt before checking the password: 10 concurrent wrong logins from one address give exactly 3 × 401 and 7 × 429', async () => {
    const member = await ctx.api.member()
    const from = address()
    const answers = await Promise.all(Array.from({ length: 10 }, () => login(member.email, 'wrong password', from)))
    assert.deepEqual(answers.map(res => res.statusCode).sort(), [...Array(3).fill(401), ...Array(7).fill(429)])
    for (const res of answers) {
      if (res.statusCode === 401) assertError(res, WRONG)
      else assertEmailLocked(res)
    }
  })

  it('counts concurrent wrong logins from many addresses against the wider budget: 40 at once give exactly 30 × 401', async () => {
    const member = await ctx.api.member()
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login(member.email, 'wrong password', `10.99.${i}.1`)))
    assert.deepEqual(answers.map(res => res.statusCode).sort(), [...Array(30).fill(401), ...Array(10).fill(429)])
  })
}, { env: { LOGIN_FAILURE_LIMIT: '3' } })

/**
 * CONTRACT §18 "Distributed lockout": ten addresses × LOGIN_FAILURE_LIMIT (5) wrong passwords spend
 * the email's wider budget (50), but not at the addresses the member logged in from with its password.
 * The addresses come through a trusted proxy (X-Forwarded-For), as they would in production.
 */
describeEachBackend('LOGIN_FAILURE_LIMIT at addresses the member logged in from before (TRUST_PROXY 1)', (ctx) => {
  const proxy = address()
  const login = (email: string, password: string, client: string) =>
    ctx.api.inject({ ...loginRequest(email, password, proxy), headers: { 'x-forwarded-for': client } })
  /** `failures` wrong passwords, five from each fresh address (by default ten addresses: the email's budget spent). */
  async function attack (email: string, failures = 50): Promise<void> {
    for (let done = 0; done < failures;) {
      const from = address()
      for (let i = 0; i < 5 && done < failures; i++, done++) assertError(await login(email, 'wrong password', from), WRONG)
    }
    assertEmailLocked(await login(email, 'wrong password', address()), LOGIN, 5)
  }

  it('lets the member in from an address it logged in from before, after ten addresses × five wrong passwords; a new address still gets 429', async () => {
    const member = await ctx.api.member()
    const home = address()
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201)
    await attack(member.email)

    const atHome = await login(member.email, 'correct horse', home)
    assert.equal(atHome.statusCode, 201, atHome.body)
    assert.deepEqual(Object.keys(atHome.json().data).sort(), ['accessToken', 'expiresIn', 'refreshExpiresIn', 'refreshToken', 'tokenType'])
    // A new address, with the right password or the wrong one, and whatever the case of the email: the same 429 as before.
    assertEmailLocked(await login(member.email, 'correct horse', address()), LOGIN, 5)
    assertEmailLocked(await login(member.email.toUpperCase(), 'wrong password', address()), LOGIN, 5)
  })

  it('knows an address per email: another member’s login there does not let this one in', async () => {
    const member = await ctx.api.member()
    const other = await ctx.api.member('other')
    const shared = address()
    assert.equal((await login(other.email, 'correct horse', shared)).statusCode, 201)
    await attack(member.email)
    assertEmailLocked(await login(member.email, 'correct horse', shared), LOGIN, 5)
  })

  it('does not make an address known by a failed login, nor by a login refused with 429', async () => {
    const member = await ctx.api.member()
    const tried = address()
    assertError(await login(member.email, 'wrong password', tried), WRONG)
    await attack(member.email, 49) // 1 + 49: the email's budget spent, the pair at `tried` not
    assertEmailLocked(await login(member.email, 'correct horse', tried), LOGIN, 5)
    assertEmailLocked(await login(member.email, 'correct horse', tried), LOGIN, 5)
  })

  it('does not make an address known by an OpenID sign-in (its login code traded there)', async () => {
    const member = await ctx.api.member()
    const signedIn = address()
    // The code an OpenID sign-in's redirect carries (the sign-in itself: oidc.test.ts).
    const loginCode = randomToken()
    await insertLoginCode(ctx.api.app.db, { hash: tokenHash(loginCode), memberId: member.id, ttlMs: 60_000 })
    const traded = await ctx.api.inject({ ...loginRequest('', '', proxy), payload: { loginCode }, headers: { 'x-forwarded-for': signedIn } })
    assert.equal(traded.statusCode, 201, traded.body)
    await attack(member.email)
    assertEmailLocked(await login(member.email, 'correct horse', signedIn), LOGIN, 5)
  })

  it('still locks a known address after LOGIN_FAILURE_LIMIT wrong passwords from it', async () => {
    const member = await ctx.api.member()
    const home = address()
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201)
    await attack(member.email)
    for (let i = 0; i < 5; i++) assertError(await login(member.email, 'wrong password', home), WRONG)
    assertEmailLocked(await login(member.email, 'correct horse', home), LOGIN, 5)
    const elsewhere = address()
    assert.equal((await login((await ctx.api.member('fresh')).email, 'correct horse', elsewhere)).statusCode, 201, 'other emails are unaffected')
  })

  it('resets only the pair on a successful login: the known address starts again, the email’s budget stays spent elsewhere', async () => {
    const member = await ctx.api.member()
    const home = address()
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201)
    for (let i = 0; i < 4; i++) assertError(await login(member.email, 'wrong password', home), WRONG)
    await attack(member.email)
    assert.equal((await login(member.email, 'correct horse', home)).statusCode, 201) // the pair was at 4 of 5
    for (let i = 0; i < 5; i++) assertError(await login(member.email, 'wrong password', home), WRONG)
    assertEmailLocked(await login(member.email, 'correct horse', home), LOGIN, 5)
    assertEmailLocked(await login(member.email, 'correct horse', address()), LOGIN, 5)
  })
}, { env: { TRUST_PROXY: '1' } })

const REDIS_URL = process.env.TEST_REDIS_URL
const backend = BACKENDS[0]!

// Two instances behind a load balancer share their counters through Redis.
describe(`limits shared through Redis by two instances [${backend}]`, REDIS_URL ? {} : { skip: 'set TEST_REDIS_URL to run the Redis-backed limit tests' }, () => {
  let database: DatabaseHandle
  let a: FastifyInstance
  let b: FastifyInstance
  before(async () => {
    database = await createTestDatabase(backend)
    const env = { REDIS_URL: REDIS_URL!, AUTH_RATE_LIMIT: '5', LOGIN_FAILURE_LIMIT: '3' }
    a = await buildApp(testConfig(env), { database, logger: false })
    b = await buildApp(testConfig(env), { database, logger: false })
  })
  after(async () => {
    await a?.close()
    await b?.close()
    await database?.close()
  })

  const register = async (email: string) => {
    const res = await a.inject({ method: 'POST', url: '/api/v1/members', payload: { email, password: 'correct horse', name: 'R' }, remoteAddress: address() })
    assert.equal(res.statusCode, 201, res.body)
  }

  it('locks an (email, address) pair on instance B after failed logins from that address on instance A', async () => {
    const email = unique('redis')
    await register(email)
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await a.inject(loginRequest(email, 'wrong password', guesser)), WRONG)
    assertEmailLocked(await b.inject(loginRequest(email, 'correct horse', guesser)))
    assert.equal((await b.inject(loginRequest(email, 'correct horse'))).statusCode, 201, 'another address still logs in')
  })

  it('spends the email’s wider budget with failures spread over A and B and many addresses, and counts no 429', async () => {
    const email = unique('redis-wide')
    await register(email)
    const guesser = address()
    for (let i = 0; i < 3; i++) assertError(await a.inject(loginRequest(email, 'wrong password', guesser)), WRONG)
    for (let i = 0; i < 2; i++) assertEmailLocked(await b.inject(loginRequest(email, 'wrong password', guesser)))
    for (let i = 0; i < 27; i++) assertError(await (i % 2 ? a : b).inject(loginRequest(email, 'wrong password')), WRONG)
    assertEmailLocked(await a.inject(loginRequest(email, 'correct horse')))
    assertEmailLocked(await b.inject(loginRequest(email, 'correct horse')))
  })

  it('clears only the pair for both instances on a successful login; the email’s budget stays spent elsewhere', async () => {
    const email = unique('redis-reset')
    await register(email)
    const home = address()
    for (let i = 0; i < 2; i++) assertError(await a.inject(loginRequest(email, 'wrong password', home)), WRONG)
    for (let i = 0; i < 27; i++) assertError(await b.inject(loginRequest(email, 'wrong password')), WRONG)
    assert.equal((await b.inject(loginRequest(email, 'correct horse', home))).statusCode, 201)
    assertError(await a.inject(loginRequest(email, 'wrong password')), WRONG) // 2 + 27 + 1: the wider budget spent
    assertEmailLocked(await a.inject(loginRequest(email, 'correct horse')))
    // Uncleared, the second of these would be 429 (the pair at 3); home is known, so the spent email budget does not apply.
    for (let i = 0; i < 2; i++) assertError(await a.inject(loginRequest(email, 'wrong password', home)), WRONG)
  })

  it('knows an address on instance B that the member logged in from on instance A, after the email’s budget is spent', async () => {
    const email = unique('redis-known')
    await register(email)
    const home = address()
    assert.equal((await a.inject(loginRequest(email, 'correct horse', home))).statusCode, 201)
    for (let n = 0; n < 10; n++) {
      const from = address()
      for (let i = 0; i < 3; i++) assertError(await (n % 2 ? a : b).inject(loginRequest(email, 'wrong password', from)), WRONG)
    }
    const atHome = await b.inject(loginRequest(email, 'correct horse', home))
    assert.equal(atHome.statusCode, 201, atHome.body)
    assertEmailLocked(await a.inject(loginRequest(email, 'correct horse')))
    assertEmailLocked(await b.inject(loginRequest(email, 'correct horse')))
    // The flag is an HMAC of the email and the address, with a 30-day lifetime: no address in Redis.
    const { Redis } = await import('ioredis')
    const redis = new Redis(REDIS_URL!)
    try {
      const keys = await redis.keys('order-service:login-known:*')
      for (const key of keys) {
        assert.match(key, /^order-service:login-known:[A-Za-z0-9_-]{43}$/)
        assert.ok(!key.includes(home) && !key.includes(email))
      }
      // This run's flags have just been set (other runs may share the Redis): at least one lives 30 days from now.
      const ttls = await Promise.all(keys.map(key => redis.pttl(key)))
      assert.ok(ttls.some(ttl => ttl > 30 * 86_400_000 - 120_000 && ttl <= 30 * 86_400_000), `ttls ${ttls.join(', ')}`)
    } finally {
      redis.disconnect()
    }
  })

  it('counts requests from one address spread over A and B against one AUTH_RATE_LIMIT', async () => {
    const client = address()
    for (const [i, app] of [a, b, a, b, a].entries()) {
      const res = await app.inject(loginRequest(ADMIN.email, ADMIN.password, client))
      assert.equal(res.statusCode, 201, res.body)
      assertRateLimitHeaders(res, 5, 4 - i)
    }
    assertAddressLimited(await b.inject(loginRequest(ADMIN.email, ADMIN.password, client)), LOGIN, 5)
  })
})

describe(`limits when Redis is unreachable [${backend}]`, () => {
  let database: DatabaseHandle
  let app: FastifyInstance | undefined
  before(async () => {
    database = await createTestDatabase(backend)
    // Migrates the database first, so that the build timed below is the one that meets Redis down.
    await (await buildApp(testConfig(), { database, logger: false })).close()
  })
  after(async () => {
    await app?.close()
    await database?.close()
  })

  // A start that waited for Redis would wait for good (its client retries without end): the test's
  // safety cap names that, where a bound on the start's duration would measure the machine's load.
  it('starts without waiting for Redis and fails open: logins are served, never 429 nor 500, and claim no RateLimit budget', { timeout: STUCK_AFTER_MS }, async () => {
    app = await buildApp(testConfig({ REDIS_URL: 'redis://127.0.0.1:6390', AUTH_RATE_LIMIT: '1', LOGIN_FAILURE_LIMIT: '1' }), { database, logger: false })
    const client = address()
    const answers = []
    for (let i = 0; i < 3; i++) answers.push(await app.inject(loginRequest(ADMIN.email, 'wrong password', client)))
    for (const res of answers) assertError(res, WRONG)
    const res = await app.inject(loginRequest(ADMIN.email, ADMIN.password, client))
    assert.equal(res.statusCode, 201, res.body)
    for (const answer of [...answers, res]) {
      assert.deepEqual(Object.keys(answer.headers).filter(name => name.startsWith('ratelimit')), [], 'nothing is counted')
    }
  })
})
