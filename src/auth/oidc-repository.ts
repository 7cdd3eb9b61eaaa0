import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import type { OidcFlowRow } from './table.js'

// SQL of the OpenID sign-in: the flows under way and the one-time login codes (auth/oidc-service.ts).

export async function insertFlow (db: Db, flow: Omit<OidcFlowRow, 'expires_at'>, ttlMs: number): Promise<void> {
  await db.insertInto('oidc_flows').values({
    ...flow,
    expires_at: sql<Date>`now() + ${ttlMs} * interval '1 millisecond'`,
  }).execute()
}

/**
 * Uses a flow up: it is deleted whether or not it has expired, so that it works once. Returns it
 * with whether it was still live, or undefined when there is no such flow.
 */
export async function takeFlow (db: Db, stateHash: string): Promise<(OidcFlowRow & { live: boolean }) | undefined> {
  const row = await db.deleteFrom('oidc_flows').where('state_hash', '=', stateHash)
    .returningAll().returning(sql<boolean>`expires_at > now()`.as('live')).executeTakeFirst()
  return row
}

export async function insertLoginCode (db: Db, code: { hash: string, memberId: number, ttlMs: number }): Promise<void> {
  await db.insertInto('oidc_login_codes').values({
    code_hash: code.hash,
    member_id: code.memberId,
    expires_at: sql<Date>`now() + ${code.ttlMs} * interval '1 millisecond'`,
  }).execute()
}

/** Spends a login code: its member if it was live, else undefined; a code works once either way. */
export async function spendLoginCode (db: Db, hash: string): Promise<number | undefined> {
  const row = await db.deleteFrom('oidc_login_codes').where('code_hash', '=', hash)
    .returning(['member_id', sql<boolean>`expires_at > now()`.as('live')]).executeTakeFirst()
  return row?.live ? row.member_id : undefined
}

/** Deletes flows and login codes past their expiry; returns how many. */
export async function purgeExpiredSignIns (db: Db): Promise<number> {
  const flows = await db.deleteFrom('oidc_flows').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  const codes = await db.deleteFrom('oidc_login_codes').where('expires_at', '<=', sql<Date>`now()`).executeTakeFirst()
  return Number(flows.numDeletedRows) + Number(codes.numDeletedRows)
}
