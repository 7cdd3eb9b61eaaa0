import type { Generated, Selectable } from 'kysely'
import type { ReturnReason, ReturnStatus } from './schemas.js'

export interface ReturnsTable {
  id: Generated<number>
  order_id: number
  status: Generated<ReturnStatus>
  note: string | null
  /** Why staff rejected it (CONTRACT §15.7), shown as `rejectionReason`. */
  rejection_reason: string | null
  /** What the receipt refunded (reason RETURN); null until received. */
  refund_amount: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface ReturnItemsTable {
  return_id: number
  product_id: number
  /** The line's place in the request, from 0. */
  position: number
  quantity: number
  reason: ReturnReason | null
  /** How many came back, and whether they went back in stock; null until received. */
  received_quantity: number | null
  restock: boolean | null
}

export type ReturnRow = Selectable<ReturnsTable>
