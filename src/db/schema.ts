import type { Kysely, Transaction } from 'kysely'
import type { ApiKeysTable, OidcFlowsTable, OidcLoginCodesTable, RefreshTokensTable, SessionsTable } from '../auth/table.js'
import type { CategoriesTable, ProductsTable } from '../catalog/table.js'
import type { OrderEditsTable } from '../edits/table.js'
import type { EventsTable } from '../events/table.js'
import type { FulfillmentItemsTable, FulfillmentsTable } from '../fulfillments/table.js'
import type { IdempotencyKeysTable } from '../idempotency/table.js'
import type { MemberIdentitiesTable, MemberTokensTable, MembersTable } from '../members/table.js'
import type { OrderHistoryTable, OrderItemsTable, OrdersTable } from '../orders/table.js'
import type { PaymentRefundsTable, PaymentsTable } from '../payments/table.js'
import type { ReturnItemsTable, ReturnsTable } from '../returns/table.js'
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../webhooks/table.js'

/** Every table, as Kysely sees it (snake_case rows; features map them to API shapes). */
export interface Database {
  settings: { key: string, value: string }
  members: MembersTable
  categories: CategoriesTable
  products: ProductsTable
  orders: OrdersTable
  order_items: OrderItemsTable
  order_history: OrderHistoryTable
  idempotency_keys: IdempotencyKeysTable
  sessions: SessionsTable
  refresh_tokens: RefreshTokensTable
  member_tokens: MemberTokensTable
  api_keys: ApiKeysTable
  payments: PaymentsTable
  payment_refunds: PaymentRefundsTable
  events: EventsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  member_identities: MemberIdentitiesTable
  oidc_flows: OidcFlowsTable
  oidc_login_codes: OidcLoginCodesTable
  fulfillments: FulfillmentsTable
  fulfillment_items: FulfillmentItemsTable
  returns: ReturnsTable
  return_items: ReturnItemsTable
  order_edits: OrderEditsTable
}

export type Db = Kysely<Database>
export type Tx = Transaction<Database>
