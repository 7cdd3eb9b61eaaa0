import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import type { IdempotencyKeyRow } from './table.js'

/** Whose key it is and for which request: caller × method × path (CONTRACT §3). */
export interface KeyScope {
  memberId: number
  method: string
  path: string
  key: string
}

/** What an answered request stored, to be replayed as it was. */
export interface StoredAnswer {
  status: number
  body: unknown
  location: string | null
}

const expiresAt = (ttlMs: number) => sql<Date>`now() + ${ttlMs} * interval '1 millisecond'`

/**
 * Claims the key for this transaction: inserts its row, or takes over a row whose TTL has run out.
 * A concurrent claim of the same key waits on the row until this transaction ends. Returns whether
 * the key was claimed (false: it is taken, and `findKey` tells by what).
 */
export async function claimKey (trx: Tx, scope: KeyScope, fingerprint: string, ttlMs: number): Promise<boolean> {
  const claimed = await trx.insertInto('idempotency_keys')
    .values({
      member_id: scope.memberId,
      method: scope.method,
      path: scope.path,
      key: scope.key,
      fingerprint,
      response_status: null,
      response_body: null,
      location: null,
      expires_at: expiresAt(ttlMs),
    })
    .onConflict(oc => oc.columns(['member_id', 'method', 'path', 'key']).doUpdateSet({
      fingerprint,
      response_status: null,
      response_body: null,
      location: null,
      created_at: sql<Date>`now()`,
      expires_at: expiresAt(ttlMs),
    }).where('idempotency_keys.expires_at', '<=', sql<Date>`now()`))
    .returning('key')
    .executeTakeFirst()
  return claimed !== undefined
}

export function findKey (trx: Tx, scope: KeyScope): Promise<IdempotencyKeyRow | undefined> {
  return trx.selectFrom('idempotency_keys').selectAll()
    .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
    .where('path', '=', scope.path).where('key', '=', scope.key)
    .executeTakeFirst()
}

/** Stores the answer of the claimed key, before the claiming transaction commits. */
export async function storeAnswer (trx: Tx, scope: KeyScope, answer: StoredAnswer): Promise<void> {
  await trx.updateTable('idempotency_keys')
    .set({ response_status: answer.status, response_body: JSON.stringify(answer.body), location: answer.location })
    .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
    .where('path', '=', scope.path).where('key', '=', scope.key)
    .execute()
}

/** Gives up the claimed key: the transaction commits, but the key may be used again. */
export async function releaseKey (trx: Tx, scope: KeyScope): Promise<void> {
  await trx.deleteFrom('idempotency_keys')
    .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
    .where('path', '=', scope.path).where('key', '=', scope.key)
    .execute()
}

/** Deletes keys whose TTL has run out; returns how many. */
export async function purgeExpiredKeys (db: Db): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  return Number(result.numDeletedRows)
}
