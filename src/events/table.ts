import type { Generated, Selectable } from 'kysely'
import type { RefundReason } from '../payments/schemas.js'
import type { OrderEdit } from '../edits/schemas.js'
import type { Fulfillment } from '../fulfillments/schemas.js'
import type { Return } from '../returns/schemas.js'
import type { EventType } from './schemas.js'

export interface EventsTable {
  id: Generated<number>
  /** The writing transaction's id (xid8, as text): the feed's position is (tx, id). */
  tx: Generated<string>
  type: EventType
  order_id: number
  sequence: number
  /** The order row, its items, its payment row, its payments and the refund, as committed (src/events/outbox.ts). */
  snapshot: EventSnapshot
  created_at: Generated<Date>
}

/** What an event stores of the change, in the database's own JSON (snake_case rows). */
export interface EventSnapshot {
  order: Record<string, unknown>
  items: unknown[]
  payment: Record<string, unknown> | null
  /** The order's payments as the detail lists them; absent in snapshots written before CONTRACT §15.1. */
  payments?: unknown[] | null
  refund: { amount: number, reason?: RefundReason, editId?: number, returnId?: number } | null
  /** The edit, fulfilment or return the event is about, in the API's shape; absent or null when none. */
  subject?: { edit?: OrderEdit, fulfillment?: Fulfillment, return?: Return } | null
}

export type EventRow = Selectable<EventsTable>
