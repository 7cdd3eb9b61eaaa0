import { sql, type RawBuilder } from 'kysely'
import type { OrderPayment } from '../payments/schemas.js'
import type { OrderStatus } from './schemas.js'

/**
 * The order's money as its payments and refunds have it now, as one row `(paid, refunded,
 * credited)` (CONTRACT §15.1): captured over all payments, refunded over all refunds, and the
 * refunds that lower what is owed (GOODWILL, RETURN). Read through payments_order_idx and
 * payment_refunds_payment_idx: the order's few rows only.
 */
export const moneyOf = (orderId: RawBuilder<unknown> | number) => sql`(
  select
    coalesce(sum(p.amount) filter (where p.status in ('COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED')), 0) as paid,
    coalesce(sum(p.refunded_amount), 0) as refunded,
    coalesce(sum((select sum(r.amount) from payment_refunds r
      where r.payment_id = p.id and r.reason in ('GOODWILL', 'RETURN'))), 0) as credited
  from payments p where p.order_id = ${orderId})`

/**
 * The SET list that stores `moneyOf`'s row `m` on the order being updated, with the payment status
 * derived from it in the order CONTRACT §15.7 decides it. Every statement that moves money (or
 * follows a statement of its transaction that did) ends with it, so lists read the columns alone.
 */
export const storeMoney = sql`paid_amount = m.paid, refunded_amount = m.refunded, credited_amount = m.credited,
  payment_status = case
    when m.paid = 0 then 'UNPAID'
    when m.refunded >= m.paid then 'REFUNDED'
    when orders.total_amount - m.credited - (m.paid - m.refunded) > 0 then 'PARTIALLY_PAID'
    when m.refunded > 0 then 'PARTIALLY_REFUNDED'
    else 'PAID' end`

/** The order's payments as its detail lists them, oldest first, for the order row `alias`. */
export const paymentsJson = (alias: string) => sql<OrderPayment[]>`coalesce((
  select json_agg(json_build_object(
    'paymentId', p.id, 'amount', p.amount, 'refundedAmount', p.refunded_amount, 'status', p.status) order by p.id)
  from payments p where p.order_id = ${sql.ref(`${alias}.id`)}), '[]'::json)`

/**
 * What the customer still owes (CONTRACT §15.1, §15.7): totalAmount − credited − (paid − refunded);
 * nothing on a CANCELLED or DELETED order.
 */
export function balanceDue (order: {
  status: OrderStatus, total_amount: number, paid_amount: number, refunded_amount: number, credited_amount: number
}): number {
  if (order.status === 'CANCELLED' || order.status === 'DELETED') return 0
  return order.total_amount - order.credited_amount - (order.paid_amount - order.refunded_amount)
}
