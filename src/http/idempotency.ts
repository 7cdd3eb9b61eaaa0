import type { FastifyReply } from 'fastify'
import { ApiError, invalidParam } from '../errors.js'
import { IDEMPOTENCY_KEY_PATTERN, ok } from './schemas.js'

const KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN)

/**
 * The request's idempotency key, from the `Idempotency-Key` header or the body's `idempotencyKey`
 * (the body field is checked by its schema). Malformed, or both present and different → 400 naming
 * `idempotencyKey`.
 */
export function idempotencyKeyOf (header: string | undefined, bodyKey: string | undefined): string | undefined {
  if (header !== undefined && !KEY.test(header)) {
    throw invalidParam('idempotencyKey', 'must be 1 to 255 printable ASCII characters')
  }
  if (header !== undefined && bodyKey !== undefined && header !== bodyKey) {
    throw invalidParam('idempotencyKey', 'differs from the Idempotency-Key header')
  }
  return header ?? bodyKey
}

/** A successful answer as a route chooses it: status, `data`, and `Location` when it created something. */
export interface Answer<T> {
  status: number
  body: T
  location?: string | null
}

/**
 * What the work of an idempotent request ends in: an answer (stored for replay), or a failure whose
 * changes still commit but which is not stored, so that the key may be used again (a declined
 * payment is recorded as FAILED and answered 402).
 */
export type Outcome<T> = Answer<T> | { failure: ApiError }

/** An outcome as it reaches the route: a replay is the first answer again. */
export type KeyedOutcome<T> = (Answer<T> & { replayed: boolean }) | { failure: ApiError }

/**
 * Sends an idempotent request's outcome: the answer in the envelope (a replay with 200 and
 * `Idempotent-Replayed: true`, CONTRACT §3), or the failure as an error. `headersOf` adds the
 * headers derived from the body (an order's `ETag`), the same on a replay as the first time.
 */
export function sendAnswer<T> (
  reply: FastifyReply, outcome: KeyedOutcome<T>, headersOf?: (body: T) => Record<string, string>
): FastifyReply {
  if ('failure' in outcome) throw outcome.failure
  if (headersOf) reply.headers(headersOf(outcome.body))
  if (outcome.replayed) reply.header('Idempotent-Replayed', 'true')
  if (outcome.location) reply.header('Location', outcome.location)
  return reply.code(outcome.replayed ? 200 : outcome.status).send(ok(outcome.body))
}
