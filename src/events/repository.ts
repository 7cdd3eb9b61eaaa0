import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { EventType } from './schemas.js'
import type { EventRow } from './table.js'

/** A place in the feed: after the event `id` of the transaction `tx`. */
export interface FeedPosition {
  tx: string
  id: number
}

/**
 * Events after `after`, oldest first, in the feed's order: by writing transaction, then by id.
 * Only transactions older than every transaction still running are read
 * (`tx < pg_snapshot_xmin(pg_current_snapshot())`): a transaction that began earlier and commits
 * later can still add events below the newest one seen, but never below that bound, so a reader
 * that follows its position sees every event exactly once. The price: an event waits to be read
 * while an older transaction is still open (transactions here last milliseconds).
 */
export function readFeed (
  db: Db, filter: { after?: FeedPosition, types?: readonly EventType[], orderId?: number, limit: number }
): Promise<EventRow[]> {
  return db.selectFrom('events')
    .select(['id', sql<string>`tx::text`.as('tx'), 'type', 'order_id', 'sequence', 'snapshot', 'created_at'])
    .where(sql<boolean>`tx < pg_snapshot_xmin(pg_current_snapshot())`)
    .$if(filter.after !== undefined, qb => qb.where(sql<boolean>`(tx, id) > (cast(${filter.after!.tx} as xid8), ${filter.after!.id}::bigint)`))
    .$if(filter.types !== undefined, qb => qb.where('type', 'in', filter.types!))
    .$if(filter.orderId !== undefined, qb => qb.where('order_id', '=', filter.orderId!))
    // By the column, not the text alias of the select: as text, transaction 1001 would sort before 995.
    .orderBy(sql`events.tx`).orderBy('events.id')
    .limit(filter.limit)
    .execute()
}

export function findEvent (db: Db, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('events')
    .select(['id', sql<string>`tx::text`.as('tx'), 'type', 'order_id', 'sequence', 'snapshot', 'created_at'])
    .where('id', '=', idValue(id))
    .executeTakeFirst()
}

/** Deletes events older than the retention, except those with a webhook delivery still PENDING; returns how many. */
export async function purgeOldEvents (db: Db, retentionMs: number): Promise<number> {
  const result = await db.deleteFrom('events')
    .where('created_at', '<', sql<Date>`now() - ${retentionMs} * interval '1 millisecond'`)
    .where(sql<boolean>`not exists (select 1 from webhook_deliveries d where d.event_id = events.id and d.status = 'PENDING')`)
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
