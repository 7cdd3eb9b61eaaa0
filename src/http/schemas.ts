import { Type, type TSchema } from 'typebox'

/**
 * Shared schema primitives: one definition each, used for validation, serialization and OpenAPI.
 */

/** A resource id in a body or response: a positive integer that survives a JSON number (≤ 2^53−1). */
export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })

/** An id in a path: digits only, positive, at most 9223372036854775807 (the `id64` format). */
export const PathId = Type.String({ format: 'id64', description: 'A positive 64-bit integer', examples: ['42'] })

/** A path `{id}`. */
export const IdParams = Type.Object({ id: PathId }, { additionalProperties: false })

/** RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-22T09:30:00.000Z`. */
export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T09:30:00.000Z'] })

/** A timestamp in a query: RFC 3339 with `Z` or an explicit offset (the `timestamp` format). */
export const TimestampQuery = Type.String({ format: 'timestamp', examples: ['2026-11-22T09:30:00.000Z'] })

/** An amount of money in minor units of the deployment's currency (cents for USD). */
export const Money = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const Currency = Type.String({ pattern: '^[A-Z]{3}$', examples: ['USD'] })

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

/** The idempotency key rule (CONTRACT §3): 1..255 printable ASCII characters; UUID v4 recommended. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x20-\\x7E]{1,255}$'

/** The body's `idempotencyKey`, in every body that may carry one. */
export const IdempotencyKeyField = Type.Optional(Type.String({
  pattern: IDEMPOTENCY_KEY_PATTERN,
  description: 'Alternative to the Idempotency-Key header',
}))

/** The `Idempotency-Key` header, on every route that takes a key. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: '1..255 printable ASCII characters; a UUID v4 is recommended' })),
})

export const DEFAULT_SLICE_SIZE = 20
/** Far beyond any real list, and small enough that page × size is an offset the database accepts. */
export const MAX_PAGE = 1_000_000

/** Query of every slice (cursor) list: `size`, and `cursor` or `page`. */
export const SliceQuery = {
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_SLICE_SIZE, description: 'Slice size, 1..100 (default 20)' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The nextCursor of the previous slice' })),
  page: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PAGE, description: 'Zero-based page; not together with cursor' })),
}

/** The cursor (slice) list shape, for members' own lists. */
export const Slice = <T extends TSchema>(item: T) => Type.Object({
  content: Type.Array(item),
  size: Type.Integer(),
  hasNext: Type.Boolean(),
  nextCursor: Nullable(Type.String()),
})

/** Query of every admin (offset) list: `page`, `size` and `sort` (`field,asc|desc`). */
export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PAGE, default: 0, description: 'Zero-based page (default 0)' })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_SLICE_SIZE, description: 'Page size, 1..100 (default 20)' })),
}

/** `sort=field[,asc|desc]` over the list's sortable `fields` (the first is the default). */
export const SortQuery = (fields: readonly string[]) => ({
  sort: Type.Optional(Type.Enum(fields.flatMap(field => [field, `${field},asc`, `${field},desc`]), {
    description: `Sort field, optionally followed by ,asc or ,desc (ascending when not given); ties are broken by id in the same direction. Without sort: ${fields[0]},desc`,
  })),
})

/** The offset (page) list shape, for admin lists. */
export const Page = <T extends TSchema>(item: T) => Type.Object({
  content: Type.Array(item),
  page: Type.Integer(),
  size: Type.Integer(),
  totalElements: Type.Integer(),
  totalPages: Type.Integer(),
  first: Type.Boolean(),
  last: Type.Boolean(),
})

/** Success envelope `{success: true, data, error: null}` around `data`. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({
  success: Type.Literal(true),
  data,
  error: Type.Null(),
})

export const InvalidParamSchema = Type.Object({
  field: Type.String(),
  message: Type.String(),
})

export const ProblemSchema = Type.Object({
  type: Type.String({ format: 'uri' }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  instance: Type.String(),
  code: Type.String(),
  timestamp: Timestamp,
  invalidParams: Type.Optional(Type.Array(InvalidParamSchema)),
}, { $id: 'Problem' })

/** Error envelope `{success: false, data: null, error}`; shared by every route's 4xx/5xx responses. */
export const ErrorEnvelope = Type.Object({
  success: Type.Literal(false),
  data: Type.Null(),
  error: Type.Ref('Problem'),
}, { $id: 'ErrorEnvelope' })

/** The success envelope's value, e.g. `reply.send(ok(order))`. */
export const ok = <T>(data: T) => ({ success: true as const, data, error: null })

/**
 * A name a person chose (member, product, category, API key): no control characters, i.e. Unicode
 * Cc, U+0000–U+001F and U+007F–U+009F (CONTRACT §11), so that a name cannot break a line of a mail,
 * a log or a CSV export. U+0000 is left out of the pattern: the wire rule refuses it in every string,
 * with a message of its own. E.g. `PlainName({ minLength: 1, maxLength: 100 })`.
 */
/** No control characters (Unicode Cc) but U+0000, which the wire rule refuses with a message of its own. */
export const PLAIN_NAME_PATTERN = '^[^\\u0001-\\u001F\\u007F-\\u009F]*$'

export const PlainName = (options: Parameters<typeof Type.String>[0] = {}) => Type.String({
  description: 'Any text without control characters (Unicode Cc)',
  ...options,
  pattern: PLAIN_NAME_PATTERN,
})
