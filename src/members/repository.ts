import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { Sort } from '../http/paging.js'
import type { MemberStatus, Role } from './schemas.js'
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

export interface MemberFilter {
  role?: Role
  status?: MemberStatus
  /** Part of the email or the name, any case. */
  q?: string
}

/**
 * `%` and `_` in a search term match themselves. The pattern is lower-cased by PostgreSQL, as the
 * columns are: JavaScript lower-cases some letters another way (`İ`, a final `Σ`).
 */
const likePattern = (term: string) => sql<string>`lower(${`%${term.replace(/[\\%_]/g, match => `\\${match}`)}%`})`

/** The admin list: one page in the requested order, and how many members match in all. */
export async function pageMembers (
  db: Db, filter: MemberFilter & { sort: Sort<'created_at' | 'email' | 'name'>, offset: number, limit: number }
): Promise<{ rows: MemberRow[], total: number }> {
  const matching = db.selectFrom('members')
    .$if(filter.role !== undefined, qb => qb.where('role', '=', filter.role!))
    .$if(filter.status !== undefined, qb => qb.where('status', '=', filter.status!))
    .$if(filter.q !== undefined, qb => qb.where(eb => eb.or([
      eb(sql`lower(email)`, 'like', likePattern(filter.q!)),
      eb(sql`lower(name)`, 'like', likePattern(filter.q!)),
    ])))
  const [rows, count] = await Promise.all([
    matching.selectAll().orderBy(filter.sort.column, filter.sort.direction).orderBy('id', filter.sort.direction)
      .limit(filter.limit).offset(filter.offset).execute(),
    matching.select(eb => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.total) }
}
