import { sql } from 'kysely'
import type { Db, Tx } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import { outboxWrites, type Announcement } from '../events/outbox.js'
import type { KeysetPosition } from '../http/paging.js'
import { moneyOf, storeMoney } from '../orders/money.js'
import type { RefundReason } from './schemas.js'
import type { PaymentsTable, PaymentRow } from './table.js'
import type { Updateable } from 'kysely'

/** Why a refund happened (CONTRACT §15.1): its reason, and the edit or return it settles. */
export interface RefundCause {
  reason: RefundReason
  editId?: number
  returnId?: number
}

export function findPayment (db: Db, id: string | number): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

/**
 * Locks the payment's order: a payment verb takes the order's lock before the payment's, the order
 * in which a cancel takes them, so the two never deadlock. Its event needs the order's next number.
 */
export async function lockOrderOfPayment (trx: Tx, id: string | number): Promise<void> {
  await sql`select o.id from orders o where o.id = (select p.order_id from payments p where p.id = ${idValue(id)}) for update`.execute(trx)
}

/**
 * Announces a change of the payment alone (processed, declined, refunded): its order keeps its
 * version, stores its money as its payments now have it (CONTRACT §15.1: the payment changed in an
 * earlier statement of this transaction), and the event takes the order's next sequence number
 * under the order's row lock. A capture (`captured`) also ends the order's reservation deadline
 * (CONTRACT §18): from then on the order keeps its stock.
 */
export async function announcePaymentChange (trx: Tx, orderId: number, event: Announcement, captured = false): Promise<void> {
  await sql`
    with o as (
      update orders set event_sequence = event_sequence + 1,
        reserved_until = case when ${captured}::boolean then null else reserved_until end, ${storeMoney}
      from ${moneyOf(orderId)} m
      where id = ${orderId} returning orders.*
    ),
    ${outboxWrites([event])}
    select 1`.execute(trx)
}

/** Locks the payment for the rest of the transaction: its changes happen one at a time. */
export function lockPayment (trx: Tx, id: string | number): Promise<PaymentRow | undefined> {
  return trx.selectFrom('payments').selectAll().where('id', '=', idValue(id)).forUpdate().executeTakeFirst()
}

/** Locks every payment of the order (the order's lock is held), oldest first. */
export function lockOrderPayments (trx: Tx, orderId: number): Promise<PaymentRow[]> {
  return trx.selectFrom('payments').selectAll().where('order_id', '=', orderId).orderBy('id').forUpdate().execute()
}

export function insertPayment (trx: Tx, payment: { orderId: number, customerId: number, amount: number, currency: string }): Promise<PaymentRow> {
  return trx.insertInto('payments')
    .values({ order_id: payment.orderId, customer_id: payment.customerId, amount: payment.amount, currency: payment.currency })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export function updatePayment (trx: Tx, id: number, change: Omit<Updateable<PaymentsTable>, 'id' | 'updated_at'>): Promise<PaymentRow> {
  return trx.updateTable('payments').set({ ...change, updated_at: sql<Date>`now()` })
    .where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

export function insertRefund (trx: Tx, refund: { paymentId: number, amount: number, reference: string, cause: RefundCause, actorId: number }): Promise<unknown> {
  return trx.insertInto('payment_refunds').values({
    payment_id: refund.paymentId,
    amount: refund.amount,
    provider_reference: refund.reference,
    reason: refund.cause.reason,
    edit_id: refund.cause.editId ?? null,
    return_id: refund.cause.returnId ?? null,
    actor_id: refund.actorId,
  }).execute()
}

/** A customer's payments, newest first (payments_customer_created_idx). */
export function listCustomerPayments (
  db: Db, filter: { customerId: number, after?: KeysetPosition, offset: number, limit: number }
): Promise<PaymentRow[]> {
  return db.selectFrom('payments').selectAll()
    .where('customer_id', '=', filter.customerId)
    .$if(filter.after !== undefined, qb => qb.where(eb =>
      eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(filter.after!.createdAt, filter.after!.id))))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(filter.limit).offset(filter.offset)
    .execute()
}
