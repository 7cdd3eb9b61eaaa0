import { CompiledQuery, type QueryResult, type RawBuilder } from 'kysely'
import type { Db } from './schema.js'

/** Where a statement built once takes a value of each run: the run's value of that name. */
class Slot {
  constructor (readonly name: string) {}
}

/**
 * A statement whose SQL is built and compiled once, on its first run, and then only given its
 * values. `build` receives stand-ins for the values by name and writes them into the `sql`
 * template as it would write the values themselves; everything else in it (literals, constant
 * parameters, the shape of the SQL) must not depend on the values. For the long statements of the
 * hot paths, building Kysely's tree and compiling it cost more than running them through pg, and a
 * text that is the same string every time is also found at once among the prepared statements
 * (src/db/prepared.ts). Measured in bench/RESULTS.md, "What each change bought".
 */
export class StatementOnce<V extends Record<string, unknown>, R> {
  #compiled: { sql: string, parameters: ReadonlyArray<(values: V) => unknown> } | undefined

  constructor (private readonly build: (values: V) => RawBuilder<R>) {}

  async execute (db: Db, values: V): Promise<QueryResult<R>> {
    const compiled = this.#compiled ??= this.#compile(db)
    return db.executeQuery<R>(CompiledQuery.raw(compiled.sql, compiled.parameters.map(parameter => parameter(values))) as CompiledQuery<R>)
  }

  /** Every dialect here compiles PostgreSQL's SQL, so the first handle's compiler serves them all. */
  #compile (db: Db): { sql: string, parameters: ReadonlyArray<(values: V) => unknown> } {
    const slots = new Proxy({}, { get: (_, name) => new Slot(String(name)) }) as V
    const { sql, parameters } = this.build(slots).compile(db)
    return {
      sql,
      parameters: parameters.map(parameter => parameter instanceof Slot
        ? (values: V) => values[parameter.name]
        : () => parameter),
    }
  }
}
