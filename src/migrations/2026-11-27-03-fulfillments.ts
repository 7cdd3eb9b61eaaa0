import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // A shipment of some of an order's goods (CONTRACT §15.3): SHIPPED, then DELIVERED or CANCELLED.
  await sql`
    create table fulfillments (
      id bigint generated always as identity primary key,
      order_id bigint not null references orders (id),
      status text not null default 'SHIPPED' check (status in ('SHIPPED', 'DELIVERED', 'CANCELLED')),
      carrier text,
      tracking_number text,
      tracking_url text,
      shipped_at timestamptz(3) not null default now(),
      delivered_at timestamptz(3),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)
  // An order's fulfilments, oldest first.
  await sql`create index fulfillments_order_idx on fulfillments (order_id, id)`.execute(db)
  await sql`
    create table fulfillment_items (
      fulfillment_id bigint not null references fulfillments (id),
      product_id bigint not null references products (id),
      quantity integer not null check (quantity > 0),
      primary key (fulfillment_id, product_id)
    )`.execute(db)

  // The order's fulfilment status, stored and kept in the transaction of every shipment (CONTRACT
  // §15.5). A constant default: no rewrite of the table, and a new order is UNFULFILLED.
  await sql`
    alter table orders
      add column fulfillment_status text not null default 'UNFULFILLED'
        check (fulfillment_status in ('UNFULFILLED', 'PARTIALLY_FULFILLED', 'FULFILLED'))`.execute(db)

  // An order delivered before fulfilments existed shipped everything at once: it gets the one
  // fulfilment §3's one-step deliver now writes (no tracking, shipped and delivered when the order
  // was last changed) and is FULFILLED. A delivered order later deleted keeps its shipment too.
  await sql`
    insert into fulfillments (order_id, status, shipped_at, delivered_at, created_at, updated_at)
    select o.id, 'DELIVERED', h.at, h.at, h.at, h.at
    from orders o
    join lateral (
      select coalesce(max(at), o.updated_at) as at from order_history
      where order_id = o.id and to_status = 'DELIVERED'
    ) h on true
    where o.status = 'DELIVERED'
       or (o.status = 'DELETED' and exists (
         select 1 from order_history d where d.order_id = o.id and d.to_status = 'DELIVERED'))
    order by o.id`.execute(db)
  await sql`
    insert into fulfillment_items (fulfillment_id, product_id, quantity)
    select f.id, i.product_id, i.quantity
    from fulfillments f join order_items i on i.order_id = f.order_id`.execute(db)
  await sql`
    update orders set fulfillment_status = 'FULFILLED'
    where id in (select order_id from fulfillments)`.execute(db)
  // The admin lists filter by it (CONTRACT §15.5) and sort newest first, as orders_status_created_idx.
  await sql`create index orders_fulfillment_status_created_idx on orders (fulfillment_status, created_at desc, id desc)`.execute(db)
}
