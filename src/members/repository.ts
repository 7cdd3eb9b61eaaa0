import { sql } from 'kysely'
import { idValue, type Db } from '../db/schema.js'
import type { Role } from './schemas.js'
import type { MemberRow } from './table.js'

export function findMemberById (db: Db, id: number | string): Promise<MemberRow | undefined> {
  return db.selectFrom('members').selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

/** Emails are unique regardless of case. */
export function findMemberByEmail (db: Db, email: string): Promise<MemberRow | undefined> {
  return db.selectFrom('members').selectAll().where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst()
}

/** Inserts a member; `undefined` when the email is already registered. */
export function insertMember (
  db: Db,
  member: { email: string, passwordHash: string, name: string, role?: Role }
): Promise<MemberRow | undefined> {
  return db.insertInto('members')
    .values({ email: member.email, password_hash: member.passwordHash, name: member.name, role: member.role ?? 'USER' })
    .onConflict(oc => oc.expression(sql`lower(email)`).doNothing())
    .returningAll()
    .executeTakeFirst()
}
