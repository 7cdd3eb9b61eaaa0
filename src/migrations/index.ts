import type { Migration } from 'kysely'
import * as initial from './2026-11-22-01-initial.js'
import * as identity from './2026-11-22-02-identity.js'
import * as catalogPayments from './2026-11-23-01-catalog-payments.js'
import * as reservations from './2026-11-24-01-reservations.js'
import * as events from './2026-11-24-02-events.js'
import * as webhooks from './2026-11-24-03-webhooks.js'
import * as webhookDispatch from './2026-11-24-04-webhook-dispatch.js'
import * as webhookNotify from './2026-11-24-07-webhook-notify.js'
import * as webhookClaims from './2026-11-24-08-webhook-claims.js'
import * as webhookNotifyOff from './2026-11-24-09-webhook-notify-off.js'
import * as oidc from './2026-11-24-06-oidc.js'
import * as oidcBinding from './2026-11-27-01-oidc-binding.js'
import * as unpaidOrders from './2026-11-27-01-unpaid-orders.js'
import * as orderMoney from './2026-11-27-02-order-money.js'
import * as fulfillments from './2026-11-27-03-fulfillments.js'
import * as historyRefs from './2026-11-27-04-history-refs.js'
import * as orderEdits from './2026-11-27-05-order-edits.js'
import * as returns from './2026-11-27-06-returns.js'

/** Every migration, in order. Names sort by date; a landed migration is never edited. */
export const migrations: Record<string, Migration> = {
  '2026-11-22-01-initial': initial,
  '2026-11-22-02-identity': identity,
  '2026-11-23-01-catalog-payments': catalogPayments,
  '2026-11-24-01-reservations': reservations,
  '2026-11-24-02-events': events,
  '2026-11-24-03-webhooks': webhooks,
  '2026-11-24-04-webhook-dispatch': webhookDispatch,
  '2026-11-24-06-oidc': oidc,
  '2026-11-24-07-webhook-notify': webhookNotify,
  '2026-11-24-08-webhook-claims': webhookClaims,
  '2026-11-24-09-webhook-notify-off': webhookNotifyOff,
  '2026-11-27-01-oidc-binding': oidcBinding,
  '2026-11-27-01-unpaid-orders': unpaidOrders,
  '2026-11-27-02-order-money': orderMoney,
  '2026-11-27-03-fulfillments': fulfillments,
  '2026-11-27-04-history-refs': historyRefs,
  '2026-11-27-05-order-edits': orderEdits,
  '2026-11-27-06-returns': returns,
}
