import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'

/*
 * Which hosts webhooks may reach (CONTRACT §12, §14): only globally routable addresses, unless
 * WEBHOOK_ALLOW_PRIVATE. Checked when an endpoint is saved and again on the address each delivery
 * actually connects to (`guardedLookup`), so a name that later resolves elsewhere (DNS rebinding)
 * cannot reach a private host.
 */

const blocked = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) blocked.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) blocked.addSubnet(network, prefix, 'ipv6')

/** The IPv4 address an IPv6 address carries (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`), if any. */
function embeddedIpv4 (address: string): string | undefined {
  const lower = address.toLowerCase()
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  if (dotted) return dotted[1]
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower)
  if (hex) {
    const high = parseInt(hex[1]!, 16)
    const low = parseInt(hex[2]!, 16)
    return [high >> 8, high & 255, low >> 8, low & 255].join('.')
  }
  return undefined
}

/** Whether an IP address is globally routable (not loopback, private, link-local, …). */
export function isPublicAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return !blocked.check(address, 'ipv4')
  if (family === 6) {
    const v4 = embeddedIpv4(address)
    if (v4 !== undefined) return isPublicAddress(v4)
    if (/^::ffff:/i.test(address)) return false
    return !blocked.check(address, 'ipv6')
  }
  return false
}

/** A URL's host as an address or name: `[::1]` → `::1`. */
export function hostOf (url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

/** Every address a name resolves to; [] when it does not resolve. */
export function resolveAll (host: string): Promise<string[]> {
  if (isIP(host)) return Promise.resolve([host])
  return new Promise(resolve => dnsLookup(host, { all: true }, (error, addresses) =>
    resolve(error ? [] : addresses.map(a => a.address))))
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for sockets (net/tls `connect`) that refuses names resolving to any non-public
 * address: the address checked is the one connected to.
 */
export function guardedLookup (hostname: string, options: { all?: boolean, family?: number | string }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true } as { all: true }, (error, addresses) => {
    if (error) return callback(error, options.all ? [] : '')
    const refused = addresses.find(a => !isPublicAddress(a.address))
    if (refused || addresses.length === 0) {
      const failure = Object.assign(new Error(`refused: ${hostname} resolves to ${refused?.address ?? 'nothing'}, which is not a public address`), { code: 'EADDRNOTPUBLIC' })
      return callback(failure, options.all ? [] : '')
    }
    if (options.all) return callback(null, addresses)
    callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}
