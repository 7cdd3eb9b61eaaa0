import { sql, type Kysely, type Transaction } from 'kysely'
import type { ApiKeysTable, RefreshTokensTable, SessionsTable } from '../auth/table.js'
import type { CategoriesTable, ProductsTable } from '../catalog/table.js'
import type { IdempotencyKeysTable } from '../idempotency/table.js'
import type { MemberTokensTable, MembersTable } from '../members/table.js'
import type { OrderHistoryTable, OrderItemsTable, OrdersTable } from '../orders/table.js'
import type { PaymentRefundsTable, PaymentsTable } from '../payments/table.js'

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
}

export type Db = Kysely<Database>
export type Tx = Transaction<Database>

/** PostgreSQL's largest bigint, and so the largest id a path may name. */
const MAX_ID = 9223372036854775807n

/** Whether `text` is an id as paths write it: digits without a leading zero, 1 to 2^63−1 (CONTRACT §1). */
export const isId64 = (text: string): boolean => /^[1-9]\d{0,18}$/.test(text) && BigInt(text) <= MAX_ID

/** The instants a timestamp in a query or a cursor may name: the years 0001 to 9999, in UTC. */
const FIRST_TIME = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_TIME = Date.parse('9999-12-31T23:59:59.999Z')

/**
 * Whether an instant (epoch ms) is one both databases store and compare: PGlite refuses the year 0
 * and PostgreSQL refuses what JavaScript writes for years past 9999, with a 500 if they got there.
 */
export const isStorableTime = (ms: number): boolean => ms >= FIRST_TIME && ms <= LAST_TIME

/** The largest stock a product may hold (an `integer` column). */
export const MAX_STOCK = 2_147_483_647

/**
 * A path id as a bigint parameter. Path ids are validated digits up to 2^63−1, which may exceed
 * what a JS number holds exactly, so they travel to PostgreSQL as text and are cast there.
 */
export const idValue = (id: string | number) => sql<number>`cast(${String(id)} as bigint)`
