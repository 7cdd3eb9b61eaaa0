import { ApiError } from '../errors.js'
import { isStalePlan } from './prepared.js'

/** Socket failures of a connection the service opened: refused, reset, timed out, broken, or a name that did not resolve. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * SQLSTATEs that mean "not available now; the same request will work later": the connection class
 * (08), the server shutting down, crashing or starting (57P01–57P03), a session ended for being idle
 * (57P05: the next one works), too many connections (53300), and transient conflicts (serialization
 * failure, deadlock, lock not available). 57P04 (the database was dropped) is not among them: no
 * retry brings it back.
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '57P05', '53300', '40001', '40P01', '55P03'])

/**
 * PostgreSQL's functions that refuse a new session (postinit.c, miscinit.c, proc.c, the postmaster):
 * a `55000` from one of them is "database is not currently accepting connections" (ALLOW_CONNECTIONS
 * false). A `55000` from anywhere else (`currval` before `nextval`, say) is a bug and stays a 500.
 */
const SESSION_START = new Set(['CheckMyDatabase', 'InitPostgres', 'InitializeSessionUserId', 'InitProcess', 'ProcessStartupPacket', 'BackendInitialize'])

/** pg's own words for a connection that ended or could not be had (pool timeout). */
const DRIVER_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/

/** The PostgreSQL SQLSTATE of a driver error, if it is one. */
export function sqlState (error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * True for a failure of a socket the service itself opened to the database: Node reports those as
 * system errors, naming the call that failed (`connect`, `read`, `write`, `getaddrinfo`). The same
 * codes without a system call are someone else's: Node's "aborted" ECONNRESET, for one, says that a
 * *client* went away while its request was read, which is not the database being down.
 */
function isSocketFailure (error: unknown): boolean {
  const { code, syscall } = (error ?? {}) as { code?: unknown, syscall?: unknown }
  return typeof code === 'string' && CONNECTION_CODES.has(code) && typeof syscall === 'string'
}

/**
 * True when `error` says the database cannot serve right now (CONTRACT §11 Wire): a connection
 * refused, reset or timed out, the pool's wait for a connection timed out, the server going down,
 * restarting, full, or not accepting connections to this database.
 */
export function isUnavailable (error: unknown): boolean {
  const state = sqlState(error)
  if (state !== undefined) {
    if (state.startsWith('08') || UNAVAILABLE_STATES.has(state)) return true
    const routine = (error as { routine?: unknown }).routine
    // A table changed under a prepared statement; the connection is replaced (src/db/prepared.ts).
    return (state === '55000' && typeof routine === 'string' && SESSION_START.has(routine)) || isStalePlan(error)
  }
  return isSocketFailure(error) || (error instanceof Error && DRIVER_MESSAGES.test(error.message))
}

/** The 503 for a database that cannot serve now: `Retry-After` (never a 500, CONTRACT §2). */
export function serviceUnavailable (cause?: unknown): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; please retry shortly.', {
    headers: { 'Retry-After': '1' },
    cause,
  })
}

/**
 * Translates database failures that are not bugs into catalogue errors, in one place: an unreachable
 * or restarting database, and transient conflicts, become 503 with `Retry-After` (never a 500).
 * Constraint violations that a use case expects (a taken email, say) are handled by that use case.
 */
export function translateDbError (error: unknown): ApiError | undefined {
  return isUnavailable(error) ? serviceUnavailable(error) : undefined
}
