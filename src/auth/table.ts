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

/** An OpenID sign-in under way (auth/oidc-service.ts). */
export interface OidcFlowsTable {
  state_hash: string
  registration_id: string
  code_verifier: string
  nonce: string
  redirect_uri: string | null
  client_state: string | null
  /** The hash of the browser-binding cookie's value (null only for flows started before it existed). */
  binding_hash: string | null
  expires_at: Date
}

export type OidcFlowRow = Selectable<OidcFlowsTable>

export interface OidcLoginCodesTable {
  code_hash: string
  member_id: number
  expires_at: Date
}
