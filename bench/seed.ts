/**
 * Set-based seeding of a migrated database (generate_series, no request per row): members with one
 * real argon2 hash shared by all, products with a large stock, orders with 3 items each and their
 * first history entry. Ids are explicit so the bench can tell which orders each member owns:
 * member i (0-based) has id MEMBER_ID_BASE + i and owns orders g with g % members = i; the status of
 * order g is STATUSES[floor(g / members) % 4], so every member has PLACED orders. The stored money
 * and fulfilment columns (CONTRACT §15.1, §15.3, §15.5) follow from the status and a bucket 0–99 of
 * g (`seededMoney`), in a mix the admin lists can filter on: about 45% UNPAID, 45% PAID, 7.5%
 * REFUNDED, 2% PARTIALLY_REFUNDED and 0.75% PARTIALLY_PAID; 70% UNFULFILLED, 25% FULFILLED and 5%
 * PARTIALLY_FULFILLED. Only the stored columns are seeded: no payment, refund or fulfilment rows.
 */
import type pg from 'pg'

export const MEMBER_ID_BASE = 1000
export const STATUSES = ['PLACED', 'CONFIRMED', 'DELIVERED', 'CANCELLED'] as const
export const SEED_PASSWORD = 'bench-member-password'
export const memberEmail = (i: number) => `bench-member-${i}@example.com`

/**
 * What the seed is: stored in bench_seed, so that a database seeded by an older seed.ts (without
 * the money columns' mix) is seeded again rather than reused.
 */
export const SEED_VERSION = 2

/**
 * The seeded money and fulfilment columns of order `g` (an SQL expression) whose total is `total`,
 * as SQL expressions in this order: paid_amount, refunded_amount, credited_amount, payment_status,
 * fulfillment_status. The seed inserts them and the bench's reset restores them, from the same text.
 * By status: PLACED is UNPAID; CONFIRMED is mostly PAID (10% still UNPAID, 3% PARTIALLY_PAID after an
 * edit raised the total by 100, 3% PARTIALLY_REFUNDED by a goodwill refund of 100), and a fifth of
 * its paid orders are PARTIALLY_FULFILLED; DELIVERED is FULFILLED and PAID (5% PARTIALLY_REFUNDED);
 * CANCELLED is UNPAID, or REFUNDED in full (30%). The bucket mixes the member's order number with g,
 * so that each member has orders of every kind.
 */
export function seededMoney (g: string, total: string, members: number): string[] {
  const status = `(array['PLACED','CONFIRMED','DELIVERED','CANCELLED'])[1 + (${g} / ${members}) % 4]`
  const bucket = `((${g} / ${members}) * 37 + ${g} * 11) % 100`
  const payment = `case ${status}
      when 'PLACED' then 'UNPAID'
      when 'CONFIRMED' then case when ${bucket} < 10 then 'UNPAID' when ${bucket} < 13 then 'PARTIALLY_PAID'
        when ${bucket} < 16 then 'PARTIALLY_REFUNDED' else 'PAID' end
      when 'DELIVERED' then case when ${bucket} < 5 then 'PARTIALLY_REFUNDED' else 'PAID' end
      else case when ${bucket} < 70 then 'UNPAID' else 'REFUNDED' end end`
  return [
    `case ${payment} when 'UNPAID' then 0 when 'PARTIALLY_PAID' then ${total} - 100 else ${total} end`,
    `case ${payment} when 'PARTIALLY_REFUNDED' then 100 when 'REFUNDED' then ${total} else 0 end`,
    `case ${payment} when 'PARTIALLY_REFUNDED' then 100 else 0 end`,
    payment,
    `case when ${status} = 'DELIVERED' then 'FULFILLED'
      when ${status} = 'CONFIRMED' and ${bucket} >= 80 then 'PARTIALLY_FULFILLED' else 'UNFULFILLED' end`,
  ]
}

export interface SeedSizes { members: number, products: number, orders: number }

/** The product of order g's k-th item (k = 0, 1, 2): one from each third of the catalogue. */
export const productOf = (g: number, k: number, products: number) => 1 + k * Math.floor(products / 3) + (g % Math.floor(products / 3))

export async function seed (client: pg.Client, sizes: SeedSizes, passwordHash: string, log: (line: string) => void): Promise<void> {
  const { members, products, orders } = sizes
  const third = Math.floor(products / 3)
  const step = async (label: string, statement: string, values: unknown[] = []) => {
    const started = performance.now()
    const result = await client.query(statement, values)
    log(`  ${label}: ${result.rowCount ?? 0} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  }
  const existing = await client.query<{ n: string }>('select count(*) as n from products')
  if (Number(existing.rows[0]!.n) !== 0) throw new Error('the scratch database already has products')

  await step('members', `
    insert into members (id, email, password_hash, name, role, status, email_verified, created_at, updated_at)
    overriding system value
    select ${MEMBER_ID_BASE} + i, 'bench-member-' || i || '@example.com', $1, 'Bench Member ' || i, 'USER', 'ACTIVE', true,
           now() - interval '400 days', now() - interval '400 days'
    from generate_series(0, ${members - 1}) i`, [passwordHash])
  await step('products', `
    insert into products (id, name, description, price, stock_quantity, status, created_at, updated_at)
    overriding system value
    select i, 'Bench product ' || i, 'A product seeded for the load benchmark, number ' || i,
           100 + (i * 37) % 5000, 1000000000, 'ACTIVE', now() - interval '400 days', now() - interval '400 days'
    from generate_series(1, ${products}) i`)
  // Order g: 3 items, quantity 1 + (g + k) % 3, prices as seeded; one order a second going back in
  // time; its money and fulfilment columns as seededMoney says.
  await step('orders', `
    insert into orders (id, customer_id, status, total_amount, currency, item_count, shipping_address, memo, version, created_at, updated_at,
                        paid_amount, refunded_amount, credited_amount, payment_status, fulfillment_status)
    overriding system value
    select g, ${MEMBER_ID_BASE} + g % ${members}, (array['PLACED','CONFIRMED','DELIVERED','CANCELLED'])[1 + (g / ${members}) % 4],
           t.total, 'USD', 3, g || ' Main Street, Springfield', case when g % 7 = 0 then 'Leave at the door, "please"' end, 1,
           now() - g * interval '1 second', now() - g * interval '1 second',
           ${seededMoney('g', 't.total', members).join(',\n           ')}
    from generate_series(1, ${orders}) g
    cross join lateral (
      select sum((100 + ((1 + k * ${third} + g % ${third}) * 37) % 5000) * (1 + (g + k) % 3)) as total from generate_series(0, 2) k
    ) t`)
  await step('order_items', `
    insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
    select g, k, p.id, p.name, 1 + (g + k) % 3, p.price, p.price * (1 + (g + k) % 3)
    from generate_series(1, ${orders}) g cross join generate_series(0, 2) k
    join products p on p.id = 1 + k * ${third} + g % ${third}`)
  await step('order_history', `
    insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role, at)
    select id, null, 'PLACED', 'create', customer_id, 'USER', created_at from orders`)
  for (const table of ['members', 'products', 'orders', 'order_history']) {
    await client.query(`select setval(pg_get_serial_sequence('${table}', 'id'), (select max(id) from ${table}))`)
  }
  await step('vacuum analyze', 'vacuum analyze')
  // Seeding writes gigabytes of WAL; without this, the checkpoints it triggers run during the first
  // scenarios. (CHECKPOINT needs a superuser or pg_checkpoint; without either, the run goes on.)
  await step('checkpoint', 'checkpoint').catch(error => log(`  checkpoint skipped: ${(error as Error).message}`))
}
