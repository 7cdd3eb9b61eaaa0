import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // The hash of the value the start route put in the browser's cookie (CONTRACT §18): the callback is
  // finished only in the browser that started the flow. Flows started before this change have none and
  // are refused at the callback (they live 10 minutes).
  await sql`alter table oidc_flows add column binding_hash text`.execute(db)
}
