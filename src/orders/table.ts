import type { ColumnType, Generated, Selectable } from 'kysely'
import type { OrderFulfillmentStatus } from '../fulfillments/table.js'
import type { Role } from '../members/schemas.js'
import type { OrderAction, OrderPaymentStatus, OrderStatus } from './schemas.js'

export interface OrdersTable {
  id: Generated<number>
  customer_id: number
  status: OrderStatus
  total_amount: number
  currency: string
  item_count: number
  shipping_address: string | null
  memo: string | null
  /** The order's first payment, opened by confirm; later ones are found by `payments.order_id`. */
  payment_id: number | null
  /** Money captured, over all its payments (CONTRACT §15.1); kept by every change that moves money. */
  paid_amount: Generated<number>
  /** Money refunded, over all its refunds. */
  refunded_amount: Generated<number>
  /** The refunds that lower what is owed (reasons GOODWILL and RETURN). */
  credited_amount: Generated<number>
  payment_status: Generated<OrderPaymentStatus>
  /** How much has shipped (CONTRACT §15.3, §15.5); kept in the transaction of every shipment. */
  fulfillment_status: Generated<OrderFulfillmentStatus>
  /** Whether a return of the order is REQUESTED (CONTRACT §15.5); kept in the transaction of every return step. */
  has_open_return: Generated<boolean>
  /** When the unconfirmed order's stock reservation runs out; null = never (CONTRACT §11). */
  reserved_until: ColumnType<Date | null, Date | null | undefined, Date | null>
  version: Generated<number>
  /** How many events the order has announced; the next takes the next number (CONTRACT §12). */
  event_sequence: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface OrderItemsTable {
  order_id: number
  /** The item's place in the order as it was submitted, from 0. */
  position: number
  product_id: number
  product_name: string
  quantity: number
  unit_price: number
  line_total: number
}

export interface OrderHistoryTable {
  id: Generated<number>
  order_id: number
  from_status: OrderStatus | null
  to_status: OrderStatus
  action: OrderAction
  /** Null when the service itself acted (an expired reservation). */
  actor_id: number | null
  actor_role: Role | null
  /** The edit, fulfilment or return the step made or changed (CONTRACT §15.2–§15.4), else null. */
  edit_id: ColumnType<number | null, number | null | undefined, never>
  fulfillment_id: ColumnType<number | null, number | null | undefined, never>
  return_id: ColumnType<number | null, number | null | undefined, never>
  at: Generated<Date>
}

export type OrderRow = Selectable<OrdersTable>
export type OrderItemRow = Selectable<OrderItemsTable>
export type OrderHistoryRow = Selectable<OrderHistoryTable>
