import { ROLES } from '../http/access.js'
import { Type, type Static } from 'typebox'
import { Id, PageQuery, PlainName, SortQuery, Timestamp } from '../http/schemas.js'

export const RoleSchema = Type.Enum([...ROLES])
export type Role = Static<typeof RoleSchema>

export const MemberStatusSchema = Type.Enum(['ACTIVE', 'SUSPENDED'])
export type MemberStatus = Static<typeof MemberStatusSchema>

export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'] })
/**
 * NIST 800-63B style: length, no composition rules. The service also refuses a common password and
 * one that is the email or its local part (passwords.ts), which a schema cannot express.
 */
export const Password = Type.String({
  minLength: 8,
  maxLength: 128,
  description: '8 to 128 characters; not a common password, not the email address nor the part before its @',
})

/** A member's name: 1..100 characters, no control characters. */
const Name = PlainName({ minLength: 1, maxLength: 100, examples: ['Ada Lovelace'] })

export const RegisterBody = Type.Object({
  email: Email,
  password: Password,
  name: Name,
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

/** The caller's own account: the member, and the OpenID providers they have signed in through (CONTRACT §13). */
export const MyAccount = Type.Object({
  ...Member.properties,
  identityProviders: Type.Array(Type.String(), { description: 'Registration ids of the OpenID providers linked to this account (GET /oauth2/authorization/{id})' }),
})
export type MyAccount = Static<typeof MyAccount>

export const UpdateMemberBody = Type.Object({
  name: Type.Optional(Name),
}, { additionalProperties: false })
export type UpdateMemberBody = Static<typeof UpdateMemberBody>

export const VerifyEmailBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 200 }),
}, { additionalProperties: false })
export type VerifyEmailBody = Static<typeof VerifyEmailBody>

export const MEMBER_SORT = { createdAt: 'created_at', email: 'email', name: 'name' } as const

const MemberFilters = {
  role: Type.Optional(RoleSchema),
  status: Type.Optional(MemberStatusSchema),
  ...SortQuery(Object.keys(MEMBER_SORT)),
}

export const AdminMemberListQuery = Type.Object({ ...PageQuery, ...MemberFilters }, { additionalProperties: false })
export const AdminMemberSearchQuery = Type.Object({
  ...PageQuery,
  ...MemberFilters,
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Part of the email or the name (case-insensitive)', examples: ['ada'] })),
}, { additionalProperties: false })
export type AdminMemberSearchQuery = Static<typeof AdminMemberSearchQuery>

/** What an admin may change on an account; absent = unchanged. */
export const AdminUpdateMemberBody = Type.Object({
  role: Type.Optional(RoleSchema),
  status: Type.Optional(MemberStatusSchema),
  name: Type.Optional(Name),
}, { additionalProperties: false })
export type AdminUpdateMemberBody = Static<typeof AdminUpdateMemberBody>
