import type { Generated, Selectable } from 'kysely'
import type { MemberStatus, Role } from './schemas.js'

export interface MembersTable {
  id: Generated<number>
  email: string
  password_hash: string
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
