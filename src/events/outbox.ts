import { sql, type RawBuilder } from 'kysely'
import { fulfilledOf } from '../fulfillments/repository.js'
import { returnedOf } from '../returns/repository.js'
import type { RefundReason } from '../payments/schemas.js'
import type { OrderEdit } from '../edits/schemas.js'
import type { Fulfillment } from '../fulfillments/schemas.js'
import type { Return } from '../returns/schemas.js'
import type { EventType } from './schemas.js'

/**
 * An event a change announces; `refund` only on `payment.refunded` (CONTRACT §12, §15.1).
 * `paymentId`: the payment a payment event is about; absent, the event carries the order's most
 * recent payment (CONTRACT §15.7).
 */
export interface Announcement {
  type: EventType
  paymentId?: number
  refund?: { amount: number, reason: RefundReason, editId?: number, returnId?: number }
  /** The edit, fulfilment or return the event is about (CONTRACT §15.7), as the API shows it. */
  edit?: OrderEdit
  fulfillment?: Fulfillment
  return?: Return
}

/** The announcement's edit, fulfilment or return as `{edit}`, `{fulfillment}` or `{return}` JSON, or null. */
function subjectOf (a: Announcement): string | null {
  if (a.edit) return JSON.stringify({ edit: a.edit })
  if (a.fulfillment) return JSON.stringify({ fulfillment: a.fulfillment })
  if (a.return) return JSON.stringify({ return: a.return })
  return null
}

/** An order's items as the API shows them, read from order_items for the order row `o`. */
export const storedItems = sql`(select jsonb_agg(jsonb_build_object(
    'productId', i.product_id, 'productName', i.product_name, 'quantity', i.quantity,
    'unitPrice', i.unit_price, 'lineTotal', i.line_total, 'fulfilledQuantity', ${fulfilledOf('i')}, 'returnedQuantity', ${returnedOf('i')})
    order by i.position)
  from order_items i where i.order_id = o.id)`

/**
 * The transactional outbox's write, as two CTEs (`new_events`, `new_deliveries`) to add to the
 * statement that changes the order, so that they commit or roll back with it:
 * - the announced events. `o` must name the order row as it is after the change, its
 *   `event_sequence` already advanced by `announcements.length`: the events take the numbers up to
 *   it, in the order given. Each stores the order, its items (`items`, a subquery over `o`), the
 *   payment it is about (or the order's most recent), all the order's payments as the transaction
 *   has them, and the refund;
 * - one delivery per event and webhook endpoint that is ACTIVE and takes its type.
 */
export function outboxWrites (announcements: readonly Announcement[], items: RawBuilder<unknown> = storedItems): RawBuilder<unknown> {
  const count = announcements.length
  const rows = sql.join(announcements.map((a, i) =>
    sql`(${i + 1}::integer, ${a.type}::text, ${a.paymentId ?? null}::bigint, ${a.refund ? JSON.stringify(a.refund) : null}::jsonb, ${subjectOf(a)}::jsonb)`))
  return sql`
    new_events as (
      insert into events (type, order_id, sequence, snapshot)
      select a.type, o.id, o.event_sequence - ${count}::integer + a.ord, jsonb_build_object(
        'order', to_jsonb(o),
        'items', coalesce(${items}, '[]'::jsonb),
        'payment', (select to_jsonb(p) from payments p
          where p.id = coalesce(a.payment_id, (select max(q.id) from payments q where q.order_id = o.id))),
        'payments', (select jsonb_agg(jsonb_build_object(
          'paymentId', p.id, 'amount', p.amount, 'refundedAmount', p.refunded_amount, 'status', p.status) order by p.id)
          from payments p where p.order_id = o.id),
        'refund', a.refund, 'subject', a.subject)
      from o, (values ${rows}) as a (ord, type, payment_id, refund, subject)
      order by a.ord
      returning id, type, order_id, sequence
    ),
    new_deliveries as (
      insert into webhook_deliveries (endpoint_id, event_id, event_type, order_id, sequence)
      select w.id, e.id, e.type, e.order_id, e.sequence
      from new_events e
      join webhook_endpoints w on w.status = 'ACTIVE' and w.deleted_at is null
        and (w.event_types is null or e.type = any (w.event_types))
      order by e.id, w.id
    )`
}
