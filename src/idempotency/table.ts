import type { Generated, Selectable } from 'kysely'

export interface IdempotencyKeysTable {
  member_id: number
  method: string
  path: string
  key: string
  fingerprint: string
  /** Null only inside the transaction that claimed the key; filled in before it commits. */
  response_status: number | null
  response_body: unknown
  location: string | null
  created_at: Generated<Date>
  expires_at: Date
}

export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>
