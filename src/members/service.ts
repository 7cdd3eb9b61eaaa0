import type { Config } from '../config.js'
import type { Db } from '../db/schema.js'
import { ApiError } from '../http/errors.js'
import { hashPassword } from './passwords.js'
import { findMemberByEmail, insertMember } from './repository.js'
import type { Member, RegisterBody } from './schemas.js'
import type { MemberRow } from './table.js'

export function toMember (row: MemberRow): Member {
  return {
    memberId: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.status,
    emailVerified: row.email_verified,
    createdAt: row.created_at.toISOString(),
  }
}

export async function registerMember (db: Db, body: RegisterBody): Promise<Member> {
  const email = body.email.trim()
  const row = await insertMember(db, { email, passwordHash: await hashPassword(body.password), name: body.name })
  if (!row) throw new ApiError('EMAIL_ALREADY_REGISTERED', 'An account with this email already exists.')
  return toMember(row)
}

/** Creates the first admin from ADMIN_EMAIL / ADMIN_PASSWORD when no member has that email. */
export async function bootstrapAdmin (db: Db, config: Pick<Config, 'adminEmail' | 'adminPassword'>): Promise<'created' | 'exists' | 'skipped'> {
  if (!config.adminEmail || !config.adminPassword) return 'skipped'
  if (await findMemberByEmail(db, config.adminEmail)) return 'exists'
  const row = await insertMember(db, {
    email: config.adminEmail,
    passwordHash: await hashPassword(config.adminPassword),
    name: 'Administrator',
    role: 'ADMIN',
  })
  return row ? 'created' : 'exists'
}
