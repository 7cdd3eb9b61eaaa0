import { sql, type RawBuilder } from 'kysely'
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
 * The claim of a key, as SQL: inserts its row with `answer` (a query of one row: status, body,
 * location), or takes over a row whose TTL has run out. A row of a concurrent claim that has not
 * committed makes it wait until that claim's transaction ends; a live row leaves it claiming
 * nothing. Returns a row (`claimed`) when the key was claimed. The one claim, whether the answer
 * is stored later in the same transaction (`claimKey`) or in the same statement (`keyClaim`).
 */
function claimSql (scope: KeyScope, fingerprint: string, ttlMs: number, answer: RawBuilder<unknown>): RawBuilder<{ claimed: boolean }> {
  return sql<{ claimed: boolean }>`
    insert into idempotency_keys (member_id, method, path, key, fingerprint, response_status, response_body, location, expires_at)
    select ${scope.memberId}::bigint, ${scope.method}::text, ${scope.path}::text, ${scope.key}::text, ${fingerprint}::text,
      a.status, a.body, a.location, ${expiresAt(ttlMs)}
    from (${answer}) as a (status, body, location)
    on conflict (member_id, method, path, key) do update set
      fingerprint = excluded.fingerprint, response_status = excluded.response_status, response_body = excluded.response_body,
      location = excluded.location, created_at = now(), expires_at = excluded.expires_at
    where idempotency_keys.expires_at <= now()
    returning true as claimed`
}

/**
 * Claims the key for this transaction: inserts its row, or takes over a row whose TTL has run out.
 * A concurrent claim of the same key waits on the row until this transaction ends. Returns whether
 * the key was claimed (false: it is taken, and `findKey` tells by what). The answer is stored
 * before commit (`storeAnswer`).
 */
export async function claimKey (trx: Tx, scope: KeyScope, fingerprint: string, ttlMs: number): Promise<boolean> {
  const { rows } = await claimSql(scope, fingerprint, ttlMs, sql`values (null::integer, null::jsonb, null::text)`).execute(trx)
  return rows.length > 0
}

/**
 * A key's part in a use case that runs as one statement (`answerOnceInOneStatement`): whose key,
 * the request's fingerprint and how long the key lives. No key is `null`.
 */
export interface KeyClaim {
  readonly scope: KeyScope
  readonly fingerprint: string
  readonly ttlMs: number
}

/**
 * A key's claim as two CTE bodies for the use case's statement to include, under these names.
 * - `key_stored`: the key's stored answer (fingerprint, response_status, response_body, location)
 *   when it is taken and live as the statement's snapshot sees the table; otherwise no row. The use
 *   case does nothing (checks nothing, locks nothing) when there is one.
 * - `key_claim`: claims the key with the answer of the use case's CTE `answer` (status, body,
 *   location; one row when its checks passed, none otherwise), and returns a row when it did. The
 *   use case writes nothing unless it returns one. It runs after the use case's checks and locks,
 *   and waits, like any claim, for a concurrent claim of the same key to end.
 * Without a key (`null`), `key_stored` is empty and `key_claim` passes `answer` through. The use
 * case builds its statement once per shape (src/db/compiled.ts), passing stand-ins for the
 * claim's values, which are only placed into the SQL here.
 */
export function keyClaimSql (claim: KeyClaim | null): { stored: RawBuilder<unknown>, claim: RawBuilder<unknown> } {
  if (!claim) {
    return {
      stored: sql`select null::text as fingerprint, null::integer as response_status, null::jsonb as response_body, null::text as location where false`,
      claim: sql`select true as claimed from answer`,
    }
  }
  const { scope } = claim
  return {
    stored: sql`
      select fingerprint, response_status, response_body, location from idempotency_keys
      where member_id = ${scope.memberId}::bigint and method = ${scope.method}::text and path = ${scope.path}::text
        and key = ${scope.key}::text and expires_at > now()`,
    claim: claimSql(scope, claim.fingerprint, claim.ttlMs, sql`select status, body, location from answer`),
  }
}

/** The key's row if it is live (its TTL has not run out), as a new statement sees it. */
export function findLiveKey (db: Db, scope: KeyScope): Promise<IdempotencyKeyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll()
    .where('member_id', '=', scope.memberId).where('method', '=', scope.method)
    .where('path', '=', scope.path).where('key', '=', scope.key)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
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
