import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    create table settings (
      key text primary key,
      value text not null
    )`.execute(db)

  await sql`
    create table members (
      id bigint generated always as identity primary key,
      email text not null,
      password_hash text not null,
      name text not null,
      role text not null default 'USER' check (role in ('USER', 'ADMIN')),
      status text not null default 'ACTIVE' check (status in ('ACTIVE', 'SUSPENDED')),
      email_verified boolean not null default false,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)
  await sql`create unique index members_email_key on members (lower(email))`.execute(db)

  await sql`
    create table products (
      id bigint generated always as identity primary key,
      name text not null,
      description text,
      price bigint not null check (price >= 0),
      stock_quantity integer not null check (stock_quantity >= 0),
      status text not null default 'ACTIVE' check (status in ('ACTIVE', 'INACTIVE')),
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)

  await sql`
    create table orders (
      id bigint generated always as identity primary key,
      customer_id bigint not null references members (id),
      status text not null
        check (status in ('PENDING', 'PLACED', 'CONFIRMED', 'DELIVERED', 'CANCELLED', 'DELETED')),
      total_amount bigint not null check (total_amount >= 0),
      currency char(3) not null,
      item_count integer not null check (item_count > 0),
      shipping_address text,
      memo text,
      payment_id bigint,
      version integer not null default 1,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now()
    )`.execute(db)
  // The owner's lists: newest first, soft-deleted orders excluded (keyset paging on this order).
  await sql`
    create index orders_customer_created_idx on orders (customer_id, created_at desc, id desc)
    where status <> 'DELETED'`.execute(db)

  await sql`
    create table order_items (
      order_id bigint not null references orders (id),
      position smallint not null,
      product_id bigint not null references products (id),
      product_name text not null,
      quantity integer not null check (quantity > 0),
      unit_price bigint not null check (unit_price >= 0),
      line_total bigint not null check (line_total >= 0),
      primary key (order_id, product_id)
    )`.execute(db)
  await sql`create index order_items_product_idx on order_items (product_id, order_id)`.execute(db)

  await sql`
    create table order_history (
      id bigint generated always as identity primary key,
      order_id bigint not null references orders (id),
      from_status text,
      to_status text not null,
      action text not null,
      actor_id bigint not null,
      actor_role text not null,
      at timestamptz(3) not null default now()
    )`.execute(db)
  await sql`create index order_history_order_idx on order_history (order_id, id)`.execute(db)

  // Idempotency keys are scoped to caller × method × path. A key is claimed at the start of the
  // transaction that does the work and its response is filled in before commit, so a committed row
  // always has one (see src/idempotency/service.ts).
  await sql`
    create table idempotency_keys (
      member_id bigint not null,
      method text not null,
      path text not null,
      key text not null,
      fingerprint text not null,
      response_status integer,
      response_body jsonb,
      location text,
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null,
      primary key (member_id, method, path, key)
    )`.execute(db)
  await sql`create index idempotency_keys_expires_idx on idempotency_keys (expires_at)`.execute(db)
}
