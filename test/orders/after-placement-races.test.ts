import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import type { OrderEdit } from '../../src/edits/schemas.js'
import type { Event } from '../../src/events/schemas.js'
import type { Fulfillment } from '../../src/fulfillments/schemas.js'
import type { HistoryEntry, OrderDetail } from '../../src/orders/schemas.js'
import type { Return } from '../../src/returns/schemas.js'
import { describeEachBackend, errorBody, feedSettled, successData, type Member } from '../helper.js'

// Issue 31 (CONTRACT §15.1-§15.7): edits, goodwill refunds, returns, shipments and the owner's
// payments racing on two orders from several clients, in rounds of concurrent requests over HTTP.
// Every request must end in an answer the contract allows for it (never a 500, a deadlock or a
// hang), and after every round the books, the stock, the history and the events are checked
// through the API. The mix is drawn from a fixed seed (RACE_SEED to try another one).

const SEED = Number(process.env.RACE_SEED ?? 31)
const ROUNDS = Number(process.env.RACE_ROUNDS ?? 10)
/** A request that has not answered after this long is reported as hung (a deadlock PostgreSQL did not break). */
const HANG_MS = 30_000
const INITIAL_STOCK = 200

/** A small deterministic generator (mulberry32), so a failing mix can be replayed by its seed. */
function random (seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    chance: (p: number) => next() < p,
  }
}
type Random = ReturnType<typeof random>

type Kind = 'edit' | 'editFresh' | 'preview' | 'refund' | 'refundRace' | 'requestReturn' | 'receive' | 'cancelReturn' | 'ship' | 'cancelShipment' | 'deliverShipment' | 'pay'

/** An answer the contract allows: a status, the error code for a refusal, and the fields a VALIDATION_FAILED may name. */
interface Allowed { status: number, code?: string, fields?: RegExp }

const ALLOWED: Record<Kind, Allowed[]> = {
  // §15.2: 201, a stale If-Match 412, an order no longer CONFIRMED 400, a change made impossible by a
  // concurrent step (below what shipped, below what was credited, nothing left to change) 400, stock 409.
  edit: [
    { status: 201 }, { status: 412, code: 'PRECONDITION_FAILED' }, { status: 400, code: 'INVALID_ORDER_STATUS' },
    { status: 400, code: 'VALIDATION_FAILED', fields: /^changes(\[\d+\]\.quantity)?$/ }, { status: 409, code: 'INSUFFICIENT_STOCK' },
  ],
  editFresh: [],
  preview: [],
  // §6, §15.1: a goodwill refund of part of what is left; more than is left 400 naming amount; a payment not captured 400.
  refundRace: [],
  refund: [{ status: 200 }, { status: 400, code: 'INVALID_PAYMENT_STATUS' }, { status: 400, code: 'VALIDATION_FAILED', fields: /^amount$/ }],
  // §15.4: within what was delivered minus returned minus open returns, else 400 naming the quantity.
  requestReturn: [{ status: 201 }, { status: 400, code: 'VALIDATION_FAILED', fields: /^items\[0\]\.quantity$/ }],
  // §15.4, §15.7: REQUESTED → RECEIVED; already RECEIVED → 200 unchanged; CANCELLED → 400.
  receive: [{ status: 200 }, { status: 400, code: 'INVALID_RETURN_STATUS' }],
  cancelReturn: [{ status: 200 }, { status: 400, code: 'INVALID_RETURN_STATUS' }],
  // §15.3, §15.7: needs CONFIRMED, balanceDue 0 and PAID/PARTIALLY_REFUNDED (400); more than is left to ship 400.
  ship: [
    { status: 201 }, { status: 400, code: 'INVALID_ORDER_STATUS' },
    { status: 400, code: 'VALIDATION_FAILED', fields: /^items\[0\]\.(quantity|productId)$/ },
  ],
  cancelShipment: [{ status: 200 }, { status: 400, code: 'INVALID_FULFILLMENT_STATUS' }],
  deliverShipment: [{ status: 200 }, { status: 400, code: 'INVALID_FULFILLMENT_STATUS' }],
  // §6: the owner pays an open payment; an edit may have cancelled it meanwhile (400).
  pay: [{ status: 200 }, { status: 400, code: 'INVALID_PAYMENT_STATUS' }],
}
ALLOWED.editFresh = ALLOWED.edit
ALLOWED.refundRace = ALLOWED.refund
ALLOWED.preview = [{ status: 200 }, ...ALLOWED.edit.slice(1)]

const CAPTURED = new Set(['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED'])
const OPEN = new Set(['PENDING', 'FAILED'])

/** One order under test, and what the test has seen done to it (2xx answers that changed something). */
interface Tracked {
  name: string
  orderId: number
  url: string
  /** History entries and version when the races started. */
  baseHistory: number
  baseVersion: number
  /** Event counts by type when the races started. */
  baseEvents: Map<string, number>
  editIds: number[]
  returnIds: number[]
  received: Set<number>
  returnsCancelled: Set<number>
  shipped: number[]
  shipmentsCancelled: Set<number>
  shipmentsDelivered: Set<number>
  goodwill: number[]
  paid: Set<number>
}

interface Snapshot {
  order: OrderDetail
  etag: string
  returns: Return[]
}

interface Planned {
  kind: Kind
  target: Tracked
  /** Same-If-Match group id, for edits made against one version. */
  group?: string
  /** A resource id the request acts on (a return, a fulfilment, a payment). */
  ref?: number
  /** The amount of a goodwill refund. */
  amount?: number
  send: () => Promise<LightMyRequestResponse>
}

const withTimeout = async (what: string, promise: Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> => {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${HANG_MS} ms (a hang or deadlock)`)), HANG_MS)
    })])
  } finally {
    clearTimeout(timer)
  }
}

describeEachBackend('edits, returns, refunds and shipments racing on one order (issue 31)', (ctx) => {
  it(`ends every round with the books balanced, stock conserved, history and events complete (seed ${SEED}, ${ROUNDS} rounds)`, async (t) => {
    const api = ctx.api
    const admin = await api.admin()
    const owner = await api.member('owner')
    const send = (method: 'GET' | 'POST' | 'PATCH', url: string, who: Member, payload?: object, headers: Record<string, string> = {}) =>
      api.inject({ method, url, headers: { ...who.headers, ...headers }, ...(payload === undefined ? {} : { payload }) })
    const ok = async <T>(res: Promise<LightMyRequestResponse>, status = 200): Promise<{ data: T, res: LightMyRequestResponse }> => {
      const answer = await res
      assert.equal(answer.statusCode, status, answer.body)
      return { data: answer.json().data as T, res: answer }
    }

    // Four products; the fourth is on no order at first (edits add it).
    const products: number[] = []
    for (const [name, price] of [['Beans', 500], ['Cups', 300], ['Filters', 200], ['Jug', 700]] as const) {
      products.push((await api.product(admin, { name, price, stockQuantity: INITIAL_STOCK })).productId)
    }
    const [p1, p2, p3] = products as [number, number, number, number]

    const readOrder = async (orderId: number): Promise<Snapshot> => {
      const res = await send('GET', `/api/v1/admin/orders/${orderId}`, admin)
      const order = successData<OrderDetail>(res)
      const returns = successData<Return[]>(await send('GET', `/api/v1/orders/${orderId}/returns`, admin))
      return { order, etag: String(res.headers.etag), returns }
    }
    const ship = async (orderId: number, items: Array<{ productId: number, quantity: number }>) =>
      (await ok<Fulfillment>(send('POST', `/api/v1/admin/orders/${orderId}/fulfillments`, admin, { items }), 201)).data
    const deliver = (orderId: number, fulfillmentId: number) =>
      ok(send('PATCH', `/api/v1/admin/orders/${orderId}/fulfillments/${fulfillmentId}/deliver`, admin))
    const payFor = (paymentId: number) => ok(send('PATCH', `/api/v1/payments/${paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' }))

    // Order A: three lines, paid; 2 beans and 2 cups shipped and delivered, 1 filter shipped and on its way.
    const a = await api.order(owner, [{ productId: p1, quantity: 6 }, { productId: p2, quantity: 6 }, { productId: p3, quantity: 6 }])
    await ok(send('PATCH', `/api/v1/orders/${a.orderId}/confirm`, owner))
    await payFor((await readOrder(a.orderId)).order.paymentId!)
    await deliver(a.orderId, (await ship(a.orderId, [{ productId: p1, quantity: 2 }, { productId: p2, quantity: 2 }])).fulfillmentId)
    await ship(a.orderId, [{ productId: p3, quantity: 1 }])

    // Order B: paid, then an admin edit after capture adds 3 filters and opens a second PENDING
    // payment, which the owner pays; a shipment of 2 beans and 1 filter is delivered.
    const b = await api.order(owner, [{ productId: p1, quantity: 4 }, { productId: p2, quantity: 4 }])
    await ok(send('PATCH', `/api/v1/orders/${b.orderId}/confirm`, owner))
    await payFor((await readOrder(b.orderId)).order.paymentId!)
    const edited = (await ok<OrderEdit>(send('POST', `/api/v1/orders/${b.orderId}/edits`, admin,
      { changes: [{ productId: p3, quantity: 3 }] }, { 'if-match': (await readOrder(b.orderId)).etag }), 201)).data
    assert.equal(edited.settlement.kind, 'PAYMENT')
    assert.equal(edited.settlement.amount, 600)
    await payFor(edited.settlement.paymentId!)
    const bNow = (await readOrder(b.orderId)).order
    assert.deepEqual(bNow.payments.map(p => [p.amount, p.status]), [[3200, 'COMPLETED'], [600, 'COMPLETED']])
    await deliver(b.orderId, (await ship(b.orderId, [{ productId: p1, quantity: 2 }, { productId: p3, quantity: 1 }])).fulfillmentId)

    const track = async (name: string, orderId: number): Promise<Tracked> => {
      const { order } = await readOrder(orderId)
      const history = successData<HistoryEntry[]>(await send('GET', `/api/v1/orders/${orderId}/history`, admin))
      const baseEvents = new Map<string, number>()
      for (const event of await eventsOf(orderId)) baseEvents.set(event.type, (baseEvents.get(event.type) ?? 0) + 1)
      return {
        name,
        orderId,
        url: `/api/v1/orders/${orderId}`,
        baseHistory: history.length,
        baseVersion: order.version,
        baseEvents,
        editIds: [],
        returnIds: [],
        received: new Set(),
        returnsCancelled: new Set(),
        shipped: [],
        shipmentsCancelled: new Set(),
        shipmentsDelivered: new Set(),
        goodwill: [],
        paid: new Set(),
      }
    }

    /** Every event of the order, oldest first, once the feed has settled (all slices). */
    async function eventsOf (orderId: number): Promise<Event[]> {
      await feedSettled(api.app)
      const events: Event[] = []
      let cursor: string | null = null
      do {
        const slice: { content: Event[], hasNext: boolean, nextCursor: string | null } = successData(await send('GET',
          `/api/v1/admin/events?orderId=${orderId}&size=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, admin))
        events.push(...slice.content)
        // The feed always offers a cursor to resume from; hasNext says whether more is there now.
        cursor = slice.hasNext ? slice.nextCursor : null
      } while (cursor !== null)
      return events
    }

    const orders = [await track('A', a.orderId), await track('B', b.orderId)]
    const rng = random(SEED)
    const tally = new Map<string, number>()
    const timings: string[] = []
    let exclusiveGroups = 0
    let slowest = 0

    /** Draws one request of `kind` against the snapshot, or undefined when the snapshot offers nothing for it. */
    function plan (kind: Kind, o: Tracked, s: Snapshot, rnd: Random, group?: string): Planned | undefined {
      const { order } = s
      const editBody = (up: boolean) => {
        if (up) {
          const productId = rnd.pick(products)
          const line = order.items.find(item => item.productId === productId)
          return { changes: [{ productId, quantity: (line?.quantity ?? 0) + rnd.int(1, 2) }] }
        }
        const lowerable = order.items.filter(item => item.quantity > item.fulfilledQuantity && (item.quantity > 1 || order.items.length > 1))
        if (lowerable.length === 0) return undefined
        const line = rnd.pick(lowerable)
        return { changes: [{ productId: line.productId, quantity: line.quantity - 1 }] }
      }
      const edit = (body: object, ifMatch: () => Promise<string>, query = '') => async () =>
        send('POST', `${o.url}/edits${query}`, admin, body, { 'if-match': await ifMatch() })
      switch (kind) {
        case 'edit': {
          const body = editBody(group?.startsWith('x') ? true : rnd.chance(0.6))
          return body && { kind, target: o, group, send: edit(body, async () => s.etag) }
        }
        case 'editFresh': {
          const body = editBody(rnd.chance(0.5))
          // Read the order now and edit the version just read: a real read-modify-write racing the rest.
          return body && {
            kind, target: o, send: edit(body, async () => String((await send('GET', `/api/v1/admin/orders/${o.orderId}`, admin)).headers.etag)),
          }
        }
        case 'preview': {
          const body = editBody(rnd.chance(0.5))
          return body && { kind, target: o, send: edit(body, async () => s.etag, '?dryRun=true') }
        }
        case 'refund': {
          const captured = order.payments.filter(p => p.status === 'COMPLETED' || p.status === 'PARTIALLY_REFUNDED')
          if (captured.length === 0) return undefined
          const payment = rnd.pick(captured)
          const amount = rnd.int(20, 150)
          return { kind, target: o, ref: payment.paymentId, amount, send: () => send('PATCH', `/api/v1/payments/${payment.paymentId}/refund`, admin, { amount }) }
        }
        case 'refundRace': {
          // Sent twice at once: each asks for 60% of what is left of the payment, so at most one fits.
          const captured = order.payments.filter(p => p.status === 'COMPLETED' || p.status === 'PARTIALLY_REFUNDED')
            .toSorted((x, y) => (x.amount - x.refundedAmount) - (y.amount - y.refundedAmount))
          const payment = captured[0]
          if (!payment || payment.amount - payment.refundedAmount > 1500) return undefined
          const amount = Math.ceil((payment.amount - payment.refundedAmount) * 0.6)
          return { kind, target: o, ref: payment.paymentId, amount, send: () => send('PATCH', `/api/v1/payments/${payment.paymentId}/refund`, admin, { amount }) }
        }
        case 'requestReturn': {
          const delivered = deliveredOf(order)
          const lines = order.items.filter(item => (delivered.get(item.productId) ?? 0) > 0)
          if (lines.length === 0) return undefined
          const line = rnd.pick(lines)
          const who = rnd.chance(0.5) ? owner : admin
          return { kind, target: o, send: () => send('POST', `${o.url}/returns`, who, { items: [{ productId: line.productId, quantity: 1, reason: 'DAMAGED' }] }) }
        }
        case 'receive': case 'cancelReturn': {
          const open = s.returns.filter(r => r.status === 'REQUESTED')
          if (open.length === 0) return undefined
          const r = rnd.pick(open)
          if (kind === 'cancelReturn') return { kind, target: o, ref: r.returnId, send: () => send('PATCH', `${o.url}/returns/${r.returnId}/cancel`, owner) }
          const items = r.items.map(item => ({ productId: item.productId, quantity: item.quantity, restock: rnd.chance(0.7) }))
          return { kind, target: o, ref: r.returnId, send: () => send('PATCH', `/api/v1/admin/returns/${r.returnId}/receive`, admin, { items }) }
        }
        case 'ship': {
          const left = order.items.filter(item => item.quantity > item.fulfilledQuantity)
          if (left.length === 0) return undefined
          const line = rnd.pick(left)
          return { kind, target: o, send: () => send('POST', `/api/v1/admin/orders/${o.orderId}/fulfillments`, admin, { items: [{ productId: line.productId, quantity: 1 }], carrier: 'DHL' }) }
        }
        case 'cancelShipment': case 'deliverShipment': {
          const shipped = order.fulfillments.filter(f => f.status === 'SHIPPED')
          if (shipped.length === 0) return undefined
          const f = rnd.pick(shipped)
          const verb = kind === 'cancelShipment' ? 'cancel' : 'deliver'
          return { kind, target: o, ref: f.fulfillmentId, send: () => send('PATCH', `/api/v1/admin/orders/${o.orderId}/fulfillments/${f.fulfillmentId}/${verb}`, admin) }
        }
        case 'pay': {
          const open = order.payments.filter(p => OPEN.has(p.status))
          if (open.length === 0) return undefined
          const payment = rnd.pick(open)
          return { kind, target: o, ref: payment.paymentId, send: () => send('PATCH', `/api/v1/payments/${payment.paymentId}/process`, owner, { paymentMethodToken: 'tok_visa' }) }
        }
      }
    }

    const MIXED: Kind[] = [
      'edit', 'editFresh', 'editFresh', 'preview', 'refund', 'refund', 'refundRace', 'requestReturn', 'requestReturn', 'requestReturn', 'receive', 'receive',
      'cancelReturn', 'ship', 'ship', 'cancelShipment', 'deliverShipment', 'deliverShipment', 'pay', 'pay',
    ]

    for (let round = 1; round <= ROUNDS; round++) {
      const snapshots = new Map<Tracked, Snapshot>()
      for (const o of orders) snapshots.set(o, await readOrder(o.orderId))
      const planned: Planned[] = []
      const exclusive = new Set<string>()
      const size = rng.int(8, 12)
      for (const o of orders) {
        const s = snapshots.get(o)!
        // An exclusive group: 3 edits raising the order against one version, racing only steps that
        // keep the version (refunds, payments) and the other order: exactly one must apply.
        if (rng.chance(0.35) && s.order.status === 'CONFIRMED') {
          const group = `x${round}${o.name}`
          exclusive.add(group)
          for (let i = 0; i < 3; i++) planned.push(plan('edit', o, s, rng, group)!)
        } else {
          const group = `m${round}${o.name}`
          for (let i = 0; i < 2; i++) {
            const p = plan('edit', o, s, rng, group)
            if (p) planned.push(p)
          }
        }
      }
      for (let attempts = 0; planned.length < size && attempts < 200; attempts++) {
        const o = rng.pick(orders)
        const s = snapshots.get(o)!
        const inExclusive = [...exclusive].some(group => group.endsWith(o.name))
        const kind = rng.pick(inExclusive ? ['refund', 'pay', 'preview'] as Kind[] : MIXED)
        const p = plan(kind, o, s, rng)
        if (!p) continue
        planned.push(p)
        // The same step twice at once on one resource: one applies, the other finds it done (or refused).
        if (p.kind === 'refundRace' || (['receive', 'cancelShipment', 'deliverShipment', 'pay'].includes(p.kind) && rng.chance(0.4))) planned.push(p)
      }

      const started = Date.now()
      if (process.env.RACE_DEBUG) console.error(`round ${round}:`, planned.map(p => `${p.kind}/${p.target.name}${p.group ? `/${p.group}` : ''}`).join(' '))
      const answers = await Promise.all(planned.map(async (p, i) => {
        const t0 = Date.now()
        const res = await withTimeout(`round ${round} request ${i} (${p.kind} on order ${p.target.name})`, p.send())
        slowest = Math.max(slowest, Date.now() - t0)
        if (process.env.RACE_DEBUG) console.error(`  ${i} ${p.kind}/${p.target.name} ${res.statusCode} ${Date.now() - t0}ms`)
        return res
      }))
      timings.push(`${Date.now() - started}ms/${planned.length}`)

      // Every answer is one the contract allows for its request.
      const applied = new Map<string, number>()
      planned.forEach((p, i) => {
        const res = answers[i]!
        const what = `round ${round}, ${p.kind} on order ${p.target.name}: ${res.statusCode} ${res.body}`
        let code: string | undefined
        if (res.statusCode >= 400) {
          const error = errorBody(res)
          code = error.code
          const fields = (error.invalidParams ?? []).map((param: { field: string }) => param.field)
          assert.ok(ALLOWED[p.kind].some(allowed => allowed.status === res.statusCode && allowed.code === code &&
            (allowed.fields === undefined || (fields.length > 0 && fields.every((field: string) => allowed.fields!.test(field))))), what)
        } else {
          assert.ok(ALLOWED[p.kind].some(allowed => allowed.status === res.statusCode && allowed.code === undefined), what)
        }
        tally.set(`${p.kind} ${res.statusCode}${code ? ` ${code}` : ''}`, (tally.get(`${p.kind} ${res.statusCode}${code ? ` ${code}` : ''}`) ?? 0) + 1)
        if (res.statusCode >= 300) return
        const data = res.json().data
        const o = p.target
        switch (p.kind) {
          case 'edit': case 'editFresh':
            o.editIds.push(data.editId)
            if (p.group) applied.set(p.group, (applied.get(p.group) ?? 0) + 1)
            break
          case 'preview': assert.equal(data.editId, null, what); break
          case 'refund': case 'refundRace': o.goodwill.push(p.amount!); break
          case 'requestReturn': o.returnIds.push(data.returnId); break
          case 'receive': assert.equal(data.status, 'RECEIVED', what); o.received.add(p.ref!); break
          case 'cancelReturn': assert.equal(data.status, 'CANCELLED', what); o.returnsCancelled.add(p.ref!); break
          case 'ship': o.shipped.push(data.fulfillmentId); break
          case 'cancelShipment': assert.equal(data.status, 'CANCELLED', what); o.shipmentsCancelled.add(p.ref!); break
          case 'deliverShipment': assert.equal(data.status, 'DELIVERED', what); o.shipmentsDelivered.add(p.ref!); break
          // A payment captured by its twin may already be refunded in part: a captured payment is answered as it is (§6).
          case 'pay': assert.ok(['COMPLETED', 'PARTIALLY_REFUNDED'].includes(data.status), what); o.paid.add(p.ref!); break
        }
      })
      for (const group of new Set(planned.flatMap(p => p.group ? [p.group] : []))) {
        const count = applied.get(group) ?? 0
        if (exclusive.has(group)) {
          exclusiveGroups++
          assert.equal(count, 1, `round ${round}: of the edits made against one version (${group}), exactly one applies`)
        } else {
          assert.ok(count <= 1, `round ${round}: of the edits made against one version (${group}), at most one applies; ${count} did`)
        }
      }

      for (const o of orders) await checkInvariants(o, round)
    }

    async function checkInvariants (o: Tracked, round: number): Promise<void> {
      const at = `order ${o.name} after round ${round}`
      const { order, returns } = await readOrder(o.orderId)
      const events = await eventsOf(o.orderId)
      const history = successData<HistoryEntry[]>(await send('GET', `${o.url}/history`, admin))

      // The books (§15.1, §15.7).
      const refunds = events.filter(event => event.type === 'payment.refunded').map(event => ({ paymentId: event.data.payment!.paymentId, ...event.data.refund! }))
      const credited = refunds.filter(r => r.reason === 'GOODWILL' || r.reason === 'RETURN').reduce((sum, r) => sum + r.amount, 0)
      const paid = order.payments.filter(p => CAPTURED.has(p.status)).reduce((sum, p) => sum + p.amount, 0)
      const refunded = order.payments.reduce((sum, p) => sum + p.refundedAmount, 0)
      const open = order.payments.filter(p => OPEN.has(p.status)).reduce((sum, p) => sum + p.amount, 0)
      assert.equal(order.totalAmount, order.items.reduce((sum, item) => sum + item.lineTotal, 0), at)
      for (const item of order.items) assert.equal(item.lineTotal, item.unitPrice * item.quantity, at)
      assert.equal(order.paidAmount, paid, `${at}: paidAmount is what the payments captured`)
      assert.equal(order.refundedAmount, refunded, `${at}: refundedAmount is the payments' refunds`)
      assert.equal(order.balanceDue, order.totalAmount - credited - (order.paidAmount - order.refundedAmount), `${at}: balanceDue = total − credited − (paid − refunded)`)
      assert.equal(order.balanceDue, open, `${at}: balanceDue is what the PENDING and FAILED payments ask for`)
      assert.ok(order.balanceDue >= 0, at)
      for (const payment of order.payments) {
        assert.ok(payment.refundedAmount <= payment.amount, `${at}: payment ${payment.paymentId} refunded ${payment.refundedAmount} of ${payment.amount}`)
        const recorded = refunds.filter(r => r.paymentId === payment.paymentId).reduce((sum, r) => sum + r.amount, 0)
        assert.equal(recorded, payment.refundedAmount, `${at}: the refunds announced for payment ${payment.paymentId} add up to its refundedAmount`)
        const direct = successData<{ refundedAmount: number, amount: number, status: string }>(await send('GET', `/api/v1/payments/${payment.paymentId}`, admin))
        assert.deepEqual([direct.amount, direct.refundedAmount, direct.status], [payment.amount, payment.refundedAmount, payment.status], at)
      }
      const expectedStatus = paid === 0 ? 'UNPAID' : refunded >= paid ? 'REFUNDED' : order.balanceDue > 0 ? 'PARTIALLY_PAID' : refunded > 0 ? 'PARTIALLY_REFUNDED' : 'PAID'
      assert.equal(order.paymentStatus, expectedStatus, at)
      // Every receipt refunded what its return says, every EDIT refund what its edit's settlement says.
      for (const r of returns.filter(r => r.status === 'RECEIVED')) {
        assert.equal(refunds.filter(x => x.returnId === r.returnId).reduce((sum, x) => sum + x.amount, 0), r.refundAmount, `${at}: return ${r.returnId}`)
      }
      const edits = successData<OrderEdit[]>(await send('GET', `${o.url}/edits`, admin))
      for (const edit of edits) {
        const byEdit = refunds.filter(x => x.editId === edit.editId).reduce((sum, x) => sum + x.amount, 0)
        assert.equal(byEdit, edit.settlement.kind === 'REFUND' ? edit.settlement.amount : 0, `${at}: edit ${edit.editId}`)
      }
      assert.deepEqual(refunds.filter(r => r.reason === 'GOODWILL').map(r => r.amount).toSorted((x, y) => x - y), o.goodwill.toSorted((x, y) => x - y),
        `${at}: one GOODWILL refund per refund answered 200, of its amount`)

      // Lines against shipments and returns (§15.3, §15.4).
      for (const item of order.items) {
        const shipped = order.fulfillments.filter(f => f.status !== 'CANCELLED').flatMap(f => f.items).filter(i => i.productId === item.productId).reduce((sum, i) => sum + i.quantity, 0)
        const returned = returns.filter(r => r.status === 'RECEIVED').flatMap(r => r.items).filter(i => i.productId === item.productId).reduce((sum, i) => sum + (i.receivedQuantity ?? 0), 0)
        assert.equal(item.fulfilledQuantity, shipped, `${at}: product ${item.productId} shipped`)
        assert.equal(item.returnedQuantity, returned, `${at}: product ${item.productId} returned`)
        assert.ok(item.fulfilledQuantity <= item.quantity, at)
        const delivered = deliveredOf(order).get(item.productId) ?? 0
        const asked = returns.filter(r => r.status === 'REQUESTED').flatMap(r => r.items).filter(i => i.productId === item.productId).reduce((sum, i) => sum + i.quantity, 0)
        assert.ok(returned + asked <= delivered, `${at}: product ${item.productId}: ${returned} returned + ${asked} asked for, ${delivered} delivered`)
      }

      // History: one entry per 2xx that changed something; the version counts them.
      const added = history.slice(o.baseHistory)
      const refsOf = (action: string, key: 'editId' | 'returnId' | 'fulfillmentId') =>
        added.filter(entry => entry.action === action).map(entry => entry[key]!).toSorted((x, y) => x - y)
      const sorted = (ids: Iterable<number>) => [...ids].toSorted((x, y) => x - y)
      assert.deepEqual(refsOf('edit', 'editId'), sorted(o.editIds), `${at}: history of edits`)
      assert.deepEqual(refsOf('request_return', 'returnId'), sorted(o.returnIds), `${at}: history of return requests`)
      assert.deepEqual(refsOf('receive_return', 'returnId'), sorted(o.received), `${at}: history of receipts`)
      assert.deepEqual(refsOf('cancel_return', 'returnId'), sorted(o.returnsCancelled), `${at}: history of return cancels`)
      assert.deepEqual(refsOf('fulfil', 'fulfillmentId'), sorted(o.shipped), `${at}: history of shipments`)
      assert.deepEqual(refsOf('cancel_fulfillment', 'fulfillmentId'), sorted(o.shipmentsCancelled), `${at}: history of shipment cancels`)
      assert.deepEqual(refsOf('deliver_fulfillment', 'fulfillmentId'), sorted(o.shipmentsDelivered), `${at}: history of deliveries`)
      const changes = o.editIds.length + o.returnIds.length + o.received.size + o.returnsCancelled.size + o.shipped.length +
        o.shipmentsCancelled.size + o.shipmentsDelivered.size
      assert.equal(added.length, changes, `${at}: history entries ${added.map(entry => entry.action).join(',')}`)
      assert.equal(order.version - o.baseVersion, changes, `${at}: version`)

      // Events: numbered 1..n without gaps, one per step, the last one showing the order as it is. The
      // feed lists them by writing transaction, which under contention is not always sequence order
      // (docs/events.md: consumers order one order's events by sequence), so they are sorted first.
      events.sort((x, y) => x.sequence - y.sequence)
      assert.deepEqual(events.map(event => event.sequence), events.map((_event, i) => i + 1), `${at}: event sequence`)
      const count = (type: string) => events.filter(event => event.type === type).length - (o.baseEvents.get(type) ?? 0)
      assert.deepEqual({
        edited: count('order.edited'),
        requested: count('return.requested'),
        received: count('return.received'),
        cancelled: count('return.cancelled'),
        shipped: count('fulfillment.created'),
        unshipped: count('fulfillment.cancelled'),
        delivered: count('fulfillment.delivered'),
        succeeded: count('payment.succeeded'),
      }, {
        edited: o.editIds.length,
        requested: o.returnIds.length,
        received: o.received.size,
        cancelled: o.returnsCancelled.size,
        shipped: o.shipped.length,
        unshipped: o.shipmentsCancelled.size,
        delivered: o.shipmentsDelivered.size,
        succeeded: o.paid.size,
      }, `${at}: events by type`)
      const last = events.at(-1)!
      assert.equal(last.data.order.version, order.version, `${at}: the last event shows the current version`)
      assert.equal(last.data.order.balanceDue, order.balanceDue, at)
      assert.equal(last.data.order.refundedAmount, order.refundedAmount, at)

      // Stock is conserved per product, over both orders (they share products).
      if (o === orders.at(-1)) {
        const all = await Promise.all(orders.map(async x => readOrder(x.orderId)))
        for (const productId of products) {
          const stock = successData<{ stockQuantity: number }>(await send('GET', `/api/v1/products/${productId}`, admin)).stockQuantity
          let reserved = 0
          let shipped = 0
          let restocked = 0
          for (const s of all) {
            for (const item of s.order.items.filter(i => i.productId === productId)) {
              reserved += item.quantity - item.fulfilledQuantity
              shipped += item.fulfilledQuantity
            }
            restocked += s.returns.filter(r => r.status === 'RECEIVED').flatMap(r => r.items)
              .filter(i => i.productId === productId && i.restock === true).reduce((sum, i) => sum + i.receivedQuantity!, 0)
          }
          assert.equal(INITIAL_STOCK, stock + reserved + shipped - restocked,
            `after round ${round}: product ${productId}: stock ${stock} + reserved ${reserved} + shipped ${shipped} − restocked ${restocked}`)
        }
      }
    }

    t.diagnostic(`[${ctx.backend}] rounds: ${timings.join(' ')}; slowest request ${slowest} ms; exclusive same-If-Match groups: ${exclusiveGroups}`)
    t.diagnostic(`[${ctx.backend}] outcomes: ${[...tally].toSorted(([x], [y]) => x.localeCompare(y)).map(([k, n]) => `${k}×${n}`).join(', ')}`)
  })

  // A reproducer of a deadlock seen with RACE_SEED=99 on PostgreSQL (503 SERVICE_UNAVAILABLE from 40P01):
  // an edit locks only the products it changes (FOR UPDATE, by id), then storeLines deletes and
  // re-inserts every line of the order, and each insert's foreign key check takes FOR KEY SHARE on the
  // product of a line the edit did not change, in line order, which FOR UPDATE blocks. Two orders
  // sharing products, each edit changing the product the other one only keeps: A holds p2 and waits
  // for p1, B holds p1 and waits for p2. Fails on PostgreSQL until the service's edits take their
  // product locks so that the foreign key checks cannot wait on them (see the report of issue 31).
  it('edits of two orders that share products, each changing the product the other keeps, never deadlock', async () => {
    const api = ctx.api
    const admin = await api.admin()
    const owner = await api.member('owner')
    const p1 = (await api.product(admin, { name: 'Beans', price: 500, stockQuantity: 10_000 })).productId
    const p2 = (await api.product(admin, { name: 'Cups', price: 300, stockQuantity: 10_000 })).productId
    const orders: number[] = []
    for (let i = 0; i < 2; i++) {
      const { orderId } = await api.order(owner, [{ productId: p1, quantity: 5 }, { productId: p2, quantity: 5 }])
      orders.push(orderId)
    }
    const [a, b] = orders as [number, number]
    const outcomes = new Map<string, number>()
    for (let attempt = 0; attempt < 20; attempt++) {
      const read = await Promise.all(orders.map(id => api.inject({ url: `/api/v1/orders/${id}`, headers: owner.headers })))
      const etags = read.map(res => String(res.headers.etag))
      // Each edit moves the product it changes one up or down from what it is now.
      const [qa, qb] = read.map((res, i) => successData<OrderDetail>(res).items.find(item => item.productId === (i === 0 ? p2 : p1))!.quantity + (attempt % 2 === 0 ? 1 : -1))
      const answers = await Promise.all([
        withTimeout('edit of A', api.inject({ method: 'POST', url: `/api/v1/orders/${a}/edits`, headers: { ...owner.headers, 'if-match': etags[0]! }, payload: { changes: [{ productId: p2, quantity: qa }] } })),
        withTimeout('edit of B', api.inject({ method: 'POST', url: `/api/v1/orders/${b}/edits`, headers: { ...owner.headers, 'if-match': etags[1]! }, payload: { changes: [{ productId: p1, quantity: qb }] } })),
      ])
      for (const res of answers) {
        const key = res.statusCode === 201 ? '201' : `${res.statusCode} ${res.json().error?.code}`
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
      }
    }
    assert.deepEqual(Object.fromEntries(outcomes), { 201: 40 }, 'every edit applies: none is ended as a deadlock (503)')
    // Stock is conserved: 10000 = stock + what both orders hold.
    for (const productId of [p1, p2]) {
      const stock = successData<{ stockQuantity: number }>(await api.inject({ url: `/api/v1/products/${productId}` })).stockQuantity
      const held = (await Promise.all(orders.map(async id => successData<OrderDetail>(await api.inject({ url: `/api/v1/orders/${id}`, headers: owner.headers })))))
        .flatMap(order => order.items).filter(item => item.productId === productId).reduce((sum, item) => sum + item.quantity, 0)
      assert.equal(stock + held, 10_000)
    }
  })
})

/** What of each product was delivered: in DELIVERED fulfilments. */
function deliveredOf (order: OrderDetail): Map<number, number> {
  const delivered = new Map<number, number>()
  for (const f of order.fulfillments.filter(f => f.status === 'DELIVERED')) {
    for (const item of f.items) delivered.set(item.productId, (delivered.get(item.productId) ?? 0) + item.quantity)
  }
  return delivered
}
