import { ROLES } from '../http/access.js'
import { Type, type Static } from 'typebox'
import { Component, Envelope, Id, Page, PageQuery, PlainName, Ref, SortQuery, Timestamp } from '../http/schemas.js'

export const RoleSchema = Component('Role', Type.Enum([...ROLES]))
export type Role = Static<typeof RoleSchema>

export const MemberStatusSchema = Component('MemberStatus', Type.Enum(['ACTIVE', 'SUSPENDED']))
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

const MemberFields = {
  memberId: Id,
  email: Type.String(),
  name: Type.String(),
  role: Ref(RoleSchema),
  status: Ref(MemberStatusSchema),
  emailVerified: Type.Boolean(),
  createdAt: Timestamp,
}
export const Member = Component('Member', Type.Object(MemberFields, { description: 'A member’s account' }))
export type Member = Static<typeof Member>

/** The caller's own account: the member, and the OpenID providers they have signed in through (CONTRACT §13). */
export const MyAccount = Component('MyAccount', Type.Object({
  ...MemberFields,
  identityProviders: Type.Array(Type.String(), { description: 'Registration ids of the OpenID providers linked to this account (GET /oauth2/authorization/{id})' }),
}, { description: 'The caller’s own account, with the OpenID providers linked to it' }))
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
  role: Type.Optional(Ref(RoleSchema)),
  status: Type.Optional(Ref(MemberStatusSchema)),
  ...SortQuery(Object.keys(MEMBER_SORT)),
}

export const AdminMemberListQuery = Type.Object({ ...PageQuery, ...MemberFilters }, { additionalProperties: false })
export const AdminMemberSearchQuery = Type.Object({
  ...PageQuery,
  ...MemberFilters,
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Part of the email or the name (case-insensitive), e.g. `ada`' })),
}, { additionalProperties: false })
export type AdminMemberSearchQuery = Static<typeof AdminMemberSearchQuery>

/** What an admin may change on an account; absent = unchanged. */
export const AdminUpdateMemberBody = Type.Object({
  role: Type.Optional(Ref(RoleSchema)),
  status: Type.Optional(Ref(MemberStatusSchema)),
  name: Type.Optional(Name),
}, { additionalProperties: false })
export type AdminUpdateMemberBody = Static<typeof AdminUpdateMemberBody>

/** The answers' envelopes, made when this module loads (named components). */
export const MemberEnvelope = Envelope(Member)
export const MemberPageEnvelope = Envelope(Page(Member))
export const MyAccountEnvelope = Envelope(MyAccount)
