import { Readable } from 'node:stream'
import { CompiledQuery, sql, type AliasedRawBuilder, type DatabaseConnection, type ExpressionBuilder, type RawBuilder } from 'kysely'
import type { Connection } from 'pg'
import { to as copyTo } from 'pg-copy-streams'
import type { Database, Db } from '../db/schema.js'
import { parseSort, type Sort } from '../http/paging.js'
import { orderConditions, type OrderFilter, type OrderSortColumn } from './repository.js'
import { ORDER_SORT, type AdminOrderExportQuery } from './schemas.js'
import { orderFilter } from './service.js'

/*
 * The export is written by PostgreSQL, in one of two ways:
 *
 * - On a PostgreSQL server, `COPY (select …) TO STDOUT WITH (FORMAT csv)` through pg-copy-streams:
 *   PostgreSQL quotes the fields in C (a field holding a comma, quote, CR or LF is quoted, quotes
 *   doubled: RFC 4180 exactly) and the service passes its bytes on, changing only each record's
 *   end from LF to CRLF (crlfInPlace). This replaced the cursor below there: per row, `concat`,
 *   the regular expressions and the fetches cost PostgreSQL more than COPY does, and pg parsing
 *   one row object per order cost the service more than passing buffers on. COPY also runs the
 *   statement to its end at once, so PostgreSQL may plan it in parallel (as
 *   max_parallel_workers_per_gather allows), which it never does for a cursor.
 * - On PGlite, whose COPY writes only one whole file in memory, through a cursor of whole CSV
 *   records that PostgreSQL builds with `concat` (csvText quotes), 2,000 rows a fetch.
 *
 * Both hold one connection for the whole export and select the same values; the tests compare
 * whole bodies on both backends.
 */

/**
 * Text that a spreadsheet would run as a formula (CONTRACT §18, §18.1), as a PostgreSQL regular
 * expression: it starts with a tab or CR, or its first character after Unicode white space (the
 * White_Space property, spelt out: PostgreSQL's `[[:space:]]` knows only ASCII under the C locale),
 * U+200B–U+200D, U+2060 and U+FEFF is one of = + - @ or their full-width forms ＝ ＋ － ＠.
 */
const SKIPPED = '\\t\\n\\v\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\u200B-\\u200D\\u2060\\uFEFF'
const FORMULA = `^[\\t\\r]|^[${SKIPPED}]*[-=+@\\uFF1D\\uFF0B\\uFF0D\\uFF20]`
const FORMULA_SQL = sql.raw(`'${FORMULA}'`)
const GUARD_OR_QUOTE_SQL = sql.raw(`'${FORMULA}|[",\\r\\n]'`)

/**
 * One text column as a CSV value, before quoting: text that would run as a formula gets a leading
 * `'`, and the empty string becomes NULL, since both NULL and '' are written as an empty field
 * (COPY would quote '' to tell it from NULL).
 */
function guardedText (column: string): RawBuilder<string | null> {
  const value = sql.ref(column)
  return sql`case when ${value} ~ ${FORMULA_SQL} then '''' || ${value} else nullif(${value}, '') end`
}

/**
 * The same as a quoted CSV field (RFC 4180), for the PGlite path: quoted when it holds a comma,
 * quote or line break, with quotes doubled. Most values need neither the guard nor quotes, and one
 * regular expression tells. (In PostgreSQL's regular expressions, `\t`, `\r` and `\n` are tab,
 * CR and LF.) NULL stays NULL, which `concat` writes as an empty field.
 */
function csvText (column: string): RawBuilder<string | null> {
  const value = sql.ref(column)
  const guarded = guardedText(column)
  const quoted = sql`case when ${value} ~ '[",\\r\\n]' then '"' || replace(${guarded}, '"', '""') || '"' else ${guarded} end`
  return sql`case when ${value} ~ ${GUARD_OR_QUOTE_SQL} then ${quoted} else ${value} end`
}

/** A timestamp as the API writes it (`2026-11-23T14:05:09.120Z`). */
const isoTimestamp = (column: string): RawBuilder<string> =>
  sql`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * The CSV export's columns in order: the header's name and the value, which for free text
 * (`text: true`) still needs quoting. Numbers, statuses and timestamps never need quoting.
 */
const EXPORT_COLUMNS: ReadonlyArray<readonly [name: string, value: RawBuilder<unknown> | string, text?: true]> = [
  ['orderId', 'orders.id'],
  ['customerId', 'orders.customer_id'],
  ['customerEmail', 'members.email', true],
  ['status', 'orders.status'],
  ['itemCount', 'orders.item_count'],
  ['totalAmount', 'orders.total_amount'],
  ['currency', sql`rtrim(${sql.ref('orders.currency')})`],
  ['paymentId', 'orders.payment_id'],
  ['paymentStatus', 'payments.status'],
  ['shippingAddress', 'orders.shipping_address', true],
  ['memo', 'orders.memo', true],
  ['createdAt', isoTimestamp('orders.created_at')],
  ['updatedAt', isoTimestamp('orders.updated_at')],
  // The order's stored money and shipping (CONTRACT §15.5, §15.7), last so that readers of the
  // earlier columns keep working; balanceDue as money.ts's `balanceDue`.
  ['orderPaymentStatus', 'orders.payment_status'],
  ['fulfillmentStatus', 'orders.fulfillment_status'],
  ['paidAmount', 'orders.paid_amount'],
  ['refundedAmount', 'orders.refunded_amount'],
  ['balanceDue', sql`case when ${sql.ref('orders.status')} in ('CANCELLED', 'DELETED') then 0 else ${sql.ref('orders.total_amount')}
    - ${sql.ref('orders.credited_amount')} - (${sql.ref('orders.paid_amount')} - ${sql.ref('orders.refunded_amount')}) end`],
]

/** The export's header line. */
const EXPORT_HEADER = EXPORT_COLUMNS.map(([name]) => name).join(',') + '\r\n'

const field = (value: RawBuilder<unknown> | string): RawBuilder<unknown> => typeof value === 'string' ? sql.ref(value) : value

/** COPY's columns: each value as it is written, unquoted (COPY quotes), and an empty one to end the record (crlfInPlace). */
const copyColumns = [...EXPORT_COLUMNS.map(([name, value, text]) => (text ? guardedText(value as string) : field(value)).as(name)), sql`null`.as('end')]

/**
 * One order as a whole CSV record, CRLF included (`concat` writes NULL as nothing): one text
 * column per row costs the service far less than formatting thirteen (bench/RESULTS.md, "What each
 * change bought").
 */
const exportRecord = sql<string>`concat(${sql.join(EXPORT_COLUMNS.map(([, value, text]) => text ? csvText(value as string) : field(value)), sql`, ',', `)}, E'\\r\\n')`

type ExportFilter = OrderFilter & { sort: Sort<OrderSortColumn> }

/** Every matching order, in the requested order, as `selection`. */
function exportQuery (db: Db, filter: ExportFilter, selection: ReadonlyArray<AliasedRawBuilder<unknown, string>>): CompiledQuery {
  return db.selectFrom('orders')
    .innerJoin('members', 'members.id', 'orders.customer_id')
    .leftJoin('payments', 'payments.id', 'orders.payment_id')
    .select(selection)
    .where(eb => orderConditions(eb as unknown as ExpressionBuilder<Database, 'orders'>, filter))
    .orderBy(`orders.${filter.sort.column}`, filter.sort.direction).orderBy('orders.id', filter.sort.direction)
    .compile()
}

/** A parameter's value as an SQL literal. */
function literal (value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value < 0 ? `(${value})` : String(value)
  if (typeof value === 'bigint') return String(value)
  // An escape string: what it means does not depend on standard_conforming_strings.
  if (typeof value === 'string') return `E'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`
  if (value instanceof Date) return `timestamptz '${value.toISOString()}'`
  throw new TypeError(`no SQL literal for a ${typeof value} parameter`)
}

/**
 * The statement with its parameters written in as literals: COPY takes no parameters. Every `$n`
 * in Kysely's text is a placeholder (the statement has no dollar-quoted strings); the values are
 * the validated filters: integers, statuses and timestamps.
 */
function withLiterals ({ sql: text, parameters }: CompiledQuery): string {
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(parameters[Number(n) - 1]))
}

/**
 * Holds one connection of the database's pool (PGlite: its only session) until `release` is
 * called, so that a stream can use it across turns of the event loop.
 */
async function holdConnection (db: Db): Promise<{ connection: DatabaseConnection, release: () => void }> {
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  const connection = await new Promise<DatabaseConnection>((resolve, reject) => {
    db.getExecutor().provideConnection(async connection => { resolve(connection); await held }).catch(reject)
  })
  return { connection, release }
}

const LF = 10
const CR = 13
const QUOTE = 34
const COMMA = 44

/**
 * COPY's CSV with CRLF line ends, changed in place: COPY ends each record with a comma (an empty
 * last column, see copyColumns) and an LF, and that comma becomes the CR. An LF inside a quoted
 * field (after an odd number of quotes in the record; doubled quotes count twice) is left alone.
 * The quote state carries over from one chunk to the next, which may split a record anywhere; so
 * the returned function takes the chunk before too, not yet sent, whose last byte is the comma
 * when a chunk starts with a record's LF. Exported for its test.
 */
export function crlfInPlace (): (chunk: Buffer, previous: Buffer | undefined) => void {
  let quoted = false
  return (chunk, previous) => {
    const length = chunk.length
    let at = 0
    let quote = -2 // the first quote at or after `at`, -1 if none, -2 if not looked for yet
    while (at < length) {
      if (quote < at && quote !== -1) quote = chunk.indexOf(QUOTE, at)
      if (quoted) {
        if (quote === -1) break
        quoted = false
        at = quote + 1
        continue
      }
      const lf = chunk.indexOf(LF, at)
      if (quote !== -1 && (lf === -1 || quote < lf)) {
        quoted = true
        at = quote + 1
        continue
      }
      if (lf === -1) break
      // The comma before the LF, in the previous chunk if this one starts with the LF.
      const [holder, comma] = lf > 0 ? [chunk, lf - 1] : [previous, (previous?.length ?? 0) - 1]
      if (holder?.[comma] !== COMMA) throw new Error('a COPY record does not end with its empty last column')
      holder[comma] = CR
      at = lf + 1
    }
  }
}

/**
 * COPY on a held pg connection. Kysely hands a statement's text to pg's `client.query` as it is, and
 * the pool's client (src/db/prepared.ts) passes anything that is not a string straight to pg, as it
 * does pg-cursor's cursors: so the COPY stream goes in as the text, and pg runs it. Kysely's answer
 * (no rows) comes at once, while the stream goes on.
 */
async function * copyCsv (connection: DatabaseConnection, statement: string): AsyncGenerator<Buffer> {
  const copy = copyTo(statement)
  // Errors reach the loop below; this keeps a late one (after an abandoned export) from throwing.
  copy.on('error', () => {})
  let open = true
  copy.once('end', () => { open = false }).once('error', () => { open = false })
  try {
    await connection.executeQuery({ ...CompiledQuery.raw(''), sql: copy as unknown as string })
    const crlf = crlfInPlace()
    // Each chunk is sent once the next one has come, which may change its last byte. Nothing is
    // sent before PostgreSQL has answered: until then, a failure is still an error envelope.
    let previous: Buffer | undefined
    for await (const chunk of copy as AsyncIterable<Buffer>) {
      crlf(chunk, previous)
      yield previous ?? Buffer.from(EXPORT_HEADER)
      previous = chunk
    }
    yield previous ?? Buffer.from(EXPORT_HEADER)
  } finally {
    // An export abandoned midway (the client went away): a COPY cannot be stopped on its own
    // connection, and a cancel request needs another one, which a pool of one would not have. So
    // the connection is closed: PostgreSQL stops at its next write. Once pg has seen it close, its
    // client is no longer queryable, and the pool drops it when it is released.
    const pgConnection = (copy as unknown as { connection?: Connection }).connection
    if (open && pgConnection) {
      const closed = new Promise(resolve => pgConnection.once('end', resolve).once('error', resolve))
      pgConnection.stream.destroy()
      await closed
    }
  }
}

/** Up to this many characters are sent per write on the cursor path: fewer, larger chunks. */
const CHUNK_CHARS = 64 * 1024

/** Every matching order as CSV records through a database cursor, 2,000 rows a fetch; memory stays flat. */
async function * cursorCsv (connection: DatabaseConnection, query: CompiledQuery): AsyncGenerator<string> {
  let chunk = EXPORT_HEADER
  for await (const { rows } of connection.streamQuery<{ record: string }>(query, 2000)) {
    for (const { record } of rows) chunk += record
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk
      chunk = ''
    }
  }
  if (chunk) yield chunk
}

/**
 * The admin export: every order the filters match, in the requested order, as CSV (RFC 4180, CRLF
 * line ends; see the top of this file for how). Rows leave as PostgreSQL writes them; the stream's
 * backpressure paces the database (COPY: pg-copy-streams stops reading the socket; PGlite: the
 * cursor's next fetch), so memory stays flat whatever the row count and however slowly the client
 * reads.
 */
export function exportOrdersCsv (db: Db, kind: 'postgres' | 'pglite', query: AdminOrderExportQuery): Readable {
  // Parsed before streaming starts, so bad parameters are still a 400 envelope.
  const filter: ExportFilter = { ...orderFilter(query), includeDeleted: true, sort: parseSort(query.sort, ORDER_SORT) }
  async function * csv () {
    const { connection, release } = await holdConnection(db)
    try {
      if (kind === 'postgres') {
        const select = withLiterals(exportQuery(db, filter, copyColumns))
        yield * copyCsv(connection, `copy (${select}) to stdout with (format csv)`)
      } else {
        yield * cursorCsv(connection, exportQuery(db, filter, [exportRecord.as('record')]))
      }
    } finally {
      release()
    }
  }
  return Readable.from(csv(), { objectMode: false })
}
