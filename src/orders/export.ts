import { Readable } from 'node:stream'
import type { Db } from '../db/schema.js'
import { parseSort } from '../http/paging.js'
import { orderFilter } from './queries.js'
import { EXPORT_HEADER, streamOrderRecords } from './repository.js'
import { ORDER_SORT, type AdminOrderExportQuery } from './schemas.js'

/** Up to this many characters are sent per write: fewer, larger chunks. */
const CHUNK_CHARS = 64 * 1024

/**
 * The admin export: every order the filters match, in the requested order, as CSV (RFC 4180; the
 * records are built by PostgreSQL, see streamOrderRecords). Rows come from a database cursor and
 * leave as they arrive; the stream's backpressure paces the cursor, so memory stays flat whatever
 * the row count and however slowly the client reads.
 */
export function exportOrdersCsv (db: Db, query: AdminOrderExportQuery): Readable {
  // Parsed before streaming starts, so bad parameters are still a 400 envelope.
  const filter = { ...orderFilter(query), includeDeleted: true, sort: parseSort(query.sort, ORDER_SORT) }
  async function * csv () {
    let chunk = EXPORT_HEADER
    for await (const { record } of streamOrderRecords(db, filter)) {
      chunk += record
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk
        chunk = ''
      }
    }
    if (chunk) yield chunk
  }
  return Readable.from(csv(), { objectMode: false })
}
