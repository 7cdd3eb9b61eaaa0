import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { embeddedIpv4, guardedLookup, hostOf, isPublicAddress } from '../../src/webhooks/addresses.js'
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

  it('judges an IPv6 address that carries an IPv4 address by that address (CONTRACT §18, §18.1)', () => {
    const cases: Array<[string, boolean, string]> = [
      ['::127.0.0.1', false, 'IPv4-compatible, loopback'],
      ['::7f00:1', false, 'IPv4-compatible, as URLs write it'],
      ['::a9fe:a9fe', false, 'IPv4-compatible, link-local'],
      ['::8.8.8.8', true, 'IPv4-compatible, public'],
      ['::ffff:7f00:1', false, 'IPv4-mapped, hex'],
      ['::ffff:0:a00:1', false, 'IPv4-translated, 10.0.0.1'],
      ['::ffff:0:808:808', true, 'IPv4-translated, public'],
      ['2002:7f00:1::1', false, '6to4 of 127.0.0.1'],
      ['2002:c0a8:101:1::1', false, '6to4 of 192.168.1.1'],
      ['2002:808:808::1', true, '6to4 of 8.8.8.8'],
      ['64:ff9b::7f00:1', false, 'NAT64 of 127.0.0.1'],
      ['64:ff9b::192.168.0.1', false, 'NAT64, dotted'],
      ['64:ff9b::808:808', true, 'NAT64 of 8.8.8.8'],
      ['64:ff9b:1::808:808', false, 'local-use NAT64'],
      ['2001:0:7f00:1::f7f7:f7f7', false, 'Teredo, server 127.0.0.1'],
      ['2001:0:808:808::80ff:fefe', false, 'Teredo, client 127.0.1.1 (obfuscated)'],
      ['2001:0:808:808::3fff:fdd2', false, 'Teredo, client 192.0.2.45 (obfuscated)'],
      ['2001:0:808:808::f7f7:f7f7', false, 'Teredo, both public: 2001::/23 is not globally routable'],
      ['fe80::1%eth0', false, 'link-local with a zone'],
    ]
    assert.deepEqual(cases.filter(([address, expected]) => isPublicAddress(address) !== expected).map(([address, , what]) => `${address} (${what})`), [])
  })

  it('reads the IPv4 addresses an IPv6 address carries, the Teredo client\'s with its bits inverted', () => {
    assert.deepEqual(embeddedIpv4('::127.0.0.1'), ['127.0.0.1'])
    assert.deepEqual(embeddedIpv4('::ffff:7f00:1'), ['127.0.0.1'])
    assert.deepEqual(embeddedIpv4('2002:c000:22a::1'), ['192.0.2.42'])
    assert.deepEqual(embeddedIpv4('64:FF9B::C000:22A'), ['192.0.2.42'])
    assert.deepEqual(embeddedIpv4('2001:0:4136:e378:8000:63bf:3fff:fdd2'), ['65.54.227.120', '192.0.2.45'])
    assert.deepEqual(embeddedIpv4('2606:4700:4700::1111'), [])
    assert.deepEqual(embeddedIpv4('not-an-ip'), [])
  })

  it('judges a URL\'s host without its final dots', () => {
    assert.deepEqual(['https://localhost./', 'https://127.0.0.1./', 'https://example.com../x', 'https://[::1]/'].map(url => hostOf(new URL(url))),
      ['localhost', '127.0.0.1', 'example.com', '::1'])
  })

  it('refuses, at connection time, a name that resolves to a private address', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>(resolve => guardedLookup('localhost', { all: true }, resolve))
    assert.equal(error?.code, 'EADDRNOTPUBLIC')
    assert.match(error!.message, /^refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/)
  })

  it('refuses, at connection time, what resolves to an IPv6 address carrying a private IPv4 one, and a name with a final dot', async () => {
    const lookup = (name: string) => new Promise<[NodeJS.ErrnoException | null, unknown]>(resolve =>
      guardedLookup(name, { all: true }, (error, addresses) => resolve([error, addresses])))
    for (const [name, address] of [['::127.0.0.1', '::127.0.0.1'], ['2002:7f00:1::1', '2002:7f00:1::1'], ['64:ff9b::a00:1', '64:ff9b::a00:1']]) {
      const [error, addresses] = await lookup(name!)
      assert.equal(error?.code, 'EADDRNOTPUBLIC', name)
      assert.equal(error!.message, `refused: ${name} resolves to ${address}, which is not a public address`)
      assert.deepEqual(addresses, [])
    }
    const [error] = await lookup('localhost.')
    assert.equal(error?.code, 'EADDRNOTPUBLIC')
    assert.match(error!.message, /^refused: localhost\. resolves to (127\.0\.0\.1|::1), which is not a public address$/)
    const [none, addresses] = await lookup('2002:808:808::1')
    assert.deepEqual([none, addresses], [null, [{ address: '2002:808:808::1', family: 6 }]])
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
    const urls = [`https://127.0.0.1:${port}/hook`, `https://localhost:${port}/hook`, `https://[::7f00:1]:${port}/hook`,
      `https://[2002:7f00:1::1]:${port}/hook`, `https://localhost.:${port}/hook`]
    for (const url of urls) {
      const row = await ctx.api.app.db.insertInto('webhook_endpoints').values({ url, event_types: null, description: null, secret: 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' })
        .returning('id').executeTakeFirstOrThrow()
      ids.push(row.id)
    }
    await ctx.api.order(owner, [{ productId: product.productId, quantity: 1 }])
    const lastErrors = async () => Promise.all(ids.map(async id =>
      successData<{ content: Array<{ lastError: string | null }> }>(await ctx.api.get(`/api/v1/admin/webhook-endpoints/${id}/deliveries`, {}, admin)).content[0]?.lastError ?? null))
    await eventually(async () => (await lastErrors()).every(error => error !== null), 3000, 'both attempts made')
    const [literal, name, compatible, sixToFour, dotted] = await lastErrors()
    assert.equal(literal, 'refused: 127.0.0.1 is not a public https host')
    assert.match(String(name), /^EADDRNOTPUBLIC: refused: localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/)
    assert.equal(compatible, 'refused: ::7f00:1 is not a public https host')
    assert.equal(sixToFour, 'refused: 2002:7f00:1::1 is not a public https host')
    assert.match(String(dotted), /^EADDRNOTPUBLIC: refused: localhost\. resolves to (127\.0\.0\.1|::1), which is not a public address$/)
    assert.equal(receiver.received.length + receiver.refused.length, 0)
  })
}, { env: { WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_RETRY_SCHEDULE: '1m' } })
