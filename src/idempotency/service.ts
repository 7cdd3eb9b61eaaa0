import { createHash } from 'node:crypto'
import type { Tx } from '../db/schema.js'
import { ApiError } from '../errors.js'
import type { KeyedOutcome, Outcome } from '../http/idempotency.js'
import { claimKey, findKey, releaseKey, storeAnswer, type KeyScope } from './repository.js'

/** An idempotent request: its key (if any) in its scope, the body it is fingerprinted by, and the TTL. */
export interface KeyedRequest {
  scope: Omit<KeyScope, 'key'>
  key: string | undefined
  body: Record<string, unknown>
  ttlMs: number
}

/** JSON with object keys sorted, so that equal bodies have equal fingerprints whatever their key order. */
function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** SHA-256 of the canonical body, without the `idempotencyKey` field. */
export function fingerprint (body: Record<string, unknown>): string {
  const { idempotencyKey: _ignored, ...rest } = body
  return createHash('sha256').update(canonicalJson(rest)).digest('hex')
}

/**
 * Runs `work` at most once per key, inside the caller's transaction `trx` (CONTRACT §3):
 * 1. claim the key first thing in the transaction. A concurrent request with the same key waits on
 *    the claim until the first one commits or rolls back;
 * 2. if it was already taken: same fingerprint → the stored answer, `replayed`; different → 422;
 * 3. otherwise run `work` and store its answer before commit. An error rolls the claim back with
 *    everything else, so only successful answers are kept and a failed request may be retried; a
 *    `failure` outcome commits the work but releases the key.
 * Without a key, `work` simply runs.
 */
export async function answerOnce<T> (trx: Tx, request: KeyedRequest, work: () => Promise<Outcome<T>>): Promise<KeyedOutcome<T>> {
  if (request.key === undefined) return withReplayed(await work(), false)
  const scope = { ...request.scope, key: request.key }
  const print = fingerprint(request.body)
  if (!await claimKey(trx, scope, print, request.ttlMs)) {
    const stored = await findKey(trx, scope)
    if (!stored || stored.response_status === null) {
      // Only possible if the row vanished or is still being written between the two statements.
      throw new ApiError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is still being processed.', {
        headers: { 'Retry-After': '1' },
      })
    }
    if (stored.fingerprint !== print) {
      throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used with a different request body.')
    }
    // The body is what the first answer sent, as stored JSON.
    return { status: stored.response_status, body: stored.response_body as T, location: stored.location, replayed: true }
  }
  const outcome = await work()
  if ('failure' in outcome) await releaseKey(trx, scope)
  else await storeAnswer(trx, scope, { status: outcome.status, body: outcome.body, location: outcome.location ?? null })
  return withReplayed(outcome, false)
}

const withReplayed = <T>(outcome: Outcome<T>, replayed: boolean): KeyedOutcome<T> =>
  'failure' in outcome ? outcome : { ...outcome, replayed }
