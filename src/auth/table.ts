import type { Generated, Selectable } from 'kysely'

export interface SessionsTable {
  id: string
  member_id: number
  created_at: Generated<Date>
  revoked_at: Date | null
  revoke_reason: string | null
}

export interface RefreshTokensTable {
  token_hash: string
  session_id: string
  created_at: Generated<Date>
  expires_at: Date
  used_at: Date | null
}

export interface ApiKeysTable {
  id: Generated<number>
  member_id: number
  name: string
  prefix: string
  secret_hash: string
  created_at: Generated<Date>
  revoked_at: Date | null
}

export type SessionRow = Selectable<SessionsTable>
export type ApiKeyRow = Selectable<ApiKeysTable>
