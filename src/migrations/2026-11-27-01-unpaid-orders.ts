import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // A reservation now runs until the order's first payment is captured (CONTRACT §18): a capture
  // clears the deadline. Orders whose payment was captured before this change are cleared here.
  await sql`
    update orders o set reserved_until = null
    from payments p
    where p.id = o.payment_id and o.reserved_until is not null
      and p.status in ('COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED')`.execute(db)
  // The sweep's search now covers CONFIRMED orders too (their payment not yet captured).
  await sql`drop index orders_reservation_idx`.execute(db)
  await sql`
    create index orders_reservation_idx on orders (reserved_until)
    where status in ('PLACED', 'PENDING', 'CONFIRMED') and reserved_until is not null`.execute(db)
  // The unpaid-order limit counts a member's orders that hold stock: only those are read.
  await sql`
    create index orders_customer_holding_idx on orders (customer_id)
    where status in ('PLACED', 'PENDING', 'CONFIRMED')`.execute(db)
  // Bumped by every create the limit applies to, under the member's row lock: a create whose
  // snapshot is older than the last bump counted without a concurrent create's order, and runs again.
  await sql`alter table members add column unpaid_check bigint not null default 0`.execute(db)
}
