import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // Where on the retry schedule a delivery is: the attempts made before its current schedule began.
  // A manual retry starts a fresh schedule while `attempts` keeps counting (CONTRACT §12).
  await sql`alter table webhook_deliveries add column schedule_start integer not null default 0`.execute(db)

  // Wakes the dispatchers of every instance (LISTEN webhook_deliveries) when deliveries are written:
  // a notification is sent only when the writing transaction commits, so a woken dispatcher finds them.
  await sql`
    create function webhook_deliveries_notify () returns trigger language plpgsql as $$
    begin
      perform pg_notify('webhook_deliveries', '');
      return null;
    end $$`.execute(db)
  await sql`
    create trigger webhook_deliveries_notify after insert on webhook_deliveries
    for each statement execute function webhook_deliveries_notify()`.execute(db)
}
