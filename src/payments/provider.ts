import { randomUUID } from 'node:crypto'

/**
 * The seam between the order service and whoever moves the money (a card network, a wallet, a
 * bank). The service calls it inside the database transaction that records the outcome, holding
 * the payment's row lock, so a payment is never charged or refunded twice concurrently; each call
 * carries an idempotency key that is stable across retries of the same attempt, so a provider that
 * honours it never charges twice even when our transaction fails after the provider said yes.
 *
 * A real provider implements this interface and is passed to `buildApp` (`paymentProvider`);
 * nothing in the order or payment code changes. See docs/payments.md.
 */
export interface PaymentProvider {
  /** Recorded with each captured payment, e.g. `simulated`, `stripe`. */
  readonly name: string
  /**
   * Captures `amount`. A decline (card refused, insufficient funds) is an answer, not an error:
   * `{approved: false, reason}`. Throw only when the outcome is unknown or the provider is unreachable;
   * the request then fails with 503 and nothing is recorded.
   */
  charge (request: ChargeRequest): Promise<ChargeResult>
  /** Returns `amount` of a captured charge to the customer; throws if it cannot. */
  refund (request: RefundRequest): Promise<{ reference: string }>
}

export interface ChargeRequest {
  paymentId: number
  orderId: number
  /** Minor units of `currency`. */
  amount: number
  currency: string
  paymentMethodToken: string
  /** The same for every retry of one attempt; different for the next attempt. */
  idempotencyKey: string
}

export type ChargeResult =
  | { approved: true, reference: string, method: string }
  | { approved: false, reason: string }

export interface RefundRequest {
  paymentId: number
  /** The provider's reference of the charge. */
  chargeReference: string
  amount: number
  currency: string
  idempotencyKey: string
}

/** The token the simulated provider declines. */
export const DECLINED_TOKEN = 'tok_declined'

/**
 * The built-in provider for development, tests and demos: it moves no money. It declines
 * `tok_declined` and approves every other token, as a card payment.
 */
export function simulatedProvider (): PaymentProvider {
  return {
    name: 'simulated',
    async charge (request) {
      if (request.paymentMethodToken === DECLINED_TOKEN) return { approved: false, reason: 'The card was declined.' }
      return { approved: true, reference: `sim_ch_${randomUUID()}`, method: 'CARD' }
    },
    async refund () {
      return { reference: `sim_re_${randomUUID()}` }
    },
  }
}
