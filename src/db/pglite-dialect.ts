import type { PGlite } from '@electric-sql/pglite'
import {
  CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler,
  type DatabaseConnection, type DatabaseIntrospector, type Dialect, type DialectAdapter,
  type Driver, type Kysely, type QueryCompiler, type QueryResult, type TransactionSettings,
} from 'kysely'

/**
 * Kysely dialect for embedded PGlite. PGlite is one session, so the driver hands out its single
 * connection to one holder at a time (a transaction keeps it until commit or rollback); the
 * others wait in line, which gives them the same isolation a pool of server connections would.
 */
export class PGliteDialect implements Dialect {
  constructor (private readonly pglite: PGlite) {}

  createAdapter (): DialectAdapter { return new PostgresAdapter() }
  createDriver (): Driver { return new PGliteDriver(this.pglite) }
  createQueryCompiler (): QueryCompiler { return new PostgresQueryCompiler() }
  createIntrospector (db: Kysely<unknown>): DatabaseIntrospector { return new PostgresIntrospector(db) }
}

const WRITE_COMMANDS = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE'])

class PGliteConnection implements DatabaseConnection {
  /** Set by the driver between begin and commit/rollback. */
  inTransaction = false
  #cursors = 0

  constructor (private readonly pglite: PGlite) {}

  async executeQuery<R> (query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.pglite.query<R>(query.sql, query.parameters as unknown[])
    const writes = result.command !== undefined && WRITE_COMMANDS.has(result.command)
    return writes ? { rows: result.rows, numAffectedRows: BigInt(result.rowCount ?? 0) } : { rows: result.rows }
  }

  /**
   * Streams through a server-side cursor, `chunkSize` rows at a time, so a large result never sits
   * in memory whole. Outside a transaction it opens one for the cursor's lifetime; the connection
   * (PGlite's only session) stays with the stream until it ends.
   */
  async * streamQuery<R> (query: CompiledQuery, chunkSize = 1000): AsyncIterableIterator<QueryResult<R>> {
    const cursor = `kysely_stream_${++this.#cursors}`
    const ownTransaction = !this.inTransaction
    if (ownTransaction) await this.pglite.query('begin')
    try {
      await this.pglite.query(`declare ${cursor} no scroll cursor for ${query.sql}`, query.parameters as unknown[])
      while (true) {
        const { rows } = await this.pglite.query<R>(`fetch ${Math.max(1, Math.floor(chunkSize))} from ${cursor}`)
        if (rows.length === 0) break
        yield { rows }
      }
      await this.pglite.query(`close ${cursor}`)
    } finally {
      if (ownTransaction) await this.pglite.query('rollback')
      else await this.pglite.query(`close ${cursor}`).catch(() => {})
    }
  }
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection
  #queue: Promise<void> = Promise.resolve()
  #release: (() => void) | undefined

  constructor (private readonly pglite: PGlite) {
    this.#connection = new PGliteConnection(pglite)
  }

  async init (): Promise<void> { await this.pglite.waitReady }

  async acquireConnection (): Promise<DatabaseConnection> {
    const previous = this.#queue
    let release!: () => void
    this.#queue = new Promise<void>(resolve => { release = resolve })
    await previous
    this.#release = release
    return this.#connection
  }

  async releaseConnection (): Promise<void> {
    const release = this.#release
    this.#release = undefined
    release?.()
  }

  async beginTransaction (connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : ''
    await connection.executeQuery(CompiledQuery.raw(`begin${isolation}`))
    this.#connection.inTransaction = true
  }

  async commitTransaction (connection: DatabaseConnection): Promise<void> {
    this.#connection.inTransaction = false
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction (connection: DatabaseConnection): Promise<void> {
    this.#connection.inTransaction = false
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async destroy (): Promise<void> {
    await this.#queue
    await this.pglite.close()
  }
}
