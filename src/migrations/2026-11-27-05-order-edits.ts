import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // One row per applied edit of an order (CONTRACT §15.2): what it changed, the totals before and
  // after, and how the difference in money was settled. A dry run writes nothing. `changes` holds
  // the changed lines as the API shows them ({productId, productName, quantityBefore, quantityAfter,
  // unitPrice}), in the order the request listed them: they are read back whole, never queried.
  await sql`
    create table order_edits (
      id bigint generated always as identity primary key,
      order_id bigint not null references orders (id),
      from_version integer not null,
      to_version integer not null,
      changes jsonb not null,
      shipping_address_changed boolean not null,
      total_before bigint not null,
      total_after bigint not null,
      settlement_kind text not null check (settlement_kind in ('NONE', 'PAYMENT_ADJUSTED', 'REFUND', 'PAYMENT')),
      settlement_amount bigint not null check (settlement_amount >= 0),
      settlement_payment_id bigint references payments (id),
      actor_id bigint not null,
      actor_role text not null,
      created_at timestamptz(3) not null default now()
    )`.execute(db)
  // An order's edits, oldest first.
  await sql`create index order_edits_order_idx on order_edits (order_id, id)`.execute(db)
}
