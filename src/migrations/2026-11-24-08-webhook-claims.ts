import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // The dispatcher claims each endpoint's due deliveries separately (at most so many in flight per
  // endpoint, so a slow endpoint cannot take every slot): pending deliveries by endpoint and due time.
  await sql`
    create index webhook_deliveries_endpoint_due_idx on webhook_deliveries (endpoint_id, next_attempt_at, id)
    where status = 'PENDING'`.execute(db)
}
