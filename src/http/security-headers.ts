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
