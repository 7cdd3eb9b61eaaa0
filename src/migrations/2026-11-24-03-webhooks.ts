import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // Where events are sent (CONTRACT §12). The secret signs deliveries (HMAC), so it is kept as it
  // is; after a rotation the previous one signs too until previous_secret_expires_at.
  await sql`
    create table webhook_endpoints (
      id bigint generated always as identity primary key,
      url text not null,
      event_types text[],
      description text,
      status text not null default 'ACTIVE' check (status in ('ACTIVE', 'DISABLED')),
      secret text not null,
      previous_secret text,
      previous_secret_expires_at timestamptz(3),
      deleted_at timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)

  // One row per event and endpoint, written with the event (src/events/outbox.ts): the durable
  // delivery log. A dispatcher claims due rows until claimed_until; a claim of an instance that
  // died lapses then.
  await sql`
    create table webhook_deliveries (
      id bigint generated always as identity primary key,
      endpoint_id bigint not null references webhook_endpoints (id),
      event_id bigint not null references events (id) on delete cascade,
      event_type text not null,
      order_id bigint not null,
      sequence integer not null,
      status text not null default 'PENDING' check (status in ('PENDING', 'SUCCEEDED', 'FAILED')),
      attempts integer not null default 0,
      next_attempt_at timestamptz(3) not null default now(),
      last_attempt_at timestamptz(3),
      last_response_status integer,
      last_error text,
      claimed_until timestamptz(3),
      created_at timestamptz(3) not null default now(),
      unique (endpoint_id, event_id)
    )`.execute(db)
  // The dispatcher's search: pending deliveries by due time.
  await sql`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'PENDING'`.execute(db)
  // Per-order order per endpoint: is an earlier event of the order still pending for this endpoint?
  await sql`create index webhook_deliveries_order_idx on webhook_deliveries (endpoint_id, order_id, sequence) where status = 'PENDING'`.execute(db)
  // An endpoint's delivery log, newest first.
  await sql`create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, id desc)`.execute(db)
}
