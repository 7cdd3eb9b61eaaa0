import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import type { OrderDetail } from '../../src/orders/schemas.js'
import { assertError, type Member } from '../helper.js'
import type { Fulfillment } from '../../src/fulfillments/schemas.js'
import type { OrderEdit } from '../../src/edits/schemas.js'
import type { Return } from '../../src/returns/schemas.js'
import {
  checkBooks, creditedOf, deliveryBlockerOf, expectStatus, fulfillmentStatusOf, hasShipped, holdsStock, inOpenReturnsOf, isOpen, isRefundable, leftOf,
  paymentStatusOf, pick, refundAcross, refundableOf, returnableOf, settlePayments, stockOf, sum, totalOf, unpaidHeldBy,
  type Model, type ModelFulfilment, type ModelLine, type ModelOrder, type ModelPayment, type ModelReturn, type Real,
} from './books-model.js'

/**
 * The commands of the model-based test. Each is one small class: `check` says from the model alone
 * whether the command can be sent now (usually: is there an order it can name); `apply` sends the
 * request, asserts the status and the body the model predicts (a refusal with its whole error), and
 * updates the model. `run` then checks the books through the API (checkBooks).
 *
 * Adding a command: write a class that extends BooksCommand, and add its arbitrary to COMMANDS
 * (repeat it there to make it more frequent). The commands: place, confirm, pay (approved or
 * declined), goodwill refund, cancel, the one-step deliver, delete (CONTRACT §3, §6, §15.1); edit
 * with and without a preview (§15.2); ship, deliver a shipment, cancel a shipment (§15.3); ask for a
 * return, cancel it, reject it, receive it with or without restock and with the default or a given
 * refund (§15.4).
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

  /** Cancel and delete of an order whose goods left (CONTRACT §15.3). */
  protected refusedShipped (res: LightMyRequestResponse, url: string, o: ModelOrder, verb: string): void {
    this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot ${verb} an order that is CONFIRMED with goods shipped (fulfillmentStatus ${fulfillmentStatusOf(o)}); ` +
      'cancel its shipments first, or take goods back through a return.')
    this.outcome += ' (goods shipped)'
  }

  protected label (...args: string[]): string {
    return `${this.constructor.name}(#${this.at.n}${this.at.aimed ? ' aimed' : ''}${args.map(a => `, ${a}`).join('')})`
  }
}

const owner = (r: Real, o: ModelOrder): Member => r.members[o.owner]!
const send = (r: Real, who: Member, method: 'POST' | 'PATCH', url: string, payload?: object, headers: Record<string, string> = {}) =>
  r.api.inject({ method, url, headers: { ...who.headers, ...headers }, ...(payload === undefined ? {} : { payload }) })
const notFound = (o: ModelOrder) => ['ORDER_NOT_FOUND', `Order ${o.id} does not exist.`] as const
/** The ETag a verb that changed the order answers with. */
const assertEtag = (res: LightMyRequestResponse, o: ModelOrder, what: string) => assert.equal(res.headers.etag, `"${o.version}"`, `${what}: the order's ETag`)

/** The most orders one run places (each step reads every one of them back). */
export const MAX_ORDERS = 3

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
      fulfilments: [],
      returns: [],
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
  protected succeedsOn (o: ModelOrder): boolean { return holdsStock(o) && !hasShipped(o) }
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
    if (hasShipped(o)) return this.refusedShipped(res, url, o, 'cancel')
    expectStatus(res, 200, this.toString())
    endOpenOrder(o, 'CANCELLED', 'order.cancelled')
  }
}

/** §3's one-step deliver by the admin (PATCH /admin/orders/{id} {status: DELIVERED}): ships every line and delivers it. */
export class Deliver extends OrderCommand {
  protected succeedsOn (o: ModelOrder): boolean { return o.status === 'CONFIRMED' && deliveryBlockerOf(o) === undefined }
  toString (): string { return this.label() }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/admin/orders/${o.id}`
    const res = await send(r, r.admin, 'PATCH', url, { status: 'DELIVERED' })
    if (o.status === 'DELIVERED') return this.unchanged(res)
    if (o.status !== 'CONFIRMED') return this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot deliver an order that is ${o.status}.`)
    // CONTRACT §15.1, §15.7: nothing owed, and money kept (PAID or PARTIALLY_REFUNDED).
    const blocker = deliveryBlockerOf(o)
    if (blocker !== undefined) {
      this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot deliver an order that is CONFIRMED: ${blocker}.`)
      this.outcome += blocker.startsWith('its balanceDue') ? ' (balance due)' : ` (${paymentStatusOf(o)})`
      return
    }
    const answer = expectStatus(res, 200, this.toString()) as OrderDetail
    assert.equal(answer.status, 'DELIVERED')
    // CONTRACT §15.3, §15.7: what is left ships as one shipment (fulfillment.created), then every
    // SHIPPED shipment is delivered, oldest first (fulfillment.delivered each), then order.delivered.
    const rest = o.lines.filter(l => l.shipped < l.quantity).map(l => ({ product: l.product, quantity: l.quantity - l.shipped }))
    if (rest.length > 0) {
      const created = answer.fulfillments.filter(f => !o.fulfilments.some(known => known.id === f.fulfillmentId))
      assert.equal(created.length, 1, `${this}: one new shipment`)
      o.fulfilments.push({ id: created[0]!.fulfillmentId, status: 'SHIPPED', items: rest })
      o.events.push('fulfillment.created')
      for (const l of o.lines) l.shipped = l.quantity
      this.outcome = o.fulfilments.length > 1 ? 'done, ships the rest' : 'done, ships all'
    } else {
      this.outcome = 'done, all shipped before'
    }
    for (const f of o.fulfilments.filter(f => f.status === 'SHIPPED')) {
      f.status = 'DELIVERED'
      o.events.push('fulfillment.delivered')
    }
    o.status = 'DELIVERED'
    o.events.push('order.delivered')
    o.version++
  }
}

/** PATCH /orders/{id}/delete by the owner or the admin: soft delete, cancelling an open order first. */
export class Delete extends OrderCommand {
  constructor (at: OrderRef, readonly byAdmin: boolean) { super(at) }
  protected succeedsOn (o: ModelOrder): boolean { return o.status !== 'DELETED' && !hasShipped(o) }
  toString (): string { return this.label(this.byAdmin ? 'by admin' : 'by owner') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/orders/${o.id}/delete`
    const res = await send(r, this.byAdmin ? r.admin : owner(r, o), 'PATCH', url)
    if (o.status === 'DELETED') {
      return this.byAdmin ? this.unchanged(res) : this.refused(res, url, 'ORDER_NOT_FOUND', `Order ${o.id} does not exist.`)
    }
    if (hasShipped(o)) return this.refusedShipped(res, url, o, 'delete')
    expectStatus(res, 200, this.toString())
    if (o.status === 'PLACED' || o.status === 'CONFIRMED') return endOpenOrder(o, 'DELETED', 'order.deleted')
    o.status = 'DELETED'
    o.events.push('order.deleted')
    o.version++
  }
}

// ---- Edits (CONTRACT §15.2, §15.7; docs/decisions.md "Editing an order") ----

/** One change of an edit: product `product`'s line goes up or down by `delta` (not below 0; a product not on the order is added). */
export interface EditChange { product: number, delta: number }

/** How the service settles an edit's difference (src/edits/service.ts planSettlement, as the model predicts it). */
interface Plan { kind: 'NONE' | 'PAYMENT_ADJUSTED' | 'REFUND' | 'PAYMENT', amount: number, adjust?: { payment: ModelPayment, amount: number | null }, refund?: number, open?: number }

function planSettlement (o: ModelOrder, before: number, after: number): Plan {
  const difference = after - before
  if (o.status !== 'CONFIRMED' || difference === 0) return { kind: 'NONE', amount: 0 }
  const open = o.payments.findLast(isOpen)
  const captured = o.payments.some(p => isRefundable(p) || p.status === 'REFUNDED')
  if (!captured || (open && open.amount + difference > 0)) {
    assert.ok(open, `order ${o.id}: CONFIRMED with nothing captured and no open payment`)
    return { kind: 'PAYMENT_ADJUSTED', amount: Math.abs(difference), adjust: { payment: open, amount: open.amount + difference } }
  }
  if (difference > 0) return { kind: 'PAYMENT', amount: difference, open: difference }
  if (!open) return { kind: 'REFUND', amount: -difference, refund: -difference }
  const rest = -difference - open.amount
  if (rest === 0) return { kind: 'PAYMENT_ADJUSTED', amount: open.amount, adjust: { payment: open, amount: null } }
  return { kind: 'REFUND', amount: rest, adjust: { payment: open, amount: null }, refund: rest }
}

/**
 * POST /orders/{id}/edits with the order's ETag in If-Match, by the owner or an admin, as a preview
 * (`?dryRun=true`: 200, nothing changes) or applied (201): lines up, down, added, removed; now and
 * then a stale If-Match (412).
 */
export class EditOrder extends OrderCommand {
  constructor (at: OrderRef, readonly changes: EditChange[], readonly byAdmin: boolean, readonly dryRun: boolean, readonly stale: boolean) { super(at) }
  protected succeedsOn (o: ModelOrder): boolean { return o.status === 'PLACED' || (o.status === 'CONFIRMED' && this.byAdmin) }
  toString (): string {
    return this.label(`[${this.changes.map(c => `p${c.product}${c.delta >= 0 ? '+' : ''}${c.delta}`).join(', ')}]`,
      this.byAdmin ? 'by admin' : 'by owner', ...(this.dryRun ? ['dryRun'] : []), ...(this.stale ? ['stale If-Match'] : []))
  }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const path = `/api/v1/orders/${o.id}/edits`
    // The request: each change's new quantity, from the line as the model has it now.
    const request = this.changes.map(c => {
      const line = o.lines.find(l => l.product === c.product)
      return { product: c.product, line, quantity: Math.max(0, (line?.quantity ?? 0) + c.delta) }
    })
    const res = await send(r, this.byAdmin ? r.admin : owner(r, o), 'POST', `${path}${this.dryRun ? '?dryRun=true' : ''}`,
      { changes: request.map(c => ({ productId: r.productIds[c.product]!, quantity: c.quantity })) },
      { 'if-match': `"${this.stale ? o.version - 1 : o.version}"` })

    if (o.status === 'DELETED' && !this.byAdmin) return this.refused(res, path, ...notFound(o))
    if (this.stale) return this.refused(res, path, 'PRECONDITION_FAILED', `If-Match does not match the order's current ETag "${o.version}"; fetch it again.`)
    if (o.status === 'CONFIRMED' && !this.byAdmin) {
      return this.refused(res, path, 'INVALID_ORDER_STATUS', 'Cannot edit an order that is CONFIRMED: after confirmation only staff edit an order.')
    }
    if (o.status !== 'PLACED' && o.status !== 'CONFIRMED') return this.refused(res, path, 'INVALID_ORDER_STATUS', `Cannot edit an order that is ${o.status}.`)

    const invalid: Array<{ field: string, message: string }> = []
    const changed: Array<{ product: number, before: number, after: number, unitPrice: number }> = []
    request.forEach((c, i) => {
      if (c.line) {
        if (c.quantity < c.line.shipped) invalid.push({ field: `changes[${i}].quantity`, message: `must be at least ${c.line.shipped}, the quantity already shipped` })
        else if (c.quantity !== c.line.quantity) changed.push({ product: c.product, before: c.line.quantity, after: c.quantity, unitPrice: c.line.unitPrice })
      } else if (c.quantity > 0) {
        changed.push({ product: c.product, before: 0, after: c.quantity, unitPrice: m.products[c.product]!.price })
      }
    })
    const invalidChanges = (message: string) => this.refused(res, path, 'VALIDATION_FAILED', 'The request has invalid parameters.', [{ field: 'changes', message }])
    if (invalid.length > 0) {
      this.refused(res, path, 'VALIDATION_FAILED', 'The request has invalid parameters.', invalid)
      this.outcome += ' (below shipped)'
      return
    }
    if (changed.length === 0) {
      invalidChanges('change nothing: every quantity is already as asked and the shipping address is unchanged')
      this.outcome += ' (no change)'
      return
    }
    const after = (l: ModelLine) => changed.find(c => c.product === l.product)?.after ?? l.quantity
    const lines: ModelLine[] = [
      ...o.lines.filter(l => after(l) > 0).map(l => ({ ...l, quantity: after(l) })),
      ...changed.filter(c => c.before === 0).map(c => ({ product: c.product, quantity: c.after, unitPrice: c.unitPrice, shipped: 0, returned: 0, restocked: 0 })),
    ]
    if (lines.length === 0) {
      invalidChanges('would leave the order without lines; cancel the order instead')
      this.outcome += ' (no lines left)'
      return
    }
    const totalBefore = totalOf(o)
    const totalAfter = sum(lines.map(l => l.quantity * l.unitPrice))
    const credited = creditedOf(o)
    if (o.status === 'CONFIRMED' && totalAfter < credited) {
      invalidChanges(`would make the total ${totalAfter}, less than the ${credited} already credited to the customer`)
      this.outcome += ' (below credited)'
      return
    }
    const short = changed.filter(c => c.after - c.before > stockOf(m, c.product))
    if (short.length > 0) {
      return this.refused(res, path, 'INSUFFICIENT_STOCK', `Not enough stock, nothing was changed (${short.map(c =>
        `product ${r.productIds[c.product]}: ${c.after - c.before} more requested, ${stockOf(m, c.product)} in stock`).join('; ')}).`)
    }

    const plan = planSettlement(o, totalBefore, totalAfter)
    const answer = expectStatus(res, this.dryRun ? 200 : 201, this.toString()) as OrderEdit
    const direction = totalAfter > totalBefore ? 'up' : totalAfter < totalBefore ? 'down' : 'same total'
    const shape = [changed.some(c => c.before === 0) ? ', adds a line' : '', changed.some(c => c.after === 0) ? ', removes a line' : ''].join('')
    this.outcome = `${this.dryRun ? 'preview' : 'done'} ${direction}, ${plan.kind}${shape}`
    // The payment the edit names: adjusted, refunded from (the newest touched), or opened (a preview has no id for a payment yet to open).
    const newestRefundable = o.payments.findLast(isRefundable)?.id ?? null
    const expected = {
      orderId: o.id,
      fromVersion: o.version,
      toVersion: o.version + 1,
      changes: changed.map(c => ({
        productId: r.productIds[c.product]!, productName: `Model product ${c.product}`, quantityBefore: c.before, quantityAfter: c.after, unitPrice: c.unitPrice,
      })),
      shippingAddressChanged: false,
      totalBefore,
      totalAfter,
      settlement: {
        kind: plan.kind,
        amount: plan.amount,
        paymentId: plan.refund ? newestRefundable : plan.adjust?.payment.id ?? (plan.open && !this.dryRun ? answer.settlement.paymentId : null),
      },
      actorId: (this.byAdmin ? r.admin : owner(r, o)).id,
      actorRole: this.byAdmin ? 'ADMIN' : 'USER',
    }
    const { editId, createdAt: _at, ...rest } = answer
    assert.deepEqual(rest, expected, `${this}: the edit`)
    assert.equal(res.headers.etag, `"${this.dryRun ? o.version : o.version + 1}"`, `${this}: the order's ETag`)
    if (this.dryRun) {
      assert.equal(editId, null, `${this}: a preview has no id`)
      return
    }
    assert.ok(typeof editId === 'number', `${this}: an edit id`)

    o.lines = lines
    if (plan.adjust) {
      const { payment, amount } = plan.adjust
      if (amount === null) {
        payment.status = 'CANCELLED'
        o.events.push('payment.cancelled')
      } else {
        payment.amount = amount
        o.events.push('payment.updated')
      }
    }
    if (plan.refund) refundAcross(o, plan.refund, 'EDIT')
    if (plan.open) {
      assert.ok(answer.settlement.paymentId !== null && !o.payments.some(p => p.id === answer.settlement.paymentId), `${this}: a new payment`)
      o.payments.push({ id: answer.settlement.paymentId, amount: plan.open, status: 'PENDING', refunds: [] })
      o.events.push('payment.created')
    }
    o.events.push('order.edited')
    o.version++
  }
}

// ---- Shipments (CONTRACT §15.3, §15.7) ----

/** What a command asks for line by line: the `line`-th (modulo) line or product, and a quantity. */
export interface LinePick { line: number, quantity: number }

/**
 * Turns picks into request lines. Aimed: among the lines with something left (`left`), each at most
 * that much, so the request fits. Not aimed: any of the three products, as drawn (it may not be a
 * line of the order, or ask for more than is left). Each product once.
 */
function choose (o: ModelOrder, picks: LinePick[], aimed: boolean, left: (l: ModelLine) => number): Array<{ product: number, quantity: number }> {
  const open = o.lines.filter(l => left(l) > 0)
  const chosen = picks.map(p => {
    if (!aimed || open.length === 0) return { product: p.line % 3, quantity: p.quantity }
    const line = open[p.line % open.length]!
    return { product: line.product, quantity: Math.min(p.quantity, left(line)) }
  })
  return chosen.filter((c, i) => chosen.findIndex(d => d.product === c.product) === i)
}

const shippable = (l: ModelLine) => l.quantity - l.shipped
const linePosition = (o: ModelOrder, product: number) => o.lines.findIndex(l => l.product === product)

/** POST /admin/orders/{id}/fulfillments: everything left (no items), or some lines, with or without tracking. */
export class Fulfil extends OrderCommand {
  constructor (at: OrderRef, readonly picks: LinePick[] | 'all', readonly tracking: boolean) { super(at) }
  protected succeedsOn (o: ModelOrder): boolean {
    return o.status === 'CONFIRMED' && deliveryBlockerOf(o, 'shipping') === undefined && o.lines.some(l => shippable(l) > 0)
  }

  toString (): string {
    return this.label(this.picks === 'all' ? 'all' : `[${this.picks.map(p => `#${p.line}×${p.quantity}`).join(', ')}]`, ...(this.tracking ? ['tracked'] : []))
  }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/admin/orders/${o.id}/fulfillments`
    const items = this.picks === 'all' ? undefined : choose(o, this.picks, this.at.aimed, shippable)
    const tracking = this.tracking
      ? { carrier: 'UPS', trackingNumber: `1Z${o.id}X${o.fulfilments.length}`, trackingUrl: `https://track.example.com/${o.id}/${o.fulfilments.length}` }
      : {}
    const res = await send(r, r.admin, 'POST', url, {
      ...(items ? { items: items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity })) } : {}), ...tracking,
    })
    if (o.status === 'DELETED') return this.refused(res, url, 'INVALID_ORDER_STATUS', 'Cannot ship an order that is DELETED.')
    if (o.status !== 'CONFIRMED') return this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot ship an order that is ${o.status}; only CONFIRMED orders ship.`)
    const blocker = deliveryBlockerOf(o, 'shipping')
    if (blocker !== undefined) {
      this.refused(res, url, 'INVALID_ORDER_STATUS', `Cannot ship an order that is CONFIRMED: ${blocker}.`)
      this.outcome += blocker.startsWith('its balanceDue') ? ' (balance due)' : ` (${paymentStatusOf(o)})`
      return
    }
    let shipped: Array<{ product: number, quantity: number }>
    if (items === undefined) {
      shipped = o.lines.filter(l => shippable(l) > 0).map(l => ({ product: l.product, quantity: shippable(l) }))
      if (shipped.length === 0) {
        this.refused(res, url, 'INVALID_ORDER_STATUS', 'Cannot ship: every line of the order has shipped already.')
        this.outcome += ' (all shipped)'
        return
      }
    } else {
      const invalid = items.flatMap((item, i) => {
        const line = o.lines.find(l => l.product === item.product)
        if (!line) return [{ field: `items[${i}].productId`, message: 'is not a line of the order' }]
        return item.quantity > shippable(line) ? [{ field: `items[${i}].quantity`, message: `must not exceed the ${shippable(line)} left to ship` }] : []
      })
      if (invalid.length > 0) return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', invalid)
      shipped = items.toSorted((a, b) => linePosition(o, a.product) - linePosition(o, b.product))
    }
    const answer = expectStatus(res, 201, this.toString()) as Fulfillment
    const { fulfillmentId, shippedAt: _s, createdAt: _c, ...rest } = answer
    assert.deepEqual(rest, {
      orderId: o.id,
      status: 'SHIPPED',
      items: shipped.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity })),
      carrier: tracking.carrier ?? null,
      trackingNumber: tracking.trackingNumber ?? null,
      trackingUrl: tracking.trackingUrl ?? null,
      deliveredAt: null,
    }, `${this}: the shipment`)
    o.fulfilments.push({ id: fulfillmentId, status: 'SHIPPED', items: shipped })
    for (const item of shipped) o.lines.find(l => l.product === item.product)!.shipped += item.quantity
    o.events.push('fulfillment.created')
    o.version++
    this.outcome = fulfillmentStatusOf(o) === 'FULFILLED' ? 'done, ships the rest' : 'done, ships a part'
  }
}

/** A command about one shipment: the `which`-th (modulo) of the order's shipments, or of those in `aimedAt` when aimed. */
abstract class FulfilmentCommand extends OrderCommand {
  constructor (at: OrderRef, readonly which: number) { super(at) }
  protected abstract aimedAt (f: ModelFulfilment): boolean
  protected override names (o: ModelOrder): boolean { return o.fulfilments.length > 0 }
  protected succeedsOn (o: ModelOrder): boolean { return o.status !== 'DELETED' && o.fulfilments.some(f => this.aimedAt(f)) }
  protected fulfilment (o: ModelOrder): ModelFulfilment {
    const among = this.at.aimed ? o.fulfilments.filter(f => this.aimedAt(f)) : o.fulfilments
    return among[this.which % among.length]!
  }

  toString (): string { return this.label(`shipment #${this.which}`) }
}

/** PATCH /admin/orders/{id}/fulfillments/{fid}/deliver: the order is DELIVERED with its last shipment when it owes nothing. */
export class DeliverFulfilment extends FulfilmentCommand {
  protected aimedAt (f: ModelFulfilment): boolean { return f.status === 'SHIPPED' }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const f = this.fulfilment(o)
    const url = `/api/v1/admin/orders/${o.id}/fulfillments/${f.id}/deliver`
    const res = await send(r, r.admin, 'PATCH', url)
    if (o.status === 'DELETED') return this.refused(res, url, 'INVALID_ORDER_STATUS', 'Cannot deliver a fulfilment of an order that is DELETED.')
    if (f.status === 'DELIVERED') return this.unchanged(res)
    if (f.status === 'CANCELLED') return this.refused(res, url, 'INVALID_FULFILLMENT_STATUS', `Cannot deliver fulfilment ${f.id}: it is CANCELLED.`)
    const answer = expectStatus(res, 200, this.toString()) as Fulfillment
    assert.deepEqual([answer.fulfillmentId, answer.status], [f.id, 'DELIVERED'], `${this}: the shipment`)
    f.status = 'DELIVERED'
    o.events.push('fulfillment.delivered')
    const last = !o.fulfilments.some(g => g.status === 'SHIPPED')
    if (o.status === 'CONFIRMED' && fulfillmentStatusOf(o) === 'FULFILLED' && last && deliveryBlockerOf(o) === undefined) {
      o.status = 'DELIVERED'
      o.events.push('order.delivered')
      this.outcome = 'done, order DELIVERED'
    } else {
      this.outcome = fulfillmentStatusOf(o) === 'FULFILLED' && last ? 'done, all shipped and delivered but order stays CONFIRMED' : 'done'
    }
    o.version++
    assertEtag(res, o, this.toString())
  }
}

/** PATCH /admin/orders/{id}/fulfillments/{fid}/cancel: a SHIPPED shipment's quantities are to ship again. */
export class CancelFulfilment extends FulfilmentCommand {
  protected aimedAt (f: ModelFulfilment): boolean { return f.status === 'SHIPPED' }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const f = this.fulfilment(o)
    const url = `/api/v1/admin/orders/${o.id}/fulfillments/${f.id}/cancel`
    const res = await send(r, r.admin, 'PATCH', url)
    if (o.status === 'DELETED') return this.refused(res, url, 'INVALID_ORDER_STATUS', 'Cannot cancel a fulfilment of an order that is DELETED.')
    if (f.status === 'CANCELLED') return this.unchanged(res)
    if (f.status === 'DELIVERED') {
      return this.refused(res, url, 'INVALID_FULFILLMENT_STATUS', `Cannot cancel fulfilment ${f.id}: it is DELIVERED; goods that arrived come back through a return.`)
    }
    const answer = expectStatus(res, 200, this.toString()) as Fulfillment
    assert.deepEqual([answer.fulfillmentId, answer.status], [f.id, 'CANCELLED'], `${this}: the shipment`)
    f.status = 'CANCELLED'
    for (const item of f.items) o.lines.find(l => l.product === item.product)!.shipped -= item.quantity
    o.events.push('fulfillment.cancelled')
    o.version++
    assertEtag(res, o, this.toString())
  }
}

// ---- Returns (CONTRACT §15.4, §15.7) ----

/** POST /orders/{id}/returns by the owner or an admin: some delivered lines go back. */
export class RequestReturn extends OrderCommand {
  constructor (at: OrderRef, readonly picks: LinePick[], readonly byAdmin: boolean) { super(at) }
  protected override names (o: ModelOrder): boolean { return o.fulfilments.length > 0 }
  protected succeedsOn (o: ModelOrder): boolean { return o.status !== 'DELETED' && o.lines.some(l => returnableOf(o, l) > 0) }
  toString (): string { return this.label(`[${this.picks.map(p => `#${p.line}×${p.quantity}`).join(', ')}]`, this.byAdmin ? 'by admin' : 'by owner') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const url = `/api/v1/orders/${o.id}/returns`
    const items = choose(o, this.picks, this.at.aimed, l => returnableOf(o, l))
    const res = await send(r, this.byAdmin ? r.admin : owner(r, o), 'POST', url,
      { items: items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity })) })
    if (o.status === 'DELETED') {
      return this.byAdmin ? this.refused(res, url, 'INVALID_ORDER_STATUS', 'A DELETED order takes no return.') : this.refused(res, url, ...notFound(o))
    }
    const foreign = items.flatMap((item, i) => o.lines.some(l => l.product === item.product) ? [] : [{ field: `items[${i}].productId`, message: 'is not a line of this order' }])
    if (foreign.length > 0) return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', foreign)
    const over = items.flatMap((item, i) => {
      const line = o.lines.find(l => l.product === item.product)!
      const left = returnableOf(o, line)
      return item.quantity <= left
        ? []
        : [{
            field: `items[${i}].quantity`,
            message: `must be at most ${left}: ${left + line.returned + inOpenReturnsOf(o, line.product)} delivered, ${line.returned} returned, ${inOpenReturnsOf(o, line.product)} in open returns`,
          }]
    })
    if (over.length > 0) return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', over)
    const answer = expectStatus(res, 201, this.toString()) as Return
    const ret: ModelReturn = { id: answer.returnId, status: 'REQUESTED', items: items.map(i => ({ ...i, received: null, restock: null })), refundAmount: null }
    assert.deepEqual({ orderId: answer.orderId, status: answer.status, items: answer.items, refundAmount: answer.refundAmount }, {
      orderId: o.id,
      status: 'REQUESTED',
      items: items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity, reason: null, receivedQuantity: null, restock: null })),
      refundAmount: null,
    }, `${this}: the return`)
    o.returns.push(ret)
    o.events.push('return.requested')
    o.version++
    assertEtag(res, o, this.toString())
  }
}

/** A command about one return: the `which`-th (modulo) of the order's returns, or of its REQUESTED ones when aimed. */
abstract class ReturnCommand extends OrderCommand {
  constructor (at: OrderRef, readonly which: number) { super(at) }
  protected override names (o: ModelOrder): boolean { return o.returns.length > 0 }
  protected succeedsOn (o: ModelOrder): boolean { return o.returns.some(ret => ret.status === 'REQUESTED') }
  protected theReturn (o: ModelOrder): ModelReturn {
    const among = this.at.aimed ? o.returns.filter(ret => ret.status === 'REQUESTED') : o.returns
    return among[this.which % among.length]!
  }

  /** The answer of a step that moved the return: the return with its new status, and the order's new ETag. */
  protected moved (res: LightMyRequestResponse, o: ModelOrder, ret: ModelReturn, event: string): void {
    const answer = expectStatus(res, 200, this.toString()) as Return
    assert.deepEqual([answer.returnId, answer.status], [ret.id, ret.status], `${this}: the return`)
    o.events.push(event)
    o.version++
    assertEtag(res, o, this.toString())
  }

  /** A step from anything but REQUESTED to another status. */
  protected refusedStatus (res: LightMyRequestResponse, url: string, ret: ModelReturn, verb: string, target: string): void {
    this.refused(res, url, 'INVALID_RETURN_STATUS', `Cannot ${verb} a return that is ${ret.status}; only a REQUESTED return can be ${target}.`)
    this.outcome += ` (${ret.status})`
  }
}

/** PATCH /orders/{id}/returns/{rid}/cancel by the owner or an admin. */
export class CancelReturn extends ReturnCommand {
  constructor (at: OrderRef, which: number, readonly byAdmin: boolean) { super(at, which) }
  protected override succeedsOn (o: ModelOrder): boolean { return super.succeedsOn(o) && (this.byAdmin || o.status !== 'DELETED') }
  toString (): string { return this.label(`return #${this.which}`, this.byAdmin ? 'by admin' : 'by owner') }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const ret = this.theReturn(o)
    const url = `/api/v1/orders/${o.id}/returns/${ret.id}/cancel`
    const res = await send(r, this.byAdmin ? r.admin : owner(r, o), 'PATCH', url)
    if (o.status === 'DELETED' && !this.byAdmin) return this.refused(res, url, ...notFound(o))
    if (ret.status === 'CANCELLED') return this.unchanged(res)
    if (ret.status !== 'REQUESTED') return this.refusedStatus(res, url, ret, 'cancel', 'cancelled')
    ret.status = 'CANCELLED'
    this.moved(res, o, ret, 'return.cancelled')
  }
}

/** PATCH /admin/returns/{rid}/reject, with or without a reason. */
export class RejectReturn extends ReturnCommand {
  constructor (at: OrderRef, which: number, readonly withReason: boolean) { super(at, which) }
  toString (): string { return this.label(`return #${this.which}`, ...(this.withReason ? ['with a reason'] : [])) }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const ret = this.theReturn(o)
    const url = `/api/v1/admin/returns/${ret.id}/reject`
    const res = await send(r, r.admin, 'PATCH', url, this.withReason ? { reason: 'The seal was broken.' } : undefined)
    if (ret.status === 'REJECTED') return this.unchanged(res)
    if (ret.status !== 'REQUESTED') return this.refusedStatus(res, url, ret, 'reject', 'rejected')
    ret.status = 'REJECTED'
    this.moved(res, o, ret, 'return.rejected')
  }
}

/** How much of a return's line came back: all of it, half (rounded down), none (left out), or one more than asked (refused). */
export type Received = 'all' | 'half' | 'none' | 'over'
/** The refund of a receipt: the default (received × unitPrice, capped), a share of what is refundable, 0, or more than is refundable (refused). */
export type ReturnRefund = { kind: 'default' } | { kind: 'share', permille: number } | { kind: 'zero' } | { kind: 'over', extra: number }

/** PATCH /admin/returns/{rid}/receive: what came back per line, restocked or not, and the refund (reason RETURN). */
export class ReceiveReturn extends ReturnCommand {
  constructor (at: OrderRef, which: number, readonly lines: Array<{ received: Received, restock: boolean }>, readonly refund: ReturnRefund) { super(at, which) }
  toString (): string {
    const refund = this.refund.kind === 'share' ? `refund ${this.refund.permille}‰` : this.refund.kind === 'over' ? `refund refundable+${this.refund.extra}` : `refund ${this.refund.kind}`
    return this.label(`return #${this.which}`, `[${this.lines.map(l => `${l.received}${l.restock ? ' restock' : ''}`).join(', ')}]`, refund)
  }

  protected async apply (m: Model, r: Real): Promise<void> {
    const o = this.order(m)!
    const ret = this.theReturn(o)
    const url = `/api/v1/admin/returns/${ret.id}/receive`
    // Line i of the return takes the i-th (modulo) of the drawn receipts; a return left with no line sends its first with 0.
    let items = ret.items.flatMap((item, i) => {
      const { received, restock } = this.lines[i % this.lines.length]!
      if (received === 'none') return []
      const quantity = received === 'all' ? item.quantity : received === 'half' ? Math.floor(item.quantity / 2) : item.quantity + 1
      return [{ product: item.product, quantity, restock }]
    })
    if (items.length === 0) items = [{ product: ret.items[0]!.product, quantity: 0, restock: this.lines[0]!.restock }]
    const refundable = refundableOf(o)
    const amount = this.refund.kind === 'default'
      ? undefined
      : this.refund.kind === 'zero' ? 0 : this.refund.kind === 'share' ? Math.floor(refundable * this.refund.permille / 1000) : refundable + this.refund.extra
    const res = await send(r, r.admin, 'PATCH', url, {
      items: items.map(i => ({ productId: r.productIds[i.product]!, quantity: i.quantity, restock: i.restock })),
      ...(amount === undefined ? {} : { refundAmount: amount }),
    })
    if (ret.status === 'RECEIVED') return this.unchanged(res)
    if (ret.status !== 'REQUESTED') return this.refusedStatus(res, url, ret, 'receive', 'received')
    const over = items.flatMap((item, i) => {
      const asked = ret.items.find(x => x.product === item.product)!.quantity
      return item.quantity > asked ? [{ field: `items[${i}].quantity`, message: `must be at most ${asked}, the quantity the return asked for` }] : []
    })
    if (over.length > 0) return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', over)
    if (amount !== undefined && amount > refundable) {
      return this.refused(res, url, 'VALIDATION_FAILED', 'The request has invalid parameters.', [{ field: 'refundAmount', message: `must not exceed the ${refundable} still refundable` }])
    }
    const worth = sum(items.map(i => i.quantity * o.lines.find(l => l.product === i.product)!.unitPrice))
    const refund = amount ?? Math.min(worth, refundable)
    const restocked = sum(items.filter(i => i.restock).map(i => i.quantity))
    const received = sum(items.map(i => i.quantity))
    this.outcome = `done, ${restocked === 0 ? 'no restock' : restocked === received ? 'all restocked' : 'partly restocked'}, ` +
      `${amount === undefined ? 'default refund' : 'refundAmount given'}${refund === 0 ? ' (0)' : refund < worth ? ' (below worth)' : ''}`

    for (const item of ret.items) {
      const got = items.find(i => i.product === item.product)
      item.received = got?.quantity ?? 0
      item.restock = got?.restock ?? false
      const line = o.lines.find(l => l.product === item.product)!
      line.returned += item.received
      if (item.restock) line.restocked += item.received
    }
    ret.status = 'RECEIVED'
    ret.refundAmount = refund
    refundAcross(o, refund, 'RETURN')
    this.moved(res, o, ret, 'return.received')
  }
}

/** Three in four draws aim at an order where the command should succeed. */
const ref: fc.Arbitrary<OrderRef> = fc.record({ n: fc.nat({ max: 31 }), aimed: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) })
const member = fc.nat({ max: 1 })
/** One to three lines with a quantity each (shipments, returns). */
const picks = fc.array(fc.record({ line: fc.nat({ max: 5 }), quantity: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3 })
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
  ...Array(3).fill(fc.tuple(ref, fc.oneof(fc.constant(true), fc.constant(true), fc.constant(true), fc.constant(false))).map(([at, approved]) => new Pay(at, approved))),
  fc.tuple(ref, fc.oneof(
    fc.constant<RefundSize>({ kind: 'full' }),
    fc.integer({ min: 1, max: 999 }).map((permille): RefundSize => ({ kind: 'part', permille })),
    fc.integer({ min: 1, max: 500 }).map((extra): RefundSize => ({ kind: 'over', extra }))
  )).map(([at, size]) => new GoodwillRefund(at, size)),
  // Cancel and delete share one place: each ends an order's way early.
  fc.oneof(fc.tuple(ref, byAdmin).map(([at, admin]) => new Cancel(at, admin)), fc.tuple(ref, byAdmin).map(([at, admin]) => new Delete(at, admin))),
  ...Array(2).fill(ref.map(at => new Deliver(at))),
  // Edits: one or two lines up or down by up to 3 (a line not on the order is added, one taken to 0 removed),
  // by the owner or an admin, applied or previewed; one in ten with a stale If-Match.
  ...Array(3).fill(fc.tuple(
    ref,
    fc.uniqueArray(fc.record({ product: fc.nat({ max: 2 }), delta: fc.integer({ min: -3, max: 3 }) }), { minLength: 1, maxLength: 2, selector: c => c.product }),
    fc.oneof(fc.constant(true), fc.constant(true), fc.constant(false)),
    fc.boolean(),
    fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) })
  ).map(([at, changes, admin, dryRun, stale]) => new EditOrder(at, changes, admin, dryRun, stale))),
  ...Array(3).fill(fc.tuple(ref, fc.oneof(fc.constant<'all'>('all'), picks), fc.boolean()).map(([at, what, tracking]) => new Fulfil(at, what, tracking))),
  ...Array(3).fill(fc.tuple(ref, fc.nat({ max: 7 })).map(([at, which]) => new DeliverFulfilment(at, which))),
  ...Array(2).fill(fc.tuple(ref, fc.nat({ max: 7 })).map(([at, which]) => new CancelFulfilment(at, which))),
  ...Array(4).fill(fc.tuple(ref, picks, byAdmin).map(([at, lines, admin]) => new RequestReturn(at, lines, admin))),
  fc.oneof(
    fc.tuple(ref, fc.nat({ max: 7 }), byAdmin).map(([at, which, admin]) => new CancelReturn(at, which, admin)),
    fc.tuple(ref, fc.nat({ max: 7 }), fc.boolean()).map(([at, which, reason]) => new RejectReturn(at, which, reason))),
  ...Array(4).fill(fc.tuple(
    ref,
    fc.nat({ max: 7 }),
    fc.array(fc.record({
      received: fc.oneof({ weight: 5, arbitrary: fc.constant<Received>('all') }, { weight: 2, arbitrary: fc.constant<Received>('half') },
        { weight: 1, arbitrary: fc.constant<Received>('none') }, { weight: 1, arbitrary: fc.constant<Received>('over') }),
      restock: fc.boolean(),
    }), { minLength: 1, maxLength: 3 }),
    fc.oneof(
      { weight: 3, arbitrary: fc.constant<ReturnRefund>({ kind: 'default' }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 1000 }).map((permille): ReturnRefund => ({ kind: 'share', permille })) },
      { weight: 1, arbitrary: fc.constant<ReturnRefund>({ kind: 'zero' }) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 500 }).map((extra): ReturnRefund => ({ kind: 'over', extra })) }
    )
  ).map(([at, which, lines, refund]) => new ReceiveReturn(at, which, lines, refund))),
]
