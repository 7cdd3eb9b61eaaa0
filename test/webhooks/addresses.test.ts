import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { guardedLookup, isPublicAddress } from '../../src/webhooks/addresses.js'
import { describeEachBackend, successData } from '../helper.js'
import { Receiver, eventually } from './receiver.js'

// CONTRACT §12, §14: only globally routable hosts, checked again on the address each delivery connects to.

describe('which addresses webhooks may reach', () => {
  it('refuses every non-globally-routable range and allows public addresses', () => {
    const refused = [
      '0.0.0.0', '10.1.2.3', '100.64.0.1', '100.127.255.254', '127.0.0.1', '127.255.0.1', '169.254.169.254', '172.16.0.1', '172.31.255.255',
      '192.0.2.1', '192.168.0.1', '198.18.0.1', '198.51.100.7', '203.0.113.9', '224.0.0.1', '239.255.255.250', '255.255.255.255',
      '::', '::1', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1', '2001:db8::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', 'not-an-ip',
    ]
    const allowed = ['8.8.8.8', '1.1.1.1', '100.128.0.1', '172.32.0.1', '93.184.215.14', '2606:4700:4700::1111', '::ffff:8.8.8.8']
    assert.deepEqual(refused.filter(isPublicAddress), [])
    assert.deepEqual(allowed.filter(address => !isPublicAddress(address)), [])
  })

  it('refuses, at connection time, a name that resolves to a private address', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>(resolve => guardedLookup('localhost', { all: true }, resolve))
    assert.equal(error?.code, 'EADDRNOTPUBLIC')
    assert.match(error!.message, /^refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/)
  })
})

describeEachBackend('deliveries re-check the address they connect to', (ctx) => {
  const receiver = new Receiver()
  before(() => receiver.start())
  after(() => receiver.stop())

  it('does not reach a private host that an endpoint names now (a rebound name, an edited row)', async () => {
    const admin = await ctx.api.admin()
    const owner = await ctx.api.member('owner')
    const product = await ctx.api.product(admin)
    const port = new URL(receiver.url).port
    // Rows as if the names had resolved to public addresses when saved.
    const ids: number[] = []
    for (const url of [`https://127.0.0.1:${port}/hook`, `https://localhost:${port}/hook`]) {
      const row = await ctx.api.app.db.insertInto('webhook_endpoints').values({ url, event_types: null, description: null, secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' })
        .returning('id').executeTakeFirstOrThrow()
      ids.push(row.id)
    }
    await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
    const lastErrors = async () => Promise.all(ids.map(async id =>
      successData<{ content: Array<{ lastError: string | null }> }>(await ctx.api.get(`/api/v1/admin/webhook-endpoints/${id}/deliveries`, {}, admin)).content[0]?.lastError ?? null))
    await eventually(async () => (await lastErrors()).every(error => error !== null), 'both attempts made')
    const [literal, name] = await lastErrors()
    assert.equal(literal, 'refused: 127.0.0.1 is not a public https host')
    assert.match(String(name), /^EADDRNOTPUBLIC: refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/)
    assert.equal(receiver.received.length + receiver.refused.length, 0)
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_RETRY_SCHEDULE: '1m' } })
