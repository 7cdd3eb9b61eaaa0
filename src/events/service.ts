import type { Db } from '../db/schema.js'
import { ApiError, invalidParam } from '../errors.js'
import { parseList } from '../http/paging.js'
import { toOrderData } from '../orders/mapper.js'
import type { OrderItem } from '../orders/schemas.js'
import type { OrderRow } from '../orders/table.js'
import { toPayment } from '../payments/service.js'
import type { OrderPayment } from '../payments/schemas.js'
import type { PaymentRow } from '../payments/table.js'
import { findEvent, readFeed, type FeedPosition } from './repository.js'
import { EVENT_TYPES, type Event, type EventFeedQuery } from './schemas.js'
import type { EventRow } from './table.js'

/** A row as the database wrote it into JSON: its timestamps as text. */
function withDates<T> (row: Record<string, unknown>): T {
  const dated: Record<string, unknown> = { ...row }
  for (const column of ['created_at', 'updated_at', 'reserved_until']) {
    if (typeof dated[column] === 'string') dated[column] = new Date(dated[column])
  }
  return dated as T
}

/**
 * The order's money as a snapshot written before orders stored it (CONTRACT §15.1) shows it: from
 * the one payment such an order had, its refunds credited unless the order was cancelled (the
 * migration's reading of the refunds of the time: a cancel's, or the admin's goodwill refund).
 */
function olderMoney (order: Record<string, unknown>, payment: PaymentRow | null): Pick<OrderRow,
  'paid_amount' | 'refunded_amount' | 'credited_amount' | 'payment_status'> {
  const paid = payment && ['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED'].includes(payment.status) ? payment.amount : 0
  const refunded = payment?.refunded_amount ?? 0
  const credited = order.status === 'CANCELLED' || order.status === 'DELETED' ? 0 : refunded
  const due = (order.total_amount as number) - credited - (paid - refunded)
  return {
    paid_amount: paid,
    refunded_amount: refunded,
    credited_amount: credited,
    payment_status: paid === 0 ? 'UNPAID' : refunded >= paid ? 'REFUNDED' : due > 0 ? 'PARTIALLY_PAID' : refunded > 0 ? 'PARTIALLY_REFUNDED' : 'PAID',
  }
}

/** An item as a snapshot written before fulfilments existed shows it: a delivered order had shipped every line. */
function olderItem (item: Partial<OrderItem> & Omit<OrderItem, 'fulfilledQuantity' | 'returnedQuantity'>, order: Record<string, unknown>): OrderItem {
  if (item.fulfilledQuantity !== undefined && item.returnedQuantity !== undefined) return item as OrderItem
  return { ...item, fulfilledQuantity: order.status === 'DELIVERED' ? item.quantity : 0, returnedQuantity: 0 }
}

/** The event object (CONTRACT §12) of a stored event: its snapshot in the API's shapes. */
export function toEvent (row: EventRow): Event {
  const { order, items, payment, payments, refund, subject } = row.snapshot
  const paymentRow = payment ? withDates<PaymentRow>(payment) : null
  const orderRow = withDates<OrderRow>(order)
  const money = 'payment_status' in order ? {} : olderMoney(order, paymentRow)
  // Written before fulfilments existed: a delivered order had shipped everything (as the migration reads it).
  const shipped = 'fulfillment_status' in order ? {} : { fulfillment_status: order.status === 'DELIVERED' ? 'FULFILLED' as const : 'UNFULFILLED' as const }
  const listed = (payments ?? (paymentRow
    ? [{ paymentId: paymentRow.id, amount: paymentRow.amount, refundedAmount: paymentRow.refunded_amount, status: paymentRow.status }]
    : [])) as OrderPayment[]
  return {
    eventId: row.id,
    type: row.type,
    timestamp: row.created_at.toISOString(),
    orderId: row.order_id,
    sequence: row.sequence,
    data: {
      order: toOrderData({ ...orderRow, ...money, ...shipped, items: (items as OrderItem[]).map(item => olderItem(item, order)), payments: listed }),
      payment: paymentRow ? toPayment(paymentRow) : null,
      // A refund announced before refunds had reasons: a cancel's, or the admin's (as the migration reads them).
      ...(refund ? { refund: { ...refund, reason: refund.reason ?? (order.status === 'CANCELLED' || order.status === 'DELETED' ? 'CANCEL' : 'GOODWILL') } } : {}),
      ...(subject ?? {}),
    },
  }
}

/**
 * A feed position as clients hold it: base64url of `[tx, id, issuedAt]`. `issuedAt` (epoch ms)
 * tells a cursor older than the retention, whose events may be gone (410 CURSOR_EXPIRED).
 */
function encodeFeedCursor (position: FeedPosition, issuedAt: number): string {
  return Buffer.from(JSON.stringify([position.tx, position.id, issuedAt])).toString('base64url')
}

function decodeFeedCursor (cursor: string): { position: FeedPosition, issuedAt: number } {
  try {
    const [tx, id, issuedAt] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]
    if (typeof tx === 'string' && /^\d{1,20}$/.test(tx) && Number.isSafeInteger(id) && (id as number) >= 0 &&
      Number.isSafeInteger(issuedAt) && (issuedAt as number) > 0) {
      return { position: { tx, id: id as number }, issuedAt: issuedAt as number }
    }
  } catch {}
  throw invalidParam('cursor', 'is not a cursor this API issued; pass the nextCursor of the previous slice')
}

/**
 * One slice of the event feed (admin), oldest first from `cursor`. `nextCursor` is never null:
 * at the end of the feed it is where to poll from later.
 */
export async function readEventFeed (db: Db, retentionMs: number, query: EventFeedQuery) {
  const size = query.size ?? 20
  const from = query.cursor !== undefined ? decodeFeedCursor(query.cursor) : undefined
  if (from && from.issuedAt < Date.now() - retentionMs) {
    throw new ApiError('CURSOR_EXPIRED', 'This cursor is older than the event retention; events after it may have been purged. Read the feed from its start, or catch up from the orders themselves.')
  }
  const rows = await readFeed(db, {
    after: from?.position,
    types: parseList('type', query.type, EVENT_TYPES),
    orderId: query.orderId,
    limit: size + 1,
  })
  const hasNext = rows.length > size
  const slice = hasNext ? rows.slice(0, size) : rows
  const last = slice.at(-1)
  const position = last ? { tx: last.tx, id: last.id } : from?.position ?? { tx: '0', id: 0 }
  return { content: slice.map(toEvent), size, hasNext, nextCursor: encodeFeedCursor(position, Date.now()) }
}

export async function getEvent (db: Db, id: string): Promise<Event> {
  const row = await findEvent(db, id)
  if (!row) throw new ApiError('EVENT_NOT_FOUND', `Event ${id} does not exist.`)
  return toEvent(row)
}
