import { Type, type Static, type TSchema, type TUnsafe } from 'typebox'
import { ERRORS, type ErrorCode } from '../errors.js'

/**
 * Shared schema primitives: one definition each, used for validation, serialization and OpenAPI.
 */

/**
 * Named components (CONTRACT §11, "The OpenAPI document is the client's contract"). A schema made
 * with `Component(name, schema)` carries `$id: name`; `registerOpenApi` adds every one with
 * `app.addSchema` (so responses serialise through `$ref`s and the document lists it under
 * `components.schemas`), and the validators know them too (http/validation.ts). Other schemas
 * point at it with `Ref(component)`, which keeps its static type.
 */
const COMPONENTS = new Map<string, TSchema & { $id: string }>()

export function Component<T extends TSchema> (name: string, schema: T): T & { $id: string } {
  const nested = nestedId(schema)
  if (nested !== undefined) throw new Error(`Component ${name} holds the component ${nested} inline: use Ref(${nested})`)
  const named = { ...schema, $id: name } as T & { $id: string }
  const known = COMPONENTS.get(name)
  if (known && JSON.stringify(known) !== JSON.stringify(named)) throw new Error(`Two different schemas are named ${name}`)
  if (!known && sealed) {
    throw new Error(`The component ${name} is made after an app took the components: make it when its schemas.ts module loads ` +
      '(Fastify gives shared schemas to the scopes of routes only before they are created)')
  }
  COMPONENTS.set(name, named)
  return named
}

let sealed = false

/** The `$id` of a schema nested anywhere inside `schema` (a component must refer to others, never hold them). */
function nestedId (schema: unknown): string | undefined {
  if (schema === null || typeof schema !== 'object') return undefined
  for (const child of Object.values(schema)) {
    if (child !== null && typeof child === 'object') {
      const id = (child as { $id?: unknown }).$id
      if (typeof id === 'string') return id
      const deeper = nestedId(child)
      if (deeper !== undefined) return deeper
    }
  }
  return undefined
}

/** Every component, once the feature modules are loaded; none may be made afterwards. */
export function components (): Array<TSchema & { $id: string }> {
  sealed = true
  return [...COMPONENTS.values()]
}

/**
 * A `$ref` to a named component, typed as the component. It also carries the component's
 * `properties` and `items`, not enumerable (so no serialiser, validator or document sees them), for
 * code that walks a schema's shape without resolving references: the webhook dispatcher orders a
 * body's keys by the `Event` schema.
 */
export function Ref<T extends TSchema & { $id: string }> (schema: T): TUnsafe<Static<T>> {
  const ref = Type.Unsafe<Static<T>>(Type.Ref(schema.$id))
  for (const shape of ['properties', 'items'] as const) {
    const value = (schema as Record<string, unknown>)[shape]
    if (value !== undefined) Object.defineProperty(ref, shape, { value, enumerable: false })
  }
  return ref
}

/** The component name of a schema: its `$id`, the target of its `$ref`, or `<Item>List` for an array of one. */
function nameOf (schema: TSchema): string | undefined {
  const s = schema as { $id?: string, $ref?: string, type?: string, items?: TSchema }
  if (s.$id !== undefined) return s.$id
  if (s.$ref !== undefined) return s.$ref
  if (s.type === 'null') return 'Empty'
  if (s.type === 'array' && s.items) {
    const item = nameOf(s.items)
    return item === undefined ? undefined : `${item}List`
  }
  return undefined
}

/**
 * A schema with a component name (see `nameOf`) becomes the component `<name><suffix>` built by
 * `build` from a `$ref` to it, and what is returned is a `$ref` to that; other schemas are built
 * inline. So `Envelope(Slice(OrderSummary))` is `$ref: OrderSummarySliceEnvelope` however often it is written.
 */
function named<T extends TSchema, R extends TSchema> (item: T, suffix: string, build: (item: T) => R): TUnsafe<Static<R>> {
  const name = nameOf(item)
  if (name === undefined) return Type.Unsafe<Static<R>>(build(item))
  return Ref(Component(`${name}${suffix}`, build(referenced(item))))
}

/** `schema` as another schema may hold it: a `$ref` for a component, an array of `$ref`s for an array of one. */
function referenced<T extends TSchema> (schema: T): T {
  const s = schema as { $id?: string, type?: string, items?: TSchema & { $id?: string } }
  if (s.$id !== undefined) return Type.Ref(s.$id) as unknown as T
  if (s.type === 'array' && s.items?.$id !== undefined) return { ...schema, items: Type.Ref(s.items.$id) }
  return schema
}

/** A resource id in a body or response: a positive integer that survives a JSON number (≤ 2^53−1). */
export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })

/**
 * How a schema is shown in the OpenAPI document when the service checks it in a way the client
 * should see otherwise (`x-document-as`, applied by ops/openapi.ts): a path id is validated as text
 * (so `01` and `1e3` are refused with the service's own message) but a client sends an integer.
 */
export const DOCUMENT_AS = 'x-document-as'
export const documentAs = <T extends TSchema>(schema: T, shown: Record<string, unknown>): T => ({ ...schema, [DOCUMENT_AS]: shown })

/** An id in a path: digits only, positive, at most 9223372036854775807 (the `id64` format). */
export const PathId = documentAs(Type.String({ format: 'id64', description: 'A positive 64-bit integer', examples: ['42'] }), {
  type: 'integer',
  format: 'int64',
  minimum: 1,
  // For tools that check a path's text before reading it as a number (JSON Schema applies it to strings only).
  pattern: '^[1-9][0-9]{0,18}$',
  description: 'A positive 64-bit integer (at most 9223372036854775807), written in decimal without leading zeros',
  examples: [42],
})

/** A path `{id}`. */
export const IdParams = Type.Object({ id: PathId }, { additionalProperties: false })

/** RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-22T09:30:00.000Z`. */
export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-22T09:30:00.000Z'] })

/** RFC 3339 with `Z` or an explicit offset, as a query timestamp must be written (checked by the `timestamp` format). */
export const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$'

/**
 * A timestamp in a query: RFC 3339 with `Z` or an explicit offset (the `timestamp` format). It is an
 * optional filter wherever it is used, so it has no `examples` (Swagger UI would pre-fill and apply it).
 */
export const TimestampQuery = documentAs(Type.String({ format: 'timestamp' }), {
  type: 'string',
  format: 'date-time',
  pattern: TIMESTAMP_PATTERN,
  description: 'RFC 3339 with `Z` or an offset, a real date and time in the years 0001 to 9999, e.g. `2026-11-22T09:30:00.000Z`',
})

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

/**
 * The `Idempotency-Key` header, on every route that takes a key. Its rule is checked by the route
 * (http/idempotency.ts, naming `idempotencyKey` like the body field); the document shows it as the pattern.
 */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(documentAs(Type.String({ description: '1..255 printable ASCII characters; a UUID v4 is recommended' }), {
    type: 'string',
    pattern: IDEMPOTENCY_KEY_PATTERN,
    minLength: 1,
    maxLength: 255,
    description: '1..255 printable ASCII characters; a UUID v4 is recommended. The same as the body\'s `idempotencyKey`; with both, they must be equal.',
  })),
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

/** The cursor (slice) list shape, for members' own lists: `<Item>Slice` for a named item. */
export const Slice = <T extends TSchema>(item: T) => named(item, 'Slice', item => Type.Object({
  content: Type.Array(item),
  size: Type.Integer(),
  hasNext: Type.Boolean(),
  nextCursor: Nullable(Type.String()),
}))

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

/** The offset (page) list shape, for admin lists: `<Item>Page` for a named item. */
export const Page = <T extends TSchema>(item: T) => named(item, 'Page', item => Type.Object({
  content: Type.Array(item),
  page: Type.Integer(),
  size: Type.Integer(),
  totalElements: Type.Integer(),
  totalPages: Type.Integer(),
  first: Type.Boolean(),
  last: Type.Boolean(),
}))

/**
 * Success envelope `{success: true, data, error: null}` around `data`: the component
 * `<Name>Envelope` when `data` has a component name (`OrderEnvelope`, `EmptyEnvelope` for null).
 */
export const Envelope = <T extends TSchema>(data: T) => named(data, 'Envelope', data => Type.Object({
  success: Type.Literal(true),
  data,
  error: Type.Null(),
}))

export const InvalidParamSchema = Component('InvalidParam', Type.Object({
  field: Type.String({ description: 'The field, e.g. `items[0].quantity`, or the query or path parameter' }),
  message: Type.String(),
}))

/** Every code of the error catalogue (src/errors.ts). */
export const ErrorCodeSchema = Component('ErrorCode', Type.Enum(Object.keys(ERRORS) as ErrorCode[], {
  type: 'string',
  description: 'What went wrong, one code per cause (the error catalogue); each operation lists the codes it can answer per status',
}))

export const ProblemSchema = Component('Problem', Type.Object({
  type: Type.String({ format: 'uri' }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  instance: Type.String(),
  code: Ref(ErrorCodeSchema),
  timestamp: Timestamp,
  invalidParams: Type.Optional(Type.Array(Ref(InvalidParamSchema), { description: 'With VALIDATION_FAILED: one entry per field' })),
}))

/** Error envelope `{success: false, data: null, error}`; shared by every route's 4xx/5xx responses. */
export const ErrorEnvelope = Component('ErrorEnvelope', Type.Object({
  success: Type.Literal(false),
  data: Type.Null(),
  error: Ref(ProblemSchema),
}))

/** The success envelope's value, e.g. `reply.send(ok(order))`. */
export const ok = <T>(data: T) => ({ success: true as const, data, error: null })

/**
 * A name a person chose (member, product, category, API key, webhook endpoint description): no
 * control characters (Unicode Cc, CONTRACT §11), no format characters (Cf: the bidirectional
 * overrides such as U+202E, zero-width characters such as U+200B, soft hyphens, tags) and no line or
 * paragraph separators (U+2028, U+2029; CONTRACT §18), so that a name cannot break a line of a mail,
 * a log or a CSV export, nor show something other than what it holds. U+0000 is left out of the
 * pattern: the wire rule refuses it in every string, with a message of its own. The pattern needs
 * Unicode semantics (`\p{Cf}`): validators build it with the `u` flag, as Ajv does. E.g.
 * `PlainName({ minLength: 1, maxLength: 100 })`.
 */
export const PLAIN_NAME_PATTERN = '^[^\\u0001-\\u001F\\u007F-\\u009F\\p{Cf}\\u2028\\u2029]*$'

export const PlainName = (options: Parameters<typeof Type.String>[0] = {}) => Type.String({
  description: 'Any text without control characters (Unicode Cc), format characters (Unicode Cf) or line and paragraph separators (U+2028, U+2029)',
  ...options,
  pattern: PLAIN_NAME_PATTERN,
})

/** `{success: true, data: null, error: null}`: the answer of a change that returns nothing. */
export const EmptyEnvelope = Envelope(Type.Null())
