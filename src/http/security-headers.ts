import type { IncomingMessage, ServerResponse } from 'node:http'
import helmet from 'helmet'

/**
 * Helmet's security headers, suited to a JSON API (no framing, no sniffing, no referrer leaks,
 * HSTS, a restrictive Content-Security-Policy). Their values never change, so they are computed once
 * at start-up by running Helmet against a recording response, rather than rebuilding Helmet's
 * middleware on every request as the plugin form does.
 * Measured: bench/RESULTS.md, "What each change bought".
 */
export function securityHeaders (): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value)
    },
    removeHeader (name: string) {
      delete headers[name.toLowerCase()]
    },
  }
  helmet()({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error
  })
  return Object.freeze(headers)
}

/** The public catalogue: product reads that anyone may make and that are the same for every anonymous caller. */
const CATALOGUE = /^\/api\/v1\/products(\/|$)/

/** How long a shared cache may keep a catalogue answer (CONTRACT §11: at most 60 s). */
const CATALOGUE_MAX_AGE = 60

/**
 * `Cache-Control` of an `/api/**` answer (CONTRACT §11): `no-store`, except a catalogue read
 * (GET or HEAD under /api/v1/products) answered 200 — or 304, which must repeat what the 200 would
 * say — to a caller that sent no credential at all, which shared caches may keep for 60 s.
 * A caller that sent any credential, valid or not, gets `no-store`: a cache should not learn to keep
 * answers to requests that carry one.
 */
export function cacheControl (method: string, path: string, status: number, credentialSent: boolean): string {
  const cacheable = (method === 'GET' || method === 'HEAD') && CATALOGUE.test(path) &&
    (status === 200 || status === 304) && !credentialSent
  return cacheable ? `public, max-age=${CATALOGUE_MAX_AGE}` : 'no-store'
}

/** True for a catalogue read, whose answer depends on the credential sent: it carries `Vary` for it. */
export const variesByCredential = (method: string, path: string) => (method === 'GET' || method === 'HEAD') && CATALOGUE.test(path)
