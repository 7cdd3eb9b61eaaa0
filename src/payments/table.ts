import type { Generated, Selectable } from 'kysely'
import type { PaymentStatus, RefundReason } from './schemas.js'

export interface PaymentsTable {
  id: Generated<number>
  order_id: number
  customer_id: number
  amount: number
  refunded_amount: Generated<number>
  currency: string
  status: Generated<PaymentStatus>
  /** How the customer paid, as the provider reports it (e.g. `CARD`); null until processed. */
  method: string | null
  /** The provider that captured the money and its reference for the charge. */
  provider: string | null
  provider_reference: string | null
  /** Why the last attempt was declined. */
  failure_reason: string | null
  /** Processing attempts so far; part of the provider's idempotency key. */
  attempts: Generated<number>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface PaymentRefundsTable {
  id: Generated<number>
  payment_id: number
  amount: number
  provider_reference: string
  reason: RefundReason
  /** The edit or the return the refund settles (CONTRACT §15.2, §15.4), if any. */
  edit_id: number | null
  return_id: number | null
  actor_id: number
  created_at: Generated<Date>
}

export type PaymentRow = Selectable<PaymentsTable>
