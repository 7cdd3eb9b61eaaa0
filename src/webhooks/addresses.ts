import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'

/*
 * Which hosts webhooks may reach (CONTRACT §12, §14, §18): only globally routable addresses, unless
 * WEBHOOK_ALLOW_PRIVATE; an IPv6 address that carries an IPv4 one is judged by that one too. Checked when an endpoint is saved and again on the address each delivery
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

/** An IPv6 address as its eight 16-bit groups (`::`, a trailing dotted quad and a zone id allowed); undefined if not one. */
function groupsOf (address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '').toLowerCase()
  const quad = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (quad) {
    const [a, b, c, d] = quad.slice(2).map(Number) as [number, number, number, number]
    text = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const parse = (half: string | undefined) => half ? half.split(':').map(group => parseInt(group, 16)) : []
  const head = parse(halves[0])
  const tail = parse(halves[1])
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const groups = [...head, ...Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...tail]
  return groups.every(group => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? groups : undefined
}

const dotted = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join('.')

/**
 * The IPv4 addresses an IPv6 address carries (CONTRACT §18, §18.1), by which it is judged:
 * IPv4-compatible `::a.b.c.d` (`::/96`), mapped `::ffff:a.b.c.d`, translated `::ffff:0:a.b.c.d`,
 * NAT64 `64:ff9b::/96`, 6to4 `2002:AABB:CCDD::/48`, and Teredo `2001:0:SSSS:SSSS:…:CCCC:CCCC`
 * (the server's, and the client's with its bits inverted as Teredo obfuscates them).
 */
export function embeddedIpv4 (address: string): string[] {
  const g = groupsOf(address)
  if (g === undefined) return []
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number]
  const last = dotted(g6, g7)
  const zeros = (...groups: number[]) => groups.every(group => group === 0)
  if (zeros(g0, g1, g2, g3, g4) && (g5 === 0 || g5 === 0xffff)) return [last]
  if (zeros(g0, g1, g2, g3) && g4 === 0xffff && g5 === 0) return [last]
  if (g0 === 0x64 && g1 === 0xff9b && zeros(g2, g3, g4, g5)) return [last]
  if (g0 === 0x2002) return [dotted(g1, g2)]
  if (g0 === 0x2001 && g1 === 0) return [dotted(g2, g3), dotted(g6 ^ 0xffff, g7 ^ 0xffff)]
  return []
}

/** Whether an IP address is globally routable (not loopback, private, link-local, …); a v6 one carrying v4 ones needs them public too. */
export function isPublicAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return !blocked.check(address, 'ipv4')
  if (family === 6) {
    const carried = embeddedIpv4(address)
    return carried.every(isPublicAddress) && !blocked.check(address, 'ipv6')
  }
  return false
}

/** A URL's host as an address or name, judged without a final dot: `[::1]` → `::1`, `localhost.` → `localhost`. */
export function hostOf (url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/(.)\.+$/, '$1')
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
 * address (`isPublicAddress`, so also an IPv6 address carrying a private IPv4 one): the address
 * checked is the one connected to.
 */
export function guardedLookup (hostname: string, options: { all?: boolean, family?: number | string }, callback: LookupCallback): void {
  // A final dot names the same host (`localhost.`); some resolvers do not answer for it.
  dnsLookup(hostname.replace(/(.)\.+$/, '$1'), { ...options, all: true } as { all: true }, (error, addresses) => {
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
