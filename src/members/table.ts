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
