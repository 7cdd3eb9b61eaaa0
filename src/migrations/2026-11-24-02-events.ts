import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // The events announced so far for each order: the next event takes the next number, under the
  // order's row lock, so an order's events are numbered 1, 2, 3… without gaps (CONTRACT §12).
  await sql`alter table orders add column event_sequence integer not null default 0`.execute(db)

  // The transactional outbox: written by the statement that makes the change, in its transaction.
  // `tx` is that transaction's id: the feed reads only events of transactions older than every
  // transaction still running, so an event that commits late is never skipped (src/events/repository.ts).
  // `snapshot` holds the order row, its items, its payment row and the refund as they are when the
  // change commits; they are turned into API shapes when the event is read.
  await sql`
    create table events (
      id bigint generated always as identity primary key,
      tx xid8 not null default pg_current_xact_id(),
      type text not null,
      order_id bigint not null references orders (id),
      sequence integer not null,
      snapshot jsonb not null,
      created_at timestamptz(3) not null default now(),
      unique (order_id, sequence)
    )`.execute(db)
  await sql`create index events_position_idx on events (tx, id)`.execute(db)
  await sql`create index events_created_idx on events (created_at)`.execute(db)
}
