import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import type { OrderDetail } from '../../src/orders/schemas.js'
import { assertError, type Member } from '../helper.js'
import {
  ONE_STEP_DELIVER_EVENTS, balanceDueOf, checkBooks, expectStatus, holdsStock, isOpen, isRefundable, leftOf, owedOf, paymentStatusOf, pick, settlePayments,
  stockOf, totalOf, unpaidHeldBy, type Model, type ModelOrder, type ModelPayment, type Real,
} from './books-model.js'

/**
 * The commands of the model-based test. Each is one small class: `check` says from the model alone
 * whether the command can be sent now (usually: is there an order it can name); `apply` sends the
 * request, asserts the status and the body the model predicts (a refusal with its whole error), and
 * updates the model. `run` then checks the books through the API (checkBooks).
 *
 * Adding a command: write a class that extends BooksCommand, and add its arbitrary to COMMANDS
 * (repeat it there to make it more frequent). The commands still to come, once their endpoints exist:
 *  - EditOrder (§15.2): POST /orders/{id}/edits with If-Match; settlement NONE / PAYMENT_ADJUSTED /
 *    REFUND (reason EDIT, not credited) / PAYMENT (a new PENDING payment: Pay then picks it, as it
 *    picks the newest open payment); events: the payment's event(s), then order.edited.
 *  - Fulfil, DeliverFulfilment, CancelFulfilment (§15.3): move ModelLine.shipped (cancel moves it
 *    back); the order becomes DELIVERED when FULFILLED and every fulfilment not CANCELLED is
 *    delivered; Cancel must then predict 400 for an order with a live fulfilment. Keep the
 *    fulfilments in ModelOrder (add a field) to name them.
 *  - RequestReturn, ReceiveReturn with and without restock (§15.4): ModelLine.returned and
 *    ModelLine.restocked; the refund has reason RETURN (credited), newest captured payment first.
 * The checks (checkBooks) already read `returnedQuantity` and count restocked stock.
 */
export abstract class BooksCommand implements fc.AsyncCommand<Model, Real> {
  /** What the model predicted, counted over the whole property (printed at the end, to show what was exercised). */
  static readonly outcomes = new Map<string, number>()
  protected outcome = 'done'

  abstract check (m: Readonly<Model>): boolean
  /** Sends the request, asserts what the model predicts, and updates the model. */
  protected abstract apply (m: Model, r: Real): Promise<void>
  abstract toString (): string

  async run (m: Model, r: Real): Promise<void> {
    this.outcome = 'done'
    await this.apply(m, r)
    const name = `${this.constructor.name}: ${this.outcome}`
    BooksCommand.outcomes.set(name, (BooksCommand.outcomes.get(name) ?? 0) + 1)
    await checkBooks(m, r, this.toString())
  }

  /** A refused request: the whole error; that nothing changed, checkBooks sees (the model did not move). */
  protected refused (res: LightMyRequestResponse, url: string, code: string, detail: string, invalidParams?: Array<{ field: string, message: string }>): void {
    this.outcome = `refused ${code}`
    assertError(res, { code, instance: url, detail, ...(invalidParams ? { invalidParams } : {}) })
  }

  /** A verb answered 200 that changed nothing (the order or payment was already in its target state). */
  protected unchanged (res: LightMyRequestResponse): void {
    this.outcome = 'unchanged'
    expectStatus(res, 200, this.toString())
  }
}

/**
 * How a command names an order: the `n`-th (modulo) of the orders it may name now; when `aimed`,
 * only among those where the model expects it to succeed, so that long paths (paid, refunded,
 * delivered) are reached often while refusals still come from the other draws. A command with
 * nothing to name is skipped, which costs no request.
 */
export interface OrderRef { n: number, aimed: boolean }

/** A command about one order of the run. */
export abstract class OrderCommand extends BooksCommand {
  constructor (readonly at: OrderRef) { super() }
  /** The orders it can name at all (e.g. Pay: those with a payment). */
  protected names (_o: ModelOrder): boolean { return true }
  /** The orders where the model expects it to succeed. */
  protected abstract succeedsOn (o: ModelOrder): boolean

  /** The order it names; none (the command is skipped) when there is no order to name, or none where an aimed command should succeed. */
  protected order (m: Readonly<Model>): ModelOrder | undefined {
    return pick(m, this.at.n, this.at.aimed ? o => this.names(o) && this.succeedsOn(o) : o => this.names(o))
  }

  check (m: Readonly<Model>): boolean { return this.order(m) !== undefined }
  protected label (...args: string[]): string {
    return `${this.constructor.name}(#${this.at.n}${this.at.aimed ? ' aimed' : ''}${args.map(a => `, ${a}`).join('')})`
  }
}

const owner = (r: Real, o: ModelOrder): Member => r.members[o.owner]!
const send = (r: Real, who: Member, method: 'POST' | 'PATCH', url: string, payload?: object) =>
  r.api.inject({ method, url, headers: who.headers, ...(payload === undefined ? {} : { payload }) })

/** The most orders one run places (each step reads every one of them back). */
export const MAX_ORDERS = 4

/** POST /orders: random 1..3 distinct products with quantities, by the member or by the admin for the member. */
export class PlaceOrder extends BooksCommand {
  constructor (readonly member: number, readonly items: Array<{ product: number, quantity: number }>, readonly byAdmin: boolean) { super() }
  /** A few orders per run, each taken far along its way, rather than many orders barely begun. */
  check (m: Readonly<Model>): boolean { return m.orders.length < MAX_ORDERS }
  toString (): string {
    return `PlaceOrder(${this.member}, [${this.items.map(i => `p${i.product}×${i.quantity}`).join(', ')}]${this.byAdmin ? ', by admin' : ''})`
  }

  protected async apply (m: Model, r: Real): Promise<void> {
    const customer = r.members[this.member]!
    const res = await send(r, this.byAdmin ? r.admin : customer, 'POST', '/api/v1/orders', {
      customerId: customer.id,
      items: this.items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity })),
    })
    const short = this.items.filter(i => stockOf(m, i.product) < i.quantity)
    if (short.length > 0) {
      return this.refused(res, '/api/v1/orders', 'INSUFFICIENT_STOCK', `Not enough stock, nothing was reserved (${short.map(i =>
        `product ${r.productIds[i.product]}: ${i.quantity} requested, ${stockOf(m, i.product)} in stock`).join('; ')}).`)
    }
    const held = unpaidHeldBy(m, this.member)
    if (!this.byAdmin && held >= m.unpaidLimit) {
      return this.refused(res, '/api/v1/orders', 'UNPAID_ORDER_LIMIT_REACHED',
        `A member may hold at most ${m.unpaidLimit} orders that reserve stock without a captured payment, and ${held} are open; pay for or cancel one of them first. Nothing was placed.`)
    }
    const placed = expectStatus(res, 201, this.toString()) as OrderDetail
    m.orders.push({
      id: placed.orderId,
      owner: this.member,
      status: 'PLACED',
      lines: this.items.map(i => ({ product: i.product, quantity: i.quantity, unitPrice: m.products[i.product]!.price, shipped: 0, returned: 0, restocked: 0 })),
      payments: [],
      events: ['order.placed'],
      version: 1,
    })
  }
}

/** PATCH /orders/{id}/confirm by the owner: opens the order's PENDING payment for its total. */
export class Confirm extends OrderCommand {
  protected succeedsOn (o: ModelOrder): boolean { return o.status === 'PLACED' }
  toString (): string { return this.label() }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/orders/${o.id}/confirm`
    const res = await send(r, owner(r, o), 'PATCH', url)
    if (o.status === 'DELETED') return this.refused(res, url, 'ORDER_NOT_FOUND', `Order ${o.id} does not exist.`)
    if (o.status === 'CONFIRMED') return this.unchanged(res)
    if (o.status !== 'PLACED') return this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot confirm an order that is ${o.status}.`)
    expectStatus(res, 200, this.toString())
    const { paymentId } = (await r.api.get(`/api/v1/orders/${o.id}`, {}, owner(r, o))).json().data as OrderDetail
    assert.ok(paymentId !== null && !o.payments.some(p => p.id === paymentId), `${this}: a new payment`)
    o.payments.push({ id: paymentId, amount: totalOf(o), status: 'PENDING', refunds: [] })
    o.status = 'CONFIRMED'
    o.events.push('payment.created', 'order.confirmed')
    o.version++
  }
}

/** The payment the owner pays: the newest open one, else the newest (to see how a closed one is refused). */
const payable = (o: ModelOrder): ModelPayment => o.payments.findLast(isOpen) ?? o.payments.at(-1)!

/** PATCH /payments/{id}/process by the owner, approved (`tok_visa`) or declined (`tok_declined`, the simulated provider's refusal). */
export class Pay extends OrderCommand {
  constructor (at: OrderRef, readonly approved: boolean) { super(at) }
  protected override names (o: ModelOrder): boolean { return o.payments.length > 0 }
  protected succeedsOn (o: ModelOrder): boolean { return isOpen(payable(o)) }
  toString (): string { return this.label(this.approved ? 'approved' : 'declined') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const p = payable(o)
    const url = `/api/v1/payments/${p.id}/process`
    const res = await send(r, owner(r, o), 'PATCH', url, { paymentMethodToken: this.approved ? 'tok_visa' : 'tok_declined' })
    if (isRefundable(p)) return this.unchanged(res)
    if (!isOpen(p)) return this.refused(res, url, 'INVALID_PAYMENT_STATUS', `Cannot process a payment that is ${p.status}.`)
    if (!this.approved) {
      this.refused(res, url, 'PAYMENT_DECLINED',
        'The payment provider declined the payment: The card was declined. The payment is FAILED and may be processed again with another payment method.')
      this.outcome = 'declined, FAILED'
      p.status = 'FAILED'
      o.events.push('payment.failed')
      return
    }
    assert.equal((expectStatus(res, 200, this.toString()) as { status: string }).status, 'COMPLETED')
    p.status = 'COMPLETED'
    o.events.push('payment.succeeded')
  }
}

/** How much a goodwill refund asks for: everything left (no body), a share of it, or more than is left. */
export type RefundSize = { kind: 'full' } | { kind: 'part', permille: number } | { kind: 'over', extra: number }

/** PATCH /payments/{id}/refund by the admin: a GOODWILL refund of the newest refundable payment (else the newest). */
export class GoodwillRefund extends OrderCommand {
  constructor (at: OrderRef, readonly size: RefundSize) { super(at) }
  protected override names (o: ModelOrder): boolean { return o.payments.length > 0 }
  protected succeedsOn (o: ModelOrder): boolean { return o.payments.some(isRefundable) }
  toString (): string {
    return this.label(this.size.kind === 'full' ? 'full' : this.size.kind === 'part' ? `${this.size.permille}‰ of what is left` : `left+${this.size.extra}`)
  }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const p = o.payments.findLast(isRefundable) ?? o.payments.at(-1)!
    const left = leftOf(p)
    const amount = this.size.kind === 'full'
      ? undefined
      : this.size.kind === 'part' ? Math.max(1, Math.floor(left * this.size.permille / 1000)) : left + this.size.extra
    const url = `/api/v1/payments/${p.id}/refund`
    const res = await send(r, r.admin, 'PATCH', url, amount === undefined ? undefined : { amount })
    if (!isRefundable(p)) {
      return this.refused(res, url, 'INVALID_PAYMENT_STATUS',
        `Cannot refund a payment that is ${p.status}; only COMPLETED and PARTIALLY_REFUNDED payments can be refunded.`)
    }
    if (amount !== undefined && amount > left) {
      return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', [{ field: 'amount', message: `must not exceed the ${left} left to refund` }])
    }
    const refund = amount ?? left
    p.refunds.push({ amount: refund, reason: 'GOODWILL' })
    p.status = refund === left ? 'REFUNDED' : 'PARTIALLY_REFUNDED'
    const answer = expectStatus(res, 200, this.toString()) as { status: string, refundedAmount: number }
    assert.deepEqual([answer.status, answer.refundedAmount], [p.status, p.amount - leftOf(p)], `${this}: the refunded payment`)
    o.events.push('payment.refunded')
  }
}

/** The status change shared by cancel and delete of an open order: stock back, payments ended, then the order's event. */
function endOpenOrder (o: ModelOrder, to: 'CANCELLED' | 'DELETED', event: string): void {
  settlePayments(o)
  o.status = to
  o.events.push(event)
  o.version++
}

/** Cancel by the owner (PATCH /orders/{id}/cancel) or by the admin (PATCH /admin/orders/{id} {status: CANCELLED}). */
export class Cancel extends OrderCommand {
  constructor (at: OrderRef, readonly byAdmin: boolean) { super(at) }
  protected succeedsOn (o: ModelOrder): boolean { return holdsStock(o) }
  toString (): string { return this.label(this.byAdmin ? 'by admin' : 'by owner') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = this.byAdmin ? `/api/v1/admin/orders/${o.id}` : `/api/v1/orders/${o.id}/cancel`
    const res = this.byAdmin
      ? await send(r, r.admin, 'PATCH', url, { status: 'CANCELLED' })
      : await send(r, owner(r, o), 'PATCH', url)
    if (o.status === 'DELETED' && !this.byAdmin) return this.refused(res, url, 'ORDER_NOT_FOUND', `Order ${o.id} does not exist.`)
    if (o.status === 'CANCELLED') return this.unchanged(res)
    if (o.status !== 'PLACED' && o.status !== 'CONFIRMED') return this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot cancel an order that is ${o.status}.`)
    expectStatus(res, 200, this.toString())
    endOpenOrder(o, 'CANCELLED', 'order.cancelled')
  }
}

/** §3's one-step deliver by the admin (PATCH /admin/orders/{id} {status: DELIVERED}): ships every line and delivers it. */
export class Deliver extends OrderCommand {
  protected succeedsOn (o: ModelOrder): boolean { return o.status === 'CONFIRMED' }
  toString (): string { return this.label() }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/admin/orders/${o.id}`
    const res = await send(r, r.admin, 'PATCH', url, { status: 'DELIVERED' })
    if (o.status === 'DELIVERED') return this.unchanged(res)
    if (o.status !== 'CONFIRMED') return this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot deliver an order that is ${o.status}.`)
    // CONTRACT §15.1, §15.7: nothing owed, and money kept (PAID or PARTIALLY_REFUNDED).
    const due = balanceDueOf(o)
    const paymentStatus = paymentStatusOf(o)
    if (owedOf(o) > 0) {
      this.refused(res, url, 'INVALID_ORDER_STATUS',
        `Cannot deliver an order that is CONFIRMED: its balanceDue is ${due} (paymentStatus ${paymentStatus}); delivery needs it paid in full.`)
      this.outcome += ' (balance due)'
      return
    }
    if (paymentStatus !== 'PAID' && paymentStatus !== 'PARTIALLY_REFUNDED') {
      this.refused(res, url, 'INVALID_ORDER_STATUS',
        `Cannot deliver an order that is CONFIRMED: its paymentStatus is ${paymentStatus}; delivery needs PAID or PARTIALLY_REFUNDED.`)
      this.outcome += ` (${paymentStatus})`
      return
    }
    assert.equal((expectStatus(res, 200, this.toString()) as OrderDetail).status, 'DELIVERED')
    for (const line of o.lines) line.shipped = line.quantity
    o.status = 'DELIVERED'
    o.events.push(...ONE_STEP_DELIVER_EVENTS)
    o.version++
  }
}

/** PATCH /orders/{id}/delete by the owner or the admin: soft delete, cancelling an open order first. */
export class Delete extends OrderCommand {
  constructor (at: OrderRef, readonly byAdmin: boolean) { super(at) }
  protected succeedsOn (o: ModelOrder): boolean { return o.status !== 'DELETED' }
  toString (): string { return this.label(this.byAdmin ? 'by admin' : 'by owner') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/orders/${o.id}/delete`
    const res = await send(r, this.byAdmin ? r.admin : owner(r, o), 'PATCH', url)
    if (o.status === 'DELETED') {
      return this.byAdmin ? this.unchanged(res) : this.refused(res, url, 'ORDER_NOT_FOUND', `Order ${o.id} does not exist.`)
    }
    expectStatus(res, 200, this.toString())
    if (o.status === 'PLACED' || o.status === 'CONFIRMED') return endOpenOrder(o, 'DELETED', 'order.deleted')
    o.status = 'DELETED'
    o.events.push('order.deleted')
    o.version++
  }
}

/** Three in four draws aim at an order where the command should succeed. */
const ref: fc.Arbitrary<OrderRef> = fc.record({ n: fc.nat({ max: 31 }), aimed: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) })
const member = fc.nat({ max: 1 })
const byAdmin = fc.boolean()

/** The commands to draw from; one repeated is drawn more often. */
export const COMMANDS: Array<fc.Arbitrary<BooksCommand>> = [
  ...Array(2).fill(
    fc.tuple(
      member,
      fc.uniqueArray(fc.record({ product: fc.nat({ max: 2 }), quantity: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3, selector: i => i.product }),
      byAdmin
    ).map(([who, items, admin]) => new PlaceOrder(who, items, admin))),
  ...Array(2).fill(ref.map(at => new Confirm(at))),
  // Approved three times in four: declines are common enough to meet every state.
  ...Array(2).fill(fc.tuple(ref, fc.oneof(fc.constant(true), fc.constant(true), fc.constant(true), fc.constant(false))).map(([at, approved]) => new Pay(at, approved))),
  ...Array(2).fill(fc.tuple(ref, fc.oneof(
    fc.constant<RefundSize>({ kind: 'full' }),
    fc.integer({ min: 1, max: 999 }).map((permille): RefundSize => ({ kind: 'part', permille })),
    fc.integer({ min: 1, max: 500 }).map((extra): RefundSize => ({ kind: 'over', extra }))
  )).map(([at, size]) => new GoodwillRefund(at, size))),
  fc.tuple(ref, byAdmin).map(([at, admin]) => new Cancel(at, admin)),
  ...Array(2).fill(ref.map(at => new Deliver(at))),
  fc.tuple(ref, byAdmin).map(([at, admin]) => new Delete(at, admin)),
]
