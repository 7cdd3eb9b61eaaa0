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

/**
 * Opens the database named by the configuration: PostgreSQL when `DATABASE_URL` is set, otherwise
 * embedded PGlite in `DATA_DIR` (`memory` keeps nothing).
 */
export async function openDatabase (config: Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'databasePreparedStatements' | 'dataDir'>): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectionTimeoutMillis: 5_000,
      application_name: 'order-service',
      types: {
        getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
          oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
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
    const db = new Kysely<Database>({ dialect, log: logQuery })
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
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite), log: logQuery })
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
