import type { ColumnType, Generated, Selectable } from 'kysely'

export type EndpointStatus = 'ACTIVE' | 'DISABLED'
export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED'

export interface WebhookEndpointsTable {
  id: Generated<number>
  url: string
  /** null = every event type. */
  event_types: string[] | null
  description: string | null
  status: ColumnType<EndpointStatus, EndpointStatus | undefined, EndpointStatus>
  /** `whsec_` + base64 of 32 random bytes: the HMAC key, so kept as it is. */
  secret: string
  /** After a rotation, the previous secret signs too until it expires (24 h). */
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  deleted_at: Date | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export interface WebhookDeliveriesTable {
  id: Generated<number>
  endpoint_id: number
  event_id: number
  event_type: string
  order_id: number
  sequence: number
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>
  attempts: Generated<number>
  next_attempt_at: Generated<Date>
  last_attempt_at: Date | null
  last_response_status: number | null
  last_error: string | null
  /** `attempts` when the current retry schedule began (a manual retry starts a fresh one). */
  schedule_start: Generated<number>
  /** A dispatcher's claim on the delivery; lapses at this time if that instance died. */
  claimed_until: Date | null
  created_at: Generated<Date>
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>
