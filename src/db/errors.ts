import { ApiError } from '../errors.js'
import { isStalePlan } from './prepared.js'

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

/** The PostgreSQL SQLSTATE of a driver error, if it is one. */
export function sqlState (error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * Translates database failures that are not bugs into catalogue errors, in one place: an unreachable
 * or restarting database, and transient conflicts, become 503 with `Retry-After` (never a 500).
 * Constraint violations that a use case expects (a taken email, say) are handled by that use case.
 */
export function translateDbError (error: unknown): ApiError | undefined {
  const state = sqlState(error)
  const code = (error as { code?: unknown } | null)?.code
  const message = error instanceof Error ? error.message : ''
  const unavailable =
    (state !== undefined && (state.startsWith('08') || state.startsWith('57P') || state === '53300' ||
      state === '40001' || state === '40P01' || state === '55P03')) ||
    (typeof code === 'string' && CONNECTION_CODES.has(code)) ||
    // A table changed under a prepared statement; the connection is replaced (src/db/prepared.ts).
    isStalePlan(error) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(message)
  if (!unavailable) return undefined
  return new ApiError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; please retry shortly.', {
    headers: { 'Retry-After': '1' },
  })
}
