import { createHash } from 'node:crypto'
import type { Db, Tx } from '../db/schema.js'
import { ApiError } from '../errors.js'
import type { Answer, KeyedOutcome, Outcome } from '../http/idempotency.js'
import {
  claimKey, findKey, findLiveKey, releaseKey, storeAnswer, type KeyClaim, type KeyScope,
} from './repository.js'
import type { IdempotencyKeyRow } from './table.js'

/** A taken key's stored answer, as far as a replay needs it. */
type StoredKey = Pick<IdempotencyKeyRow, 'fingerprint' | 'response_status' | 'response_body' | 'location'>

/** An idempotent request: its key (if any) in its scope, the body it is fingerprinted by, and the TTL. */
export interface KeyedRequest {
  scope: Omit<KeyScope, 'key'>
  key: string | undefined
  body: Record<string, unknown>
  ttlMs: number
}

/**
 * JSON with object keys sorted, so that equal bodies have equal fingerprints whatever their key
 * order. Its output must never change: stored keys are compared by it. Written with loops rather
 * than entries, filter, sort, map and join: it runs on every keyed request (bench/RESULTS.md).
 */
function canonicalJson (value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJson(value[i])
    return out + ']'
  }
  const object = value as Record<string, unknown>
  const keys = Object.keys(object).sort()
  let out = '{'
  for (const key of keys) {
    const child = object[key]
    if (child === undefined) continue
    out += (out.length > 1 ? ',' : '') + JSON.stringify(key) + ':' + canonicalJson(child)
  }
  return out + '}'
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
 * Without a key, `work` simply runs. A use case that is one statement uses `answerOnceInOneStatement`.
 */
export async function answerOnce<T> (trx: Tx, request: KeyedRequest, work: () => Promise<Outcome<T>>): Promise<KeyedOutcome<T>> {
  if (request.key === undefined) return withReplayed(await work(), false)
  const scope = { ...request.scope, key: request.key }
  const print = fingerprint(request.body)
  if (!await claimKey(trx, scope, print, request.ttlMs)) return replayOf(await findKey(trx, scope), print)
  const outcome = await work()
  if ('failure' in outcome) await releaseKey(trx, scope)
  else await storeAnswer(trx, scope, { status: outcome.status, body: outcome.body, location: outcome.location ?? null })
  return withReplayed(outcome, false)
}

/** What a use case that is one statement (with the key's claim in it, `KeyClaim`) ended in. */
export type StatementOutcome<T> =
  /** Its checks passed: it claimed the key, did the work and stored this answer with the key. */
  | { answered: Answer<T> }
  /** A check failed: nothing changed. */
  | { refused: ApiError }
  /**
   * The key was taken: its stored answer as the statement saw it, or `undefined` when another
   * request's claim committed while the statement ran. Nothing changed.
   */
  | { keyTaken: StoredKey | undefined }

/**
 * The rules of `answerOnce` (CONTRACT §3), for a use case that checks, claims the key, writes and
 * stores its answer in one statement (under autocommit: it is its own transaction), so that a new
 * request costs one round trip:
 * - a key the statement finds taken → the replay (or 422), with no check made and nothing locked;
 * - a claim that meets a concurrent claim of the same key waits for it to end, like the claim in a
 *   transaction; if it committed, its answer is read by a second statement and replayed;
 * - a check that fails leaves nothing behind. With a key, a second statement looks for a claim
 *   committed meanwhile (the statement's snapshot predates it; the product rows it locked may not):
 *   a concurrent duplicate is answered the replay, as if it had waited on the claim, never an
 *   error of the checks.
 * Only successful answers are stored; without a key the statement simply runs.
 */
export async function answerOnceInOneStatement<T> (
  db: Db, request: KeyedRequest, statement: (claim: KeyClaim | null) => Promise<StatementOutcome<T>>
): Promise<KeyedOutcome<T>> {
  if (request.key === undefined) {
    const outcome = await statement(null)
    if ('answered' in outcome) return { ...outcome.answered, replayed: false }
    if ('refused' in outcome) throw outcome.refused
    throw new Error('a statement without a key found its key taken')
  }
  const scope = { ...request.scope, key: request.key }
  const print = fingerprint(request.body)
  const outcome = await statement({ scope, fingerprint: print, ttlMs: request.ttlMs })
  if ('answered' in outcome) return { ...outcome.answered, replayed: false }
  if ('keyTaken' in outcome) return replayOf(outcome.keyTaken ?? await findLiveKey(db, scope), print)
  const claimedMeanwhile = await findLiveKey(db, scope)
  if (claimedMeanwhile) return replayOf(claimedMeanwhile, print)
  throw outcome.refused
}

/** What a taken key answers: its stored answer, replayed, if the body is the same; else 422. */
function replayOf<T> (stored: StoredKey | undefined, print: string): KeyedOutcome<T> {
  if (!stored || stored.response_status === null) {
    // Only possible if the row vanished (its TTL ran out) or is still being written between two statements.
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

const withReplayed = <T>(outcome: Outcome<T>, replayed: boolean): KeyedOutcome<T> =>
  'failure' in outcome ? outcome : { ...outcome, replayed }
