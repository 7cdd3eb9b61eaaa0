import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // Goods coming back, line by line (CONTRACT §15.4): REQUESTED, then RECEIVED, REJECTED or CANCELLED.
  // refund_amount is what the receipt refunded (reason RETURN); null until it is received.
  await sql`
    create table returns (
      id bigint generated always as identity primary key,
      order_id bigint not null references orders (id),
      status text not null default 'REQUESTED' check (status in ('REQUESTED', 'RECEIVED', 'REJECTED', 'CANCELLED')),
      note text,
      rejection_reason text,
      refund_amount bigint check (refund_amount >= 0),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)
  // An order's returns, oldest first; what its lines have returned or have open.
  await sql`create index returns_order_idx on returns (order_id, id)`.execute(db)
  // The admin list: newest first, optionally one status.
  await sql`create index returns_status_idx on returns (status, id desc)`.execute(db)
  // Per line: what was asked to go back and why, then what came back and whether it went back in stock.
  await sql`
    create table return_items (
      return_id bigint not null references returns (id),
      product_id bigint not null references products (id),
      position smallint not null,
      quantity integer not null check (quantity > 0),
      reason text check (reason in ('DAMAGED', 'WRONG_ITEM', 'NOT_AS_DESCRIBED', 'NO_LONGER_NEEDED', 'OTHER')),
      received_quantity integer check (received_quantity >= 0 and received_quantity <= quantity),
      restock boolean,
      primary key (return_id, product_id)
    )`.execute(db)

  // Whether the order has a REQUESTED return (CONTRACT §15.5), kept in the transaction of every
  // return step. A constant default: no rewrite of the table; no order has a return yet.
  await sql`alter table orders add column has_open_return boolean not null default false`.execute(db)
  // The admin lists filter by it and sort newest first; few orders have an open return at any time,
  // so the index holds only those.
  await sql`create index orders_open_return_created_idx on orders (created_at desc, id desc) where has_open_return`.execute(db)
}
