import type { Generated, Selectable } from 'kysely'
import type { MemberStatus, Role } from './schemas.js'

export interface MembersTable {
  id: Generated<number>
  email: string
  /** null: no password (signed up through an OpenID provider); password login fails until a reset sets one. */
  password_hash: string | null
  name: string
  role: Generated<Role>
  status: Generated<MemberStatus>
  email_verified: Generated<boolean>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export type MemberRow = Selectable<MembersTable>

export type MemberTokenPurpose = 'PASSWORD_RESET' | 'EMAIL_VERIFICATION'

export interface MemberTokensTable {
  token_hash: string
  member_id: number
  purpose: MemberTokenPurpose
  created_at: Generated<Date>
  expires_at: Date
  used_at: Date | null
}

/** A provider account (issuer, subject) linked to a member (CONTRACT §13). */
export interface MemberIdentitiesTable {
  issuer: string
  subject: string
  registration_id: string
  member_id: number
  created_at: Generated<Date>
}
