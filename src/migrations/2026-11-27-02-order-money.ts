import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // An order may have several payments (CONTRACT §15.1): the first, opened by confirm, is still
  // named by orders.payment_id; the others are found by their order, oldest first.
  await sql`alter table payments drop constraint payments_order_id_key`.execute(db)
  await sql`create index payments_order_idx on payments (order_id, id)`.execute(db)

  // Every refund says why: the admin's refund verb (GOODWILL), a cancel or delete (CANCEL), and,
  // in later increments, an edit (EDIT) or a return (RETURN), with the record it belongs to.
  await sql`alter table payment_refunds add column edit_id bigint, add column return_id bigint`.execute(db)
  await sql`update payment_refunds set reason = case when reason = 'order cancelled' then 'CANCEL' else 'GOODWILL' end`.execute(db)
  await sql`
    alter table payment_refunds add constraint payment_refunds_reason_check
      check (reason in ('GOODWILL', 'EDIT', 'RETURN', 'CANCEL'))`.execute(db)

  // The order's money, stored and kept in the transaction of every change that moves it: captured
  // (all payments), refunded (all refunds), credited (GOODWILL and RETURN refunds), and the status
  // derived from them. Constant defaults: no rewrite of the table, and a new order needs no extra work.
  await sql`
    alter table orders
      add column paid_amount bigint not null default 0,
      add column refunded_amount bigint not null default 0,
      add column credited_amount bigint not null default 0,
      add column payment_status text not null default 'UNPAID'
        check (payment_status in ('UNPAID', 'PARTIALLY_PAID', 'PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'))`.execute(db)
  await sql`
    update orders o set paid_amount = m.paid, refunded_amount = m.refunded, credited_amount = m.credited
    from (
      select p.order_id,
        sum(case when p.status in ('COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED') then p.amount else 0 end) as paid,
        sum(p.refunded_amount) as refunded,
        coalesce(sum((select sum(r.amount) from payment_refunds r
          where r.payment_id = p.id and r.reason in ('GOODWILL', 'RETURN'))), 0) as credited
      from payments p group by p.order_id
    ) m
    where m.order_id = o.id`.execute(db)
  await sql`
    update orders set payment_status = case
      when paid_amount = 0 then 'UNPAID'
      when refunded_amount >= paid_amount then 'REFUNDED'
      when total_amount - credited_amount - (paid_amount - refunded_amount) > 0 then 'PARTIALLY_PAID'
      when refunded_amount > 0 then 'PARTIALLY_REFUNDED'
      else 'PAID' end
    where paid_amount > 0`.execute(db)
  // The admin lists filter by it (CONTRACT §15.5) and sort newest first, as orders_status_created_idx.
  await sql`create index orders_payment_status_created_idx on orders (payment_status, created_at desc, id desc)`.execute(db)
}
