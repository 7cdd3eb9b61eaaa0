import { sql } from 'kysely'
import type { Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { EventSnapshot } from '../events/table.js'
import type { EventType } from '../events/schemas.js'
import type { DeliveryStatus, EndpointStatus, WebhookDeliveryRow, WebhookEndpointRow } from './table.js'

const live = (db: Db) => db.selectFrom('webhook_endpoints').where('deleted_at', 'is', null)

/** Whether any endpoint can be sent to: only those are given deliveries (src/events/outbox.ts). */
export async function hasActiveEndpoint (db: Db): Promise<boolean> {
  const row = await db.selectNoFrom(eb => eb.exists(live(db).where('status', '=', 'ACTIVE').select(sql.lit(1).as('one'))).as('active'))
    .executeTakeFirstOrThrow()
  return Boolean(row.active)
}

export async function countEndpoints (db: Db): Promise<number> {
  const row = await live(db).select(eb => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export function insertEndpoint (db: Db, values: { url: string, event_types: string[] | null, description: string | null, secret: string }): Promise<WebhookEndpointRow> {
  return db.insertInto('webhook_endpoints').values(values).returningAll().executeTakeFirstOrThrow()
}

export function listEndpoints (db: Db, offset: number, limit: number): Promise<WebhookEndpointRow[]> {
  return live(db).selectAll().orderBy('id', 'desc').offset(offset).limit(limit).execute()
}

export function findEndpoint (db: Db, id: string | number): Promise<WebhookEndpointRow | undefined> {
  return live(db).selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

/**
 * Changes an endpoint; when it becomes DISABLED (or is deleted) its PENDING deliveries stop as
 * FAILED with `reason`, in the same statement.
 */
export async function updateEndpoint (
  db: Db, id: string | number,
  changes: { url?: string, event_types?: string[] | null, description?: string | null, status?: EndpointStatus, secret?: string, previous_secret?: string | null, previous_secret_expires_at?: Date | null, deleted_at?: Date },
  stopReason?: string
): Promise<WebhookEndpointRow | undefined> {
  const result = await sql<WebhookEndpointRow>`
    with changed as (
      update webhook_endpoints set ${sql.join([
        ...Object.entries(changes).map(([column, value]) =>
          sql`${sql.ref(column)} = ${column === 'event_types' && value !== null ? sql`${value}::text[]` : value}`),
        sql`updated_at = now()`,
      ])}
      where id = ${idValue(id)} and deleted_at is null
      returning *
    ), stopped as (
      update webhook_deliveries set status = 'FAILED', last_error = ${stopReason ?? null}, next_attempt_at = now()
      where ${stopReason !== undefined} and status = 'PENDING' and endpoint_id in (select id from changed)
    )
    select * from changed`.execute(db)
  return result.rows[0]
}

/** Marks an endpoint deleted (it keeps its delivery log); its PENDING deliveries stop as FAILED. */
export async function deleteEndpoint (db: Db, id: string): Promise<boolean> {
  return (await updateEndpoint(db, id, { deleted_at: new Date(), status: 'DISABLED' }, 'endpoint deleted')) !== undefined
}

export async function pageDeliveries (db: Db, endpointId: number, status: DeliveryStatus | undefined, offset: number, limit: number): Promise<{ rows: WebhookDeliveryRow[], total: number }> {
  const base = db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpointId)
    .$if(status !== undefined, qb => qb.where('status', '=', status!))
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('id', 'desc').offset(offset).limit(limit).execute(),
    base.select(eb => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.n) }
}

export function findDelivery (db: Db, id: string): Promise<(WebhookDeliveryRow & { endpoint_status: EndpointStatus, endpoint_deleted: boolean }) | undefined> {
  return db.selectFrom('webhook_deliveries as d').innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .selectAll('d').select(['w.status as endpoint_status', sql<boolean>`w.deleted_at is not null`.as('endpoint_deleted')])
    .where('d.id', '=', idValue(id))
    .executeTakeFirst()
}

/** A delivery queued again: PENDING, due now, on a fresh schedule; `attempts` keeps counting. */
export function requeueDelivery (db: Db, id: number): Promise<WebhookDeliveryRow | undefined> {
  return db.updateTable('webhook_deliveries')
    .set({ status: 'PENDING', next_attempt_at: sql<Date>`now()`, schedule_start: sql<number>`attempts`, claimed_until: null })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

export async function countPendingDeliveries (db: Db): Promise<number> {
  const row = await db.selectFrom('webhook_deliveries').where('status', '=', 'PENDING')
    .select(eb => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

/** A claimed delivery with what sending it needs: the event and the endpoint's URL and secrets. */
export interface ClaimedDelivery {
  id: number
  endpoint_id: number
  attempts: number
  schedule_start: number
  claimed_until: Date
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  event_id: number
  event_type: EventType
  order_id: number
  sequence: number
  snapshot: EventSnapshot
  event_created_at: Date
}

/**
 * Claims up to `limit` due deliveries for `claimMs` (FOR UPDATE SKIP LOCKED: instances never take
 * the same rows), at most `perEndpoint` for each endpoint less what `busy` says it already has in
 * flight here, so that a slow endpoint cannot hold every slot while others wait. A delivery waits
 * while an earlier event of its order is still PENDING for the same endpoint; a claim of an instance
 * that died lapses at `claimed_until`. Due first, then oldest first, across endpoints.
 */
export async function claimDueDeliveries (
  db: Db, { limit, perEndpoint, busy, claimMs }: { limit: number, perEndpoint: number, busy: ReadonlyMap<number, number>, claimMs: number }
): Promise<ClaimedDelivery[]> {
  const result = await sql<ClaimedDelivery>`
    with busy as (
      select * from unnest(${[...busy.keys()].map(String)}::bigint[], ${[...busy.values()]}::integer[]) as b (endpoint_id, in_flight)
    ), due as (
      select d.id from webhook_endpoints w
      cross join lateral (
        select d.id, d.next_attempt_at from webhook_deliveries d
        where d.endpoint_id = w.id and d.status = 'PENDING' and d.next_attempt_at <= now()
          and (d.claimed_until is null or d.claimed_until < now())
          and not exists (
            select 1 from webhook_deliveries p
            where p.endpoint_id = d.endpoint_id and p.order_id = d.order_id and p.status = 'PENDING' and p.sequence < d.sequence)
        order by d.next_attempt_at, d.id
        limit greatest(0, ${perEndpoint}::integer - coalesce((select b.in_flight from busy b where b.endpoint_id = w.id), 0))
        for update of d skip locked
      ) d
      where w.status = 'ACTIVE' and w.deleted_at is null
      order by d.next_attempt_at, d.id
      limit ${limit}
    ), claimed as (
      update webhook_deliveries c set claimed_until = now() + ${claimMs} * interval '1 millisecond'
      from due where c.id = due.id
      returning c.id, c.endpoint_id, c.event_id, c.attempts, c.schedule_start, c.claimed_until
    )
    select c.id, c.endpoint_id, c.attempts, c.schedule_start, c.claimed_until,
      w.url, w.secret, w.previous_secret, w.previous_secret_expires_at,
      e.id as event_id, e.type as event_type, e.order_id, e.sequence, e.snapshot, e.created_at as event_created_at
    from claimed c
    join webhook_endpoints w on w.id = c.endpoint_id
    join events e on e.id = c.event_id
    order by c.id`.execute(db)
  return result.rows
}

/** The outcome of one attempt, recorded only while the claim is still this instance's. */
export interface AttemptOutcome {
  status: DeliveryStatus
  responseStatus: number | null
  error: string | null
  /** When PENDING: the delay until the next attempt. */
  retryInMs?: number
}

/** One attempt's outcome with the claim it was made under. */
export interface RecordedAttempt {
  delivery: { id: number, claimed_until: Date }
  outcome: AttemptOutcome
}

/**
 * Records attempts' outcomes, all in one statement, each only while its claim is still this
 * instance's. A delivery stopped meanwhile (its endpoint disabled or deleted) is not made PENDING
 * again. The rows travel as arrays, so the statement's text is the same for any number of them.
 */
export async function recordAttempts (db: Db, attempts: readonly RecordedAttempt[]): Promise<void> {
  if (attempts.length === 0) return
  const column = <T>(pick: (attempt: RecordedAttempt) => T) => attempts.map(pick)
  await sql`
    update webhook_deliveries d set
      status = v.status,
      attempts = d.attempts + 1,
      last_attempt_at = now(),
      last_response_status = v.response_status,
      last_error = v.error,
      next_attempt_at = now() + v.retry_ms * interval '1 millisecond',
      claimed_until = null
    from unnest(
      ${column(a => String(a.delivery.id))}::bigint[],
      ${column(a => a.delivery.claimed_until.toISOString())}::timestamptz[],
      ${column(a => a.outcome.status)}::text[],
      ${column(a => a.outcome.responseStatus)}::integer[],
      ${column(a => a.outcome.error)}::text[],
      ${column(a => String(a.outcome.retryInMs ?? 0))}::bigint[]
    ) as v (id, claimed_until, status, response_status, error, retry_ms)
    where d.id = v.id and d.claimed_until = v.claimed_until
      and (v.status = 'SUCCEEDED' or d.status = 'PENDING')`.execute(db)
}

/** Gives a claim back unattempted (the instance is stopping). */
export async function releaseClaim (db: Db, delivery: { id: number, claimed_until: Date }): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ claimed_until: null })
    .where('id', '=', delivery.id).where('claimed_until', '=', delivery.claimed_until).execute()
}
