import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import pg from 'pg'

/** At most this many distinct statement texts are prepared; any beyond run unprepared. */
const MAX_PREPARED = 1000

/**
 * The pool Kysely uses on PostgreSQL: pg's pool, with two things done for every statement.
 *
 * **Prepared statements** (unless `prepare` is false, for PgBouncer in transaction mode:
 * DATABASE_PREPARED_STATEMENTS). Statements with parameters run as named prepared statements:
 * PostgreSQL parses and plans each one once per connection instead of on every call. For the short
 * queries behind most requests, parsing and planning cost PostgreSQL more than running them. The SQL
 * text names the statement, and each connection prepares it the first time it runs it. Kysely builds
 * SQL from a fixed set of query shapes, so the set of texts is small. It is still capped at
 * MAX_PREPARED, so an unexpected variety cannot grow every connection's memory without bound. After
 * a migration changes a table, a connection's prepared `select *` can fail once with "cached plan
 * must not change result type". Such a connection is closed when it is released, so the next
 * request gets a fresh one. The failed statement answers 503 (src/db/errors.ts).
 * Measured: bench/RESULTS.md, "What each change bought".
 *
 * **pg's callback form**, not its promise form. With the promise form, V8 came to allocate pg's
 * result rows and their Dates straight in the old generation ("allocation-site pretenuring"), where
 * they died and waited for a full collection while resident memory grew. Callbacks made that rarer,
 * not impossible, so the server also turns that pretenuring off at start-up (src/server.ts).
 * Measured: bench/RESULTS.md, "The heap".
 */
export function kyselyPool (pool: pg.Pool, options: { prepare: boolean }): PostgresPool {
  const limit = options.prepare ? MAX_PREPARED : 0
  const names = new Map<string, string>()
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text)
    if (name === undefined && names.size < limit) {
      name = `order_service_${names.size + 1}`
      names.set(text, name)
    }
    return name
  }
  const wrappers = new WeakMap<pg.PoolClient, PreparingClient>()

  return {
    async connect () {
      const client = await pool.connect()
      let wrapper = wrappers.get(client)
      if (!wrapper) {
        wrapper = new PreparingClient(client, nameOf)
        wrappers.set(client, wrapper)
      }
      return wrapper
    },
    end: () => pool.end(),
  }
}

/** True for PostgreSQL's refusal to run a prepared statement whose tables changed shape. */
export function isStalePlan (error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown, message?: unknown }
  return code === '0A000' && typeof message === 'string' && message.startsWith('cached plan must not change result type')
}

class PreparingClient implements PostgresPoolClient {
  #stale = false

  constructor (private readonly client: pg.PoolClient, private readonly nameOf: (text: string) => string | undefined) {}

  query<R> (sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>
  query<R> (cursor: PostgresCursor<R>): PostgresCursor<R>
  query<R> (sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof sqlOrCursor !== 'string') return (this.client as unknown as PostgresPoolClient).query(sqlOrCursor)
    // Without parameters (begin, commit, DDL) pg uses the simple protocol, which prepares nothing.
    const name = parameters && parameters.length > 0 ? this.nameOf(sqlOrCursor) : undefined
    const values = (parameters ?? []) as unknown[]
    return new Promise((resolve, reject) => {
      this.client.query(namedQuery(name, sqlOrCursor, values, (error: Error | undefined, result: pg.QueryResult) => {
        if (!error) return resolve(result as unknown as PostgresQueryResult<R>)
        if (isStalePlan(error)) this.#stale = true
        reject(error)
      }))
    })
  }

  release (): void {
    // A connection holding a stale statement is closed rather than returned to the pool.
    const stale = this.#stale
    this.#stale = false
    this.client.release(stale || undefined)
  }
}

/**
 * pg's query for `text`, prepared as `name` when there is one. Built from the text, not from a
 * `{ name, text, values }` config: pg copies a config object property by property through its
 * descriptors (`cloneQueryConfig`), which cost more than the rest of sending a statement
 * (bench/RESULTS.md, issue 22). A `pg.Query` is what pg would build from the config, `name` included.
 */
function namedQuery (name: string | undefined, text: string, values: unknown[], callback: (error: Error | undefined, result: pg.QueryResult) => void): pg.Query {
  const query = new (pg.Query as unknown as new (text: string, values: unknown[], callback: unknown) => pg.Query & { name?: string })(text, values, callback)
  query.name = name
  return query
}
