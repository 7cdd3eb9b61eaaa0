import { Type, type Static } from 'typebox'
import { Id, Timestamp } from '../http/schemas.js'

export const RoleSchema = Type.Enum(['USER', 'ADMIN'])
export type Role = Static<typeof RoleSchema>

export const MemberStatusSchema = Type.Enum(['ACTIVE', 'SUSPENDED'])
export type MemberStatus = Static<typeof MemberStatusSchema>

export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'] })
/** NIST 800-63B style: length only, no composition rules. */
export const Password = Type.String({ minLength: 8, maxLength: 128 })

export const RegisterBody = Type.Object({
  email: Email,
  password: Password,
  name: Type.String({ minLength: 1, maxLength: 100, examples: ['Ada Lovelace'] }),
}, { additionalProperties: false })
export type RegisterBody = Static<typeof RegisterBody>

export const Member = Type.Object({
  memberId: Id,
  email: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  status: MemberStatusSchema,
  emailVerified: Type.Boolean(),
  createdAt: Timestamp,
})
export type Member = Static<typeof Member>
