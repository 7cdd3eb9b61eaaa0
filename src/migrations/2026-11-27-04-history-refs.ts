import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // A history entry names the record a step made or changed (CONTRACT §15.2–§15.4): the edit, the
  // fulfilment or the return. Nullable, no default: adding them rewrites nothing, and older entries
  // name none.
  await sql`alter table order_history add column edit_id bigint, add column fulfillment_id bigint, add column return_id bigint`.execute(db)
}
