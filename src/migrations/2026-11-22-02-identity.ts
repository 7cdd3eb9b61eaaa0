import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // Instances follow suspensions by polling members changed since their last look.
  await sql`create index members_updated_idx on members (updated_at)`.execute(db)

  // A login session: its refresh tokens rotate; revoking it ends its access tokens too.
  await sql`
    create table sessions (
      id uuid primary key,
      member_id bigint not null references members (id),
      created_at timestamptz(3) not null default now(),
      revoked_at timestamptz(3),
      revoke_reason text
    )`.execute(db)
  await sql`create index sessions_member_idx on sessions (member_id) where revoked_at is null`.execute(db)
  await sql`create index sessions_revoked_idx on sessions (revoked_at) where revoked_at is not null`.execute(db)

  // Refresh tokens are stored only as SHA-256 hashes; a used one stays to detect its reuse.
  await sql`
    create table refresh_tokens (
      token_hash text primary key,
      session_id uuid not null references sessions (id),
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null,
      used_at timestamptz(3)
    )`.execute(db)
  await sql`create index refresh_tokens_session_idx on refresh_tokens (session_id)`.execute(db)

  // One-time tokens mailed to members (password reset, email verification), stored hashed.
  await sql`
    create table member_tokens (
      token_hash text primary key,
      member_id bigint not null references members (id),
      purpose text not null check (purpose in ('PASSWORD_RESET', 'EMAIL_VERIFICATION')),
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null,
      used_at timestamptz(3)
    )`.execute(db)
  await sql`create index member_tokens_member_idx on member_tokens (member_id, purpose)`.execute(db)

  await sql`
    create table api_keys (
      id bigint generated always as identity primary key,
      member_id bigint not null references members (id),
      name text not null,
      prefix text not null,
      secret_hash text not null unique,
      created_at timestamptz(3) not null default now(),
      revoked_at timestamptz(3)
    )`.execute(db)
  await sql`create index api_keys_member_idx on api_keys (member_id, id)`.execute(db)
}
