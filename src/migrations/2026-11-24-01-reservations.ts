import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // When an unconfirmed order's stock reservation runs out (CONTRACT §11, §14): fixed at creation
  // from ORDER_RESERVATION_TTL; null when the TTL was 0 and for orders carried over.
  await sql`alter table orders add column reserved_until timestamptz(3)`.execute(db)
  // The sweep's search: only orders that still hold an unconfirmed reservation.
  await sql`
    create index orders_reservation_idx on orders (reserved_until)
    where status in ('PLACED', 'PENDING') and reserved_until is not null`.execute(db)
  // An expiry is the service's own act: its history entry has no actor.
  await sql`alter table order_history alter column actor_id drop not null`.execute(db)
  await sql`alter table order_history alter column actor_role drop not null`.execute(db)
}
