import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { migrate } from '../../src/db/database.js'
import { BACKENDS, createTestDatabase, migrateToBefore } from '../helper.js'

// The fulfilments migration (CONTRACT §15.3) gives every order that was delivered before fulfilments
// existed the one shipment §3's one-step deliver now writes, delivered when the order was, and makes
// it FULFILLED; every other order is UNFULFILLED and has none.

const MIGRATION = '2026-11-27-03-fulfillments'
const DELIVERED_AT = '2026-11-20T10:00:00.000Z'

/** Each case: the order's status, whether its history shows a delivery, and its fulfilment status afterwards. */
const CASES: Array<[string, boolean, string]> = [
  ['PLACED', false, 'UNFULFILLED'],
  ['PENDING', false, 'UNFULFILLED'],
  ['CONFIRMED', false, 'UNFULFILLED'],
  ['DELIVERED', true, 'FULFILLED'],
  ['DELIVERED', false, 'FULFILLED'], // no history row: shipped when the order was last changed
  ['CANCELLED', false, 'UNFULFILLED'],
  ['DELETED', false, 'UNFULFILLED'],
  ['DELETED', true, 'FULFILLED'],
]

describe('the fulfilments migration', () => {
  for (const backend of BACKENDS) {
    it(`gives each delivered order one delivered fulfilment of all its items and the status FULFILLED [${backend}]`, async () => {
      const database = await createTestDatabase(backend)
      try {
        const { db } = database
        await migrateToBefore(db, MIGRATION)
        const { rows: [member] } = await sql<{ id: number }>`
          insert into members (email, password_hash, name) values ('old@example.com', 'x', 'Old') returning id`.execute(db)
        const products: number[] = []
        for (const name of ['Tea', 'Cups']) {
          const { rows: [product] } = await sql<{ id: number }>`
            insert into products (name, price, stock_quantity) values (${name}, 500, 10) returning id`.execute(db)
          products.push(product!.id)
        }
        const orderIds: number[] = []
        for (const [status, deliveredInHistory] of CASES) {
          const { rows: [order] } = await sql<{ id: number }>`
            insert into orders (customer_id, status, total_amount, currency, item_count, updated_at)
            values (${member!.id}, ${status}, 2500, 'USD', 3, ${DELIVERED_AT}) returning id`.execute(db)
          orderIds.push(order!.id)
          await sql`insert into order_items (order_id, position, product_id, product_name, quantity, unit_price, line_total)
            values (${order!.id}, 0, ${products[0]!}, 'Tea', 2, 500, 1000), (${order!.id}, 1, ${products[1]!}, 'Cups', 3, 500, 1500)`.execute(db)
          if (deliveredInHistory) {
            await sql`insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role, at)
              values (${order!.id}, 'CONFIRMED', 'DELIVERED', 'deliver', ${member!.id}, 'ADMIN', ${DELIVERED_AT})`.execute(db)
          }
        }
        // A deleted order's later history does not move its delivery.
        await sql`insert into order_history (order_id, from_status, to_status, action, actor_id, actor_role, at)
          values (${orderIds[7]!}, 'DELIVERED', 'DELETED', 'delete', ${member!.id}, 'ADMIN', '2026-11-21T10:00:00.000Z')`.execute(db)

        await migrate(db)

        const { rows } = await sql<{ id: number, fulfillment_status: string }>`
          select id, fulfillment_status from orders order by id`.execute(db)
        assert.deepEqual(rows.map(row => row.id), orderIds)
        assert.deepEqual(rows.map(row => row.fulfillment_status), CASES.map(([, , after]) => after))
        const { rows: fulfillments } = await sql<{ id: number, order_id: number, status: string, carrier: null, tracking_number: null, tracking_url: null, shipped_at: Date, delivered_at: Date }>`
          select id, order_id, status, carrier, tracking_number, tracking_url, shipped_at, delivered_at from fulfillments order by id`.execute(db)
        assert.deepEqual(fulfillments.map(({ id: _id, ...row }) => ({ ...row, order_id: Number(row.order_id) })),
          [3, 4, 7].map(index => ({
            order_id: orderIds[index]!,
            status: 'DELIVERED',
            carrier: null,
            tracking_number: null,
            tracking_url: null,
            shipped_at: new Date(DELIVERED_AT),
            delivered_at: new Date(DELIVERED_AT),
          })))
        const { rows: items } = await sql<{ fulfillment_id: number, product_id: number, quantity: number }>`
          select fulfillment_id, product_id, quantity from fulfillment_items order by fulfillment_id, product_id`.execute(db)
        assert.deepEqual(items.map(row => [Number(row.fulfillment_id), Number(row.product_id), row.quantity]),
          fulfillments.flatMap(f => [[Number(f.id), products[0]!, 2], [Number(f.id), products[1]!, 3]]))
        // A new order is UNFULFILLED; an unknown status is refused.
        const { rows: [fresh] } = await sql<{ fulfillment_status: string }>`
          insert into orders (customer_id, status, total_amount, currency, item_count)
          values (${member!.id}, 'PLACED', 100, 'USD', 1) returning fulfillment_status`.execute(db)
        assert.equal(fresh!.fulfillment_status, 'UNFULFILLED')
        await assert.rejects(sql`update orders set fulfillment_status = 'SHIPPED' where id = ${orderIds[0]!}`.execute(db),
          /orders_fulfillment_status_check/)
      } finally {
        await database.close()
      }
    })
  }
})
