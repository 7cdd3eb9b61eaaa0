import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { ApiError, invalidParam } from '../errors.js'

/** 1..255 printable ASCII characters (CONTRACT §3). */
const KEY = /^[\x20-\x7E]{1,255}$/

/** What an idempotent request stores and replays. */
export interface StoredResponse {
  status: number
  body: unknown
  location: string | null
}

export interface IdempotencyScope {
  memberId: number
  method: string
  path: string
}

/**
 * The request's idempotency key, from the `Idempotency-Key` header or the body's `idempotencyKey`.
 * Both present and different, or malformed → 400 naming `idempotencyKey`.
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
 * Runs `work` at most once per key, in one transaction with the key's record:
 * 1. claim the key (insert; or take over a row whose TTL has run out). A concurrent request with the
 *    same key waits on the claim until the first one commits or rolls back;
 * 2. if it was already taken: same fingerprint → the stored response is replayed; different → 422;
 * 3. otherwise run `work` and store its response before commit. A failure rolls the claim back with
 *    everything else, so only successful results are kept and a failed request may be retried.
 *    `work` may also return a failure status (≥ 400) to have its changes committed but the key released.
 * Without a key, `work` simply runs in a transaction.
 */
export async function runIdempotent (
  db: Db,
  ttlMs: number,
  request: { scope: IdempotencyScope, key: string | undefined, body: Record<string, unknown> },
  work: (trx: Tx) => Promise<StoredResponse>
): Promise<{ replayed: boolean, response: StoredResponse }> {
  const { scope, key } = request
  if (key === undefined) {
    return { replayed: false, response: await db.transaction().execute(work) }
  }
  const print = fingerprint(request.body)
  return db.transaction().execute(async (trx) => {
    const claimed = await trx.insertInto('idempotency_keys')
      .values({
        member_id: scope.memberId,
        method: scope.method,
        path: scope.path,
        key,
        fingerprint: print,
        response_status: null,
        response_body: null,
        location: null,
        expires_at: sql<Date>`now() + ${ttlMs} * interval '1 millisecond'`,
      })
      .onConflict(oc => oc.columns(['member_id', 'method', 'path', 'key']).doUpdateSet({
        fingerprint: print,
        response_status: null,
        response_body: null,
        location: null,
        created_at: sql<Date>`now()`,
        expires_at: sql<Date>`now() + ${ttlMs} * interval '1 millisecond'`,
      }).where('idempotency_keys.expires_at', '<=', sql<Date>`now()`))
      .returning('key')
      .executeTakeFirst()

    if (!claimed) {
      const stored = await trx.selectFrom('idempotency_keys').selectAll()
        .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
        .where('path', '=', scope.path).where('key', '=', key)
        .executeTakeFirst()
      if (!stored || stored.response_status === null) {
        // Only possible if the row vanished or is still being written between our two statements.
        throw new ApiError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is still being processed.', {
          headers: { 'Retry-After': '1' },
        })
      }
      if (stored.fingerprint !== print) {
        throw new ApiError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used with a different request body.')
      }
      return {
        replayed: true,
        response: { status: stored.response_status, body: stored.response_body, location: stored.location },
      }
    }

    const response = await work(trx)
    if (response.status >= 400) {
      // A failure the work committed (a declined payment is recorded as FAILED): the key is released
      // with it, so that the request may be retried with the same key.
      await trx.deleteFrom('idempotency_keys')
        .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
        .where('path', '=', scope.path).where('key', '=', key)
        .execute()
      return { replayed: false, response }
    }
    await trx.updateTable('idempotency_keys')
      .set({
        response_status: response.status,
        response_body: JSON.stringify(response.body),
        location: response.location,
      })
      .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
      .where('path', '=', scope.path).where('key', '=', key)
      .execute()
    return { replayed: false, response }
  })
}

/** Deletes keys whose TTL has run out; returns how many. */
export async function purgeExpiredKeys (db: Db): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  return Number(result.numDeletedRows)
}
