import { mkdir } from 'node:fs/promises'
import { Kysely, Migrator, PostgresDialect, type LogEvent, type MigrationProvider } from 'kysely'
import pg from 'pg'
import Cursor from 'pg-cursor'
import type { Config } from '../config.js'
import { migrations } from '../migrations/index.js'
import { claimDataDir } from './data-dir-lock.js'
import { PGliteDialect } from './pglite-dialect.js'
import { kyselyPool } from './prepared.js'
import type { Database, Db } from './schema.js'

export interface DatabaseHandle {
  readonly db: Db
  /** `postgres` for a server given by DATABASE_URL, `pglite` for the embedded database. */
  readonly kind: 'postgres' | 'pglite'
  /** The connection pool's state right now; absent for PGlite (one embedded session, no pool). */
  readonly poolStats?: () => PoolStats
  close (): Promise<void>
}

export interface PoolStats {
  /** Connections open (idle + in use). */
  total: number
  idle: number
  /** Callers waiting for a connection. */
  waiting: number
  /** The pool's maximum size. */
  max: number
}

/** What a statement does, for metrics (never the SQL text: label cardinality and secrets). */
export type QueryKind = 'select' | 'insert' | 'update' | 'delete' | 'other'

/** Told of every statement run through a database opened here (Kysely's `log`): its kind, seconds, and whether it failed. */
export type QueryObserver = (kind: QueryKind, seconds: number, failed: boolean) => void

let queryObserver: QueryObserver | undefined

/** Sets the one process-wide query observer (the metrics module); `undefined` stops observing. */
export function observeQueries (observer: QueryObserver | undefined): void {
  queryObserver = observer
}

const NODE_KINDS: Record<string, QueryKind> = {
  SelectQueryNode: 'select',
  InsertQueryNode: 'insert',
  UpdateQueryNode: 'update',
  DeleteQueryNode: 'delete',
}
const RAW_KIND = /^\s*(select|insert|update|delete)\b/i

function queryKind (event: LogEvent): QueryKind {
  const nodeKind = event.query.query.kind
  if (nodeKind !== 'RawNode') return NODE_KINDS[nodeKind] ?? 'other'
  // sql`...` templates and begin/commit: the leading keyword says enough.
  const match = RAW_KIND.exec(event.query.sql)
  return match ? match[1]!.toLowerCase() as QueryKind : 'other'
}

/** Kysely's `log` option: times every query (and failure) for the observer, if there is one. */
function logQuery (event: LogEvent): void {
  if (queryObserver) queryObserver(queryKind(event), event.queryDurationMillis / 1000, event.level === 'error')
}

const INT8_OID = 20
// bigint columns (ids, money in minor units) arrive as JS numbers: every value we store stays
// below 2^53 (ids come from sequences; amounts are bounded by the schemas).
const parseInt8 = (value: string) => Number(value)

const TIMESTAMPTZ_OID = 1184
const parseTimestamptzSlowly = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (value: string) => Date
const ZERO = 48

/** The number written by the `length` ASCII digits at `at`, or NaN if one is not a digit. */
function digits (text: string, at: number, length: number): number {
  let value = 0
  for (let i = at; i < at + length; i++) {
    const digit = text.charCodeAt(i) - ZERO
    if (digit < 0 || digit > 9) return NaN
    value = value * 10 + digit
  }
  return value
}

/**
 * A `timestamptz` as PostgreSQL writes it with DateStyle ISO, `2026-11-24 07:40:21.123456+00`
 * (fraction optional, offset `±HH`, `±HH:MM` or `±HH:MM:SS`), read by position, to the
 * millisecond (truncated, as pg's own parser does). Anything else (years before 1000 or after 9999,
 * BC, infinity, another DateStyle) goes to pg's parser (postgres-date), which reads every
 * timestamp with regular expressions: in a list of 20 orders, that was 6% of the service's time
 * (bench/RESULTS.md). Exported for its test.
 */
export function parseTimestamptz (text: string): Date {
  const length = text.length
  if (length < 22 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32 ||
    text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return parseTimestamptzSlowly(text)
  const year = digits(text, 0, 4)
  const month = digits(text, 5, 2)
  const day = digits(text, 8, 2)
  const hour = digits(text, 11, 2)
  const minute = digits(text, 14, 2)
  const second = digits(text, 17, 2)
  let at = 19
  let ms = 0
  if (text.charCodeAt(at) === 46) { // '.', then 1 to 6 digits
    let scale = 100
    at++
    while (at < length) {
      const digit = text.charCodeAt(at) - ZERO
      if (digit < 0 || digit > 9) break
      ms += digit * scale
      scale /= 10
      at++
    }
    ms = Math.floor(ms)
  }
  const sign = text.charCodeAt(at) === 43 ? 1 : text.charCodeAt(at) === 45 ? -1 : 0
  const rest = length - at - 1 // after the sign: HH, HH:MM or HH:MM:SS
  if (year < 1000 || sign === 0 || (rest !== 2 && rest !== 5 && rest !== 8) ||
    (rest > 2 && text.charCodeAt(at + 3) !== 58) || (rest > 5 && text.charCodeAt(at + 6) !== 58)) return parseTimestamptzSlowly(text)
  const offset = digits(text, at + 1, 2) * 3600 + (rest > 2 ? digits(text, at + 4, 2) * 60 : 0) + (rest > 5 ? digits(text, at + 7, 2) : 0)
  const time = Date.UTC(year, month - 1, day, hour, minute, second, ms) - sign * offset * 1000
  return Number.isNaN(time) ? parseTimestamptzSlowly(text) : new Date(time)
}

export interface OpenOptions {
  /**
   * Told of every statement this handle sends, BEGIN and COMMIT included, once it has run (each is
   * one round trip to the database). For tests that count what a request costs the database.
   */
  onStatement?: (sql: string) => void
}

/**
 * Opens the database named by the configuration: PostgreSQL when `DATABASE_URL` is set, otherwise
 * embedded PGlite in `DATA_DIR` (`memory` keeps nothing).
 */
export async function openDatabase (
  config: Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'databasePreparedStatements' | 'dataDir'>,
  options: OpenOptions = {}
): Promise<DatabaseHandle> {
  const { onStatement } = options
  const log = onStatement
    ? (event: LogEvent) => { onStatement(event.query.sql); logQuery(event) }
    : logQuery
  if (config.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectionTimeoutMillis: 5_000,
      application_name: 'order-service',
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? parseInt8 : oid === TIMESTAMPTZ_OID && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
      },
    })
    // A client losing its server must not crash the process: an idle one reports through the pool,
    // and one that is checked out (by Kysely, between the statements of a request) emits 'error'
    // itself, which with no listener would be an uncaught exception. The query in flight, or the
    // next one, fails and becomes a 503 (src/db/errors.ts).
    pool.on('error', () => {})
    pool.on('connect', client => client.on('error', () => {}))
    // Cursor: `.stream()` reads large results (the CSV export) through a server-side cursor.
    const dialect = new PostgresDialect({ pool: kyselyPool(pool, { prepare: config.databasePreparedStatements }), cursor: Cursor })
    const db = new Kysely<Database>({ dialect, log })
    const max = config.databasePoolSize
    const poolStats = (): PoolStats => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max })
    return { db, kind: 'postgres', poolStats, close: () => db.destroy() }
  }

  const { PGlite } = await import('@electric-sql/pglite')
  const inMemory = config.dataDir === 'memory'
  let release = async () => {}
  if (!inMemory) {
    await mkdir(config.dataDir, { recursive: true })
    release = await claimDataDir(config.dataDir)
  }
  const pglite = new PGlite(inMemory ? undefined : config.dataDir, { parsers: { [INT8_OID]: parseInt8 } })
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite), log })
  return { db, kind: 'pglite', close: () => db.destroy().finally(release) }
}

const provider: MigrationProvider = { getMigrations: async () => migrations }

/**
 * Applies pending migrations. Kysely's migrator holds a PostgreSQL advisory lock while it runs,
 * so instances starting together apply each migration once and wait for each other.
 */
export async function migrate (db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest()
  if (error) {
    const failed = results?.find(result => result.status === 'Error')
    const which = failed ? `migration ${failed.migrationName} failed` : 'migrations could not run (is the database reachable?)'
    throw new Error(`Database ${which}: ${String((error as Error).message ?? error)}`, { cause: error })
  }
}
