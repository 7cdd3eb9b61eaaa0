import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // No NOTIFY from the transactions that write deliveries. PostgreSQL serialises the commits of
  // every transaction that notified (they queue on one lock until their commit record is flushed),
  // so with an endpoint registered, creates committed one at a time and their rate fell by two
  // thirds (bench/RESULTS.md, "Events"). The instance that wrote a delivery wakes its own
  // dispatcher in-process after the commit; the others find it by their poll.
  await sql`drop trigger webhook_deliveries_notify on webhook_deliveries`.execute(db)
  await sql`drop function webhook_deliveries_notify ()`.execute(db)
}
