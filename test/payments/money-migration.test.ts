import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { migrate } from '../../src/db/database.js'
import { BACKENDS, createTestDatabase, migrateToBefore } from '../helper.js'

// The migration that stores the order's money (CONTRACT §15.1) fills it for the orders that exist:
// every order status, every payment status, and the refunds of the time with their free-text reasons.

const MIGRATION = '2026-11-27-02-order-money'

/** An order as it was before the migration, its payment (if any) and its refunds (free-text reasons). */
interface Before {
  status: string
  payment?: { status: string, refunded: number, refunds: Array<[number, string]> }
}

/** Each case: the order before, and its money afterwards (paid, refunded, credited, paymentStatus). */
const CASES: Array<[Before, [number, number, number, string]]> = [
  [{ status: 'PLACED' }, [0, 0, 0, 'UNPAID']],
  [{ status: 'PENDING' }, [0, 0, 0, 'UNPAID']],
  [{ status: 'CONFIRMED', payment: { status: 'PENDING', refunded: 0, refunds: [] } }, [0, 0, 0, 'UNPAID']],
  [{ status: 'CONFIRMED', payment: { status: 'FAILED', refunded: 0, refunds: [] } }, [0, 0, 0, 'UNPAID']],
  [{ status: 'CONFIRMED', payment: { status: 'COMPLETED', refunded: 0, refunds: [] } }, [1000, 0, 0, 'PAID']],
  [{ status: 'CONFIRMED', payment: { status: 'PARTIALLY_REFUNDED', refunded: 300, refunds: [[300, 'refund']] } }, [1000, 300, 300, 'PARTIALLY_REFUNDED']],
  [{ status: 'CONFIRMED', payment: { status: 'REFUNDED', refunded: 1000, refunds: [[400, 'refund'], [600, 'refund']] } }, [1000, 1000, 1000, 'REFUNDED']],
  [{ status: 'DELIVERED', payment: { status: 'COMPLETED', refunded: 0, refunds: [] } }, [1000, 0, 0, 'PAID']],
  [{ status: 'DELIVERED', payment: { status: 'PARTIALLY_REFUNDED', refunded: 100, refunds: [[100, 'refund']] } }, [1000, 100, 100, 'PARTIALLY_REFUNDED']],
  [{ status: 'CANCELLED' }, [0, 0, 0, 'UNPAID']],
  [{ status: 'CANCELLED', payment: { status: 'CANCELLED', refunded: 0, refunds: [] } }, [0, 0, 0, 'UNPAID']],
  [{ status: 'CANCELLED', payment: { status: 'REFUNDED', refunded: 1000, refunds: [[200, 'refund'], [800, 'order cancelled']] } }, [1000, 1000, 200, 'REFUNDED']],
  [{ status: 'DELETED', payment: { status: 'REFUNDED', refunded: 1000, refunds: [[1000, 'order cancelled']] } }, [1000, 1000, 0, 'REFUNDED']],
  [{ status: 'DELETED', payment: { status: 'COMPLETED', refunded: 0, refunds: [] } }, [1000, 0, 0, 'PAID']],
]

describe('the order-money migration', () => {
  for (const backend of BACKENDS) {
    it(`fills paid, refunded, credited and paymentStatus of existing orders, and names the reasons of existing refunds [${backend}]`, async () => {
      const database = await createTestDatabase(backend)
      try {
        const { db } = database
        await migrateToBefore(db, MIGRATION)
        const { rows: [member] } = await sql<{ id: number }>`
          insert into members (email, password_hash, name) values ('old@example.com', 'x', 'Old') returning id`.execute(db)
        const orderIds: number[] = []
        for (const [before] of CASES) {
          const { rows: [order] } = await sql<{ id: number }>`
            insert into orders (customer_id, status, total_amount, currency, item_count)
            values (${member!.id}, ${before.status}, 1000, 'USD', 1) returning id`.execute(db)
          orderIds.push(order!.id)
          if (!before.payment) continue
          const { rows: [payment] } = await sql<{ id: number }>`
            insert into payments (order_id, customer_id, amount, refunded_amount, currency, status, provider_reference)
            values (${order!.id}, ${member!.id}, 1000, ${before.payment.refunded}, 'USD', ${before.payment.status}, 'ch_1') returning id`.execute(db)
          await sql`update orders set payment_id = ${payment!.id} where id = ${order!.id}`.execute(db)
          for (const [amount, reason] of before.payment.refunds) {
            await sql`insert into payment_refunds (payment_id, amount, provider_reference, reason, actor_id)
              values (${payment!.id}, ${amount}, 're_1', ${reason}, ${member!.id})`.execute(db)
          }
        }

        await migrate(db)

        const { rows } = await sql<{ id: number, paid_amount: number, refunded_amount: number, credited_amount: number, payment_status: string }>`
          select id, paid_amount, refunded_amount, credited_amount, payment_status from orders order by id`.execute(db)
        assert.deepEqual(rows.map(row => [row.paid_amount, row.refunded_amount, row.credited_amount, row.payment_status]), CASES.map(([, after]) => after))
        assert.deepEqual(rows.map(row => row.id), orderIds)
        const { rows: refunds } = await sql<{ reason: string, edit_id: number | null, return_id: number | null }>`
          select reason, edit_id, return_id from payment_refunds order by id`.execute(db)
        assert.deepEqual(refunds, CASES.flatMap(([before]) => (before.payment?.refunds ?? []).map(([, reason]) =>
          ({ reason: reason === 'order cancelled' ? 'CANCEL' : 'GOODWILL', edit_id: null, return_id: null }))))
        // An order may now have a second payment; an unknown refund reason is refused.
        await sql`insert into payments (order_id, customer_id, amount, currency) values (${orderIds[4]!}, ${member!.id}, 50, 'USD')`.execute(db)
        await assert.rejects(sql`insert into payment_refunds (payment_id, amount, provider_reference, reason, actor_id)
          select id, 1, 're_2', 'refund', ${member!.id} from payments limit 1`.execute(db), /payment_refunds_reason_check/)
      } finally {
        await database.close()
      }
    })
  }
})
