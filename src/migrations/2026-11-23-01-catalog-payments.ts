import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  await sql`
    create table categories (
      id bigint generated always as identity primary key,
      name text not null,
      parent_id bigint references categories (id),
      created_at timestamptz(3) not null default now()
    )`.execute(db)
  await sql`create index categories_parent_idx on categories (parent_id)`.execute(db)

  await sql`alter table products add column category_id bigint references categories (id)`.execute(db)
  await sql`create index products_category_idx on products (category_id)`.execute(db)
  // Product text search: words of the name and description, language-neutral ('simple': no
  // stemming, so "mugs" and "Müsli" behave the same in every deployment), searched by prefix
  // through a GIN index (see src/catalog/repository.ts and docs/catalog.md).
  await sql`
    alter table products add column search tsvector generated always as (
      to_tsvector('simple', name || ' ' || coalesce(description, ''))
    ) stored`.execute(db)
  await sql`create index products_search_idx on products using gin (search)`.execute(db)
  // Public lists: active products, newest first (keyset paging on this order).
  await sql`create index products_active_created_idx on products (created_at desc, id desc) where status = 'ACTIVE'`.execute(db)

  // One payment per order; its amount is the order total at confirmation.
  await sql`
    create table payments (
      id bigint generated always as identity primary key,
      order_id bigint not null unique references orders (id),
      customer_id bigint not null references members (id),
      amount bigint not null check (amount >= 0),
      refunded_amount bigint not null default 0,
      currency char(3) not null,
      status text not null default 'PENDING'
        check (status in ('PENDING', 'COMPLETED', 'FAILED', 'PARTIALLY_REFUNDED', 'REFUNDED', 'CANCELLED')),
      method text,
      provider text,
      provider_reference text,
      failure_reason text,
      attempts integer not null default 0,
      created_at timestamptz(3) not null default now(),
      updated_at timestamptz(3) not null default now(),
      check (refunded_amount between 0 and amount)
    )`.execute(db)
  // The owner's payment history, newest first.
  await sql`create index payments_customer_created_idx on payments (customer_id, created_at desc, id desc)`.execute(db)

  // Every refund, as the provider confirmed it: the payment's refunded_amount is their sum.
  await sql`
    create table payment_refunds (
      id bigint generated always as identity primary key,
      payment_id bigint not null references payments (id),
      amount bigint not null check (amount > 0),
      provider_reference text not null,
      reason text not null,
      actor_id bigint not null,
      created_at timestamptz(3) not null default now()
    )`.execute(db)
  await sql`create index payment_refunds_payment_idx on payment_refunds (payment_id, id)`.execute(db)

  // Admin order lists filter and sort across every customer.
  await sql`create index orders_created_idx on orders (created_at desc, id desc)`.execute(db)
  await sql`create index orders_status_created_idx on orders (status, created_at desc, id desc)`.execute(db)
}
