import type { ColumnType, Generated, Selectable } from 'kysely'
import type { Role } from '../members/schemas.js'
import type { OrderEdit, SettlementKind } from './schemas.js'

/** One applied edit of an order (CONTRACT §15.2); a dry run writes none. */
export interface OrderEditsTable {
  /** Taken from its sequence before the row is written: the edit's refunds name it (payment_refunds.edit_id). */
  id: ColumnType<number, number, never>
  order_id: number
  from_version: number
  to_version: number
  /** The changed lines as the API shows them, in the order the request listed them. */
  changes: ColumnType<OrderEdit['changes'], string, never>
  shipping_address_changed: boolean
  total_before: number
  total_after: number
  settlement_kind: SettlementKind
  settlement_amount: number
  settlement_payment_id: number | null
  actor_id: number
  actor_role: Role
  created_at: Generated<Date>
}

export type OrderEditRow = Selectable<OrderEditsTable>
