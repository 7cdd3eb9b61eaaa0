import { sql } from 'kysely'
import { randomToken, tokenHash } from '../auth/secrets.js'
import type { ApiKeyRow } from '../auth/table.js'
import type { Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { Principal } from '../http/access.js'
import { ApiError } from '../errors.js'
import type { ApiKey, CreatedApiKey } from './schemas.js'

const SECRET_PREFIX = 'osk_'

function toApiKey (row: ApiKeyRow): ApiKey {
  return {
    keyId: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
  }
}

/** A new key for the caller; the secret is returned this once and only its hash is kept. */
export async function createApiKey (db: Db, principal: Principal, name: string): Promise<CreatedApiKey> {
  const secret = SECRET_PREFIX + randomToken()
  const row = await db.insertInto('api_keys').values({
    member_id: principal.memberId,
    name,
    prefix: secret.slice(0, 8),
    secret_hash: tokenHash(secret),
    revoked_at: null,
  }).returningAll().executeTakeFirstOrThrow()
  return { keyId: row.id, name: row.name, prefix: row.prefix, secret, createdAt: row.created_at.toISOString() }
}

export async function listApiKeys (db: Db, principal: Principal): Promise<ApiKey[]> {
  const rows = await db.selectFrom('api_keys').selectAll().where('member_id', '=', principal.memberId).orderBy('id').execute()
  return rows.map(toApiKey)
}

/** Revokes one of the caller's keys; someone else's or an unknown key is 404; twice is fine. */
export async function revokeApiKey (db: Db, principal: Principal, keyId: string): Promise<void> {
  const row = await db.updateTable('api_keys')
    .set({ revoked_at: sql<Date>`coalesce(revoked_at, now())` })
    .where('id', '=', idValue(keyId)).where('member_id', '=', principal.memberId)
    .returning('id').executeTakeFirst()
  if (!row) throw new ApiError('API_KEY_NOT_FOUND', `API key ${keyId} does not exist.`)
}
