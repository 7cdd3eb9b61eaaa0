import { sql, type Kysely } from 'kysely'

// Frozen once landed: later changes go into a new migration.
export async function up (db: Kysely<unknown>): Promise<void> {
  // Notify only when deliveries were written. The trigger of 2026-11-24-04 notified on every
  // statement that wrote events, endpoints or not, and a notifying commit made the event feed
  // show those events measurably later (test/events/feed-tail.test.ts on PostgreSQL).
  await sql`
    create or replace function webhook_deliveries_notify () returns trigger language plpgsql as $$
    begin
      if exists (select 1 from inserted) then
        perform pg_notify('webhook_deliveries', '');
      end if;
      return null;
    end $$`.execute(db)
  await sql`drop trigger webhook_deliveries_notify on webhook_deliveries`.execute(db)
  await sql`
    create trigger webhook_deliveries_notify after insert on webhook_deliveries
    referencing new table as inserted
    for each statement execute function webhook_deliveries_notify()`.execute(db)
}
