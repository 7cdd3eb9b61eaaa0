import { isStorableTime } from '../limits.js'
import { invalidParam } from '../errors.js'
import { DEFAULT_SLICE_SIZE } from './schemas.js'

/** A position in a newest-first list: the last row's creation time and id. */
export interface KeysetPosition {
  createdAt: Date
  id: number
}

/** Opaque to clients: base64url of `[createdAt ISO, id]`. */
export function encodeCursor (position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url')
}

export function decodeCursor (cursor: string): KeysetPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]
    const date = new Date(String(createdAt))
    if (typeof createdAt === 'string' && isStorableTime(date.getTime()) && Number.isSafeInteger(id) && (id as number) > 0) {
      return { createdAt: date, id: id as number }
    }
  } catch {}
  throw invalidParam('cursor', 'is not a cursor this API issued; pass the nextCursor of the previous slice')
}

export interface SliceRequest {
  size?: number | undefined
  cursor?: string | undefined
  page?: number | undefined
}

/** Either a keyset position (cursor) or an offset (page); both at once is a 400 naming `cursor`. */
export function sliceWindow (query: SliceRequest): { after?: KeysetPosition, offset: number, limit: number, size: number } {
  if (query.cursor !== undefined && query.page !== undefined) {
    throw invalidParam('cursor', 'cannot be combined with page; send one of them')
  }
  const size = query.size ?? DEFAULT_SLICE_SIZE
  const limit = size + 1 // one extra row tells whether there is a next slice
  if (query.cursor !== undefined) return { after: decodeCursor(query.cursor), offset: 0, limit, size }
  return { offset: (query.page ?? 0) * size, limit, size }
}

/** Builds the slice shape from up to `size + 1` rows fetched in list order. */
export function toSlice<Row extends { created_at: Date, id: number }, Item> (
  rows: Row[], size: number, toItem: (row: Row) => Item
): { content: Item[], size: number, hasNext: boolean, nextCursor: string | null } {
  const hasNext = rows.length > size
  const page = hasNext ? rows.slice(0, size) : rows
  const last = page.at(-1)
  return {
    content: page.map(toItem),
    size,
    hasNext,
    nextCursor: hasNext && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : null,
  }
}

/** Parses `A,B,C` into values of a closed set; anything else is a 400 naming `field`. */
export function parseList<T extends string> (field: string, value: string | undefined, allowed: readonly T[]): T[] | undefined {
  if (value === undefined) return undefined
  const items = value.split(',').map(item => item.trim())
  const unknown = items.filter(item => !(allowed as readonly string[]).includes(item))
  if (unknown.length > 0) throw invalidParam(field, `must be one or more of ${allowed.join(', ')}, comma-separated`)
  return [...new Set(items)] as T[]
}

export interface PageRequest {
  page?: number | undefined
  size?: number | undefined
}

/** The offset and limit of a page. */
export function pageWindow (query: PageRequest): { page: number, size: number, offset: number, limit: number } {
  const page = query.page ?? 0
  const size = query.size ?? DEFAULT_SLICE_SIZE
  return { page, size, offset: page * size, limit: size }
}

/** Builds the page shape from one page of rows and the count of all matching rows. */
export function toPage<Row, Item> (rows: Row[], total: number, window: { page: number, size: number }, toItem: (row: Row) => Item) {
  const totalPages = Math.ceil(total / window.size)
  return {
    content: rows.map(toItem),
    page: window.page,
    size: window.size,
    totalElements: total,
    totalPages,
    first: window.page === 0,
    last: window.page >= totalPages - 1,
  }
}

export interface Sort<Column extends string> {
  column: Column
  direction: 'asc' | 'desc'
}

/**
 * `createdAt,desc` → the column it sorts on and the direction. The query schema has already checked
 * the field against the list's sortable fields. No sort → the first field, newest first (desc); a
 * field without a direction sorts ascending, as `sort=name` does in Spring-style APIs.
 */
export function parseSort<Field extends string, Column extends string> (value: string | undefined, columns: Readonly<Record<Field, Column>>): Sort<Column> {
  if (value === undefined) return { column: Object.values<Column>(columns)[0]!, direction: 'desc' }
  const [field, direction] = value.split(',')
  return { column: columns[field as Field], direction: direction === 'desc' ? 'desc' : 'asc' }
}
