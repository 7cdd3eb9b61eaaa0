import type { ColumnType, Generated, Selectable } from 'kysely'

/** A shipment's life (CONTRACT §15.3): SHIPPED, then DELIVERED or CANCELLED. */
export type FulfillmentStatus = 'SHIPPED' | 'DELIVERED' | 'CANCELLED'
/** How much of an order has shipped, stored on the order (CONTRACT §15.5). */
export type OrderFulfillmentStatus = 'UNFULFILLED' | 'PARTIALLY_FULFILLED' | 'FULFILLED'

export interface FulfillmentsTable {
  id: Generated<number>
  order_id: number
  status: Generated<FulfillmentStatus>
  carrier: string | null
  tracking_number: string | null
  tracking_url: string | null
  shipped_at: Generated<Date>
  delivered_at: ColumnType<Date | null, Date | null | undefined, Date | null>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface FulfillmentItemsTable {
  fulfillment_id: number
  product_id: number
  quantity: number
}

export type FulfillmentRow = Selectable<FulfillmentsTable>
