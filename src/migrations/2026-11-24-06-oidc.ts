import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // A member who signed up through an OpenID provider has no password until a reset sets one (CONTRACT §13).
  await sql`alter table members alter column password_hash drop not null`.execute(db)
  // Which provider account is which member: (issuer, subject) is the provider's stable id of a person.
  // registration_id is the configured id it came through, listed as the member's identityProviders.
  await sql`
    create table member_identities (
      issuer text not null,
      subject text not null,
      registration_id text not null,
      member_id bigint not null references members (id) on delete cascade,
      created_at timestamptz(3) not null default now(),
      primary key (issuer, subject)
    )`.execute(db)
  await sql`create index member_identities_member_idx on member_identities (member_id)`.execute(db)
  // A sign-in under way, keyed by the hash of its state: any instance can finish it, once, within 10 minutes.
  await sql`
    create table oidc_flows (
      state_hash text primary key,
      registration_id text not null,
      code_verifier text not null,
      nonce text not null,
      redirect_uri text,
      client_state text,
      expires_at timestamptz(3) not null
    )`.execute(db)
  await sql`create index oidc_flows_expiry_idx on oidc_flows (expires_at)`.execute(db)
  // One-time login codes handed to a redirect_uri (60 s), stored hashed.
  await sql`
    create table oidc_login_codes (
      code_hash text primary key,
      member_id bigint not null references members (id) on delete cascade,
      expires_at timestamptz(3) not null
    )`.execute(db)
  await sql`create index oidc_login_codes_expiry_idx on oidc_login_codes (expires_at)`.execute(db)
}
