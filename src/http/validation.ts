import { Ajv, type ErrorObject, type Options } from 'ajv'
import type { DataValidationCxt } from 'ajv/dist/types/index.js'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { isId64, isStorableTime } from '../limits.js'
import { ApiError, type InvalidParam } from '../errors.js'
import { components, IDEMPOTENCY_KEY_PATTERN, PLAIN_NAME_PATTERN } from './schemas.js'

// ajv-formats is CommonJS; under ESM its function arrives as the default export's `default`.
const addFormats = addFormatsModule.default

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-](\d{2}):(\d{2}))$/

/** RFC 3339 `date-time` with a real calendar date and clock time (no 30 February, no hour 24). */
function isTimestamp (value: string): boolean {
  const m = TIMESTAMP.exec(value)
  if (!m) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 && second <= 59 &&
    (m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59)) && isStorableTime(Date.parse(value))
}

/**
 * The JSON Pointer of the first string in `value` holding U+0000, or undefined. PostgreSQL cannot
 * store that character in text (nor jsonb), so it is refused here rather than failing a statement.
 */
function nulPath (value: unknown): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? '' : undefined
  if (value === null || typeof value !== 'object') return undefined
  // The pointer is built on the way back from a find, not for every member on the way down.
  for (const key of Object.keys(value)) {
    const found = nulPath((value as Record<string, unknown>)[key])
    if (found !== undefined) return `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}${found}`
  }
  return undefined
}

function withFormats (ajv: Ajv): Ajv {
  addFormats(ajv, ['email', 'date-time', 'uri', 'uuid'])
  // Path ids: `^[1-9][0-9]*$` and within PostgreSQL's bigint (CONTRACT §1).
  ajv.addFormat('id64', { type: 'string', validate: isId64 })
  // Timestamps in queries: RFC 3339 with `Z` or an explicit offset, nothing else (CONTRACT §1).
  ajv.addFormat('timestamp', { type: 'string', validate: isTimestamp })
  return ajv
}

/** The named components (http/schemas.ts), so that a request schema may `$ref` one (e.g. `OrderStatus`). */
const added = new WeakMap<Ajv, Set<string>>()
function withComponents (ajv: Ajv): void {
  const ids = added.get(ajv) ?? new Set<string>()
  added.set(ajv, ids)
  for (const component of components()) {
    if (ids.has(component.$id)) continue
    ajv.addSchema(component)
    ids.add(component.$id)
  }
}

const common: Options = { allErrors: true, removeAdditional: false, strict: false, messages: false }

// Bodies are JSON and are taken as sent: no coercion ("1" is not an integer), no silent removal.
const bodyAjv = withFormats(new Ajv({ ...common, coerceTypes: false, useDefaults: true }))
// Query strings and path parameters arrive as text and are coerced to the declared types.
const textAjv = withFormats(new Ajv({ ...common, coerceTypes: true, useDefaults: true }))

/**
 * One validator compiler for every route; schemas are compiled once, when the route is registered.
 * Bodies, query strings and path parameters are also refused if any string in them holds U+0000
 * (`nulPath`; CONTRACT §18.1): 400 naming the field, also where the field is free text.
 */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv
  withComponents(ajv)
  const validate = ajv.compile(schema)
  if (httpPart !== 'body' && httpPart !== 'querystring' && httpPart !== 'params') return validate
  const numbers = httpPart === 'querystring' ? numericParameters(schema) : []
  const checked = Object.assign((data: unknown, context?: DataValidationCxt) => {
    const written = notDecimal(data, numbers) // before Ajv, which coerces the text in place
    if (!validate(data, context) || written.length > 0) {
      checked.errors = inSchemaOrder(written, validate.errors ?? [], schema)
      return false
    }
    const path = nulPath(data)
    checked.errors = path === undefined ? null : [{ keyword: 'nul', instancePath: path, schemaPath: '#', params: {} }]
    return path === undefined
  }, { errors: null as ErrorObject[] | null | undefined, schemaEnv: validate.schemaEnv })
  return checked
}

/** Decimal text, as query numbers must be written: Ajv's coercion would also take `0x10`, `1e1` or ` 5`. */
const DECIMAL = { integer: /^-?\d+$/, number: /^-?\d+(\.\d+)?$/ } as const

/** The query schema's integer and number parameters. */
function numericParameters (schema: unknown): Array<[string, keyof typeof DECIMAL]> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  return Object.entries(properties).flatMap(([name, property]): Array<[string, keyof typeof DECIMAL]> =>
    property.type === 'integer' || property.type === 'number' ? [[name, property.type]] : [])
}

/**
 * Ajv's errors with `extra` placed among them in the order of the schema's properties, so that
 * invalidParams lists the fields in the same order whichever check found them.
 */
function inSchemaOrder (extra: ErrorObject[], errors: ErrorObject[], schema: unknown): ErrorObject[] {
  const order = Object.keys((schema as { properties?: object }).properties ?? {})
  const rank = (error: ErrorObject) => order.indexOf(error.instancePath.split('/')[1] ?? '')
  const merged = [...errors]
  for (const error of extra) {
    const at = merged.findIndex(other => rank(other) > rank(error))
    merged.splice(at === -1 ? merged.length : at, 0, error)
  }
  return merged
}

/** A type error for each numeric parameter not written in decimal. */
function notDecimal (data: unknown, numbers: Array<[string, keyof typeof DECIMAL]>): ErrorObject[] {
  if (numbers.length === 0 || data === null || typeof data !== 'object') return []
  const query = data as Record<string, unknown>
  return numbers.filter(([name, type]) => typeof query[name] === 'string' && !DECIMAL[type].test(query[name]))
    .map(([name, type]) => ({ keyword: 'type', instancePath: `/${name}`, schemaPath: '#', params: { type } }))
}

const FORMAT_MESSAGES: Record<string, string> = {
  id64: 'must be a positive 64-bit integer',
  timestamp: 'must be an RFC 3339 timestamp with Z or an offset, in the years 0001 to 9999, e.g. 2026-11-22T09:30:00.000Z',
  email: 'must be an email address',
}

/** What a pattern means, for the patterns the schemas use (http/schemas.ts). */
const PATTERN_MESSAGES: Record<string, string> = {
  [PLAIN_NAME_PATTERN]: 'must not contain control characters, format characters (such as U+200B or U+202E) or line separators',
  [IDEMPOTENCY_KEY_PATTERN]: 'must be 1 to 255 printable ASCII characters',
}

function message (error: ErrorObject | FastifySchemaValidationError, part: SchemaErrorDataVar): string {
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required': return 'is required'
    case 'additionalProperties': return part === 'querystring' ? UNKNOWN_QUERY_PARAMETER : 'is not a recognised field'
    case 'type': return `must be ${[p.type].flat().map(type => type === 'null' ? 'null' : `${/^[aeiou]/.test(String(type)) ? 'an' : 'a'} ${String(type)}`).join(' or ')}`
    case 'minimum': return `must be at least ${String(p.limit)}`
    case 'maximum': return `must be at most ${String(p.limit)}`
    case 'minLength': return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters`
    case 'maxLength': return `must be at most ${String(p.limit)} characters`
    case 'minItems': return p.limit === 1 ? 'must not be empty' : `must have at least ${String(p.limit)} items`
    case 'maxItems': return `must have at most ${String(p.limit)} items`
    case 'enum': return `must be one of ${(p.allowedValues as unknown[]).join(', ')}`
    case 'const': return `must be ${String(p.allowedValue)}`
    case 'format': return FORMAT_MESSAGES[String(p.format)] ?? `must be a valid ${String(p.format)}`
    case 'pattern': return PATTERN_MESSAGES[String(p.pattern)] ?? 'has an invalid format'
    case 'nul': return 'must not contain the NUL character (U+0000)'
    default: return 'is invalid'
  }
}

/** `/items/0/quantity` → `items[0].quantity`. */
function fieldOf (error: ErrorObject | FastifySchemaValidationError): string {
  const p = error.params as Record<string, unknown>
  const segments = error.instancePath.split('/').slice(1).map(s => s.replaceAll('~1', '/').replaceAll('~0', '~'))
  if (error.keyword === 'required') segments.push(String(p.missingProperty))
  if (error.keyword === 'additionalProperties') segments.push(String(p.additionalProperty))
  return segments.reduce((field, s) => /^\d+$/.test(s) ? `${field}[${s}]` : field ? `${field}.${s}` : s, '')
}

type SchemaError = ErrorObject | FastifySchemaValidationError

const isUnion = (error: SchemaError) => error.keyword === 'anyOf' || error.keyword === 'oneOf'

/**
 * Without the type errors of a union's branches that the value is not, when a branch it is failed
 * inside it: `eventTypes: ["x"]` fails the array branch at `eventTypes[0]` and the null branch at
 * `eventTypes`; only the first says what is wrong.
 */
function withoutOtherBranches (errors: readonly SchemaError[]): SchemaError[] {
  const other = new Set<SchemaError>()
  for (const union of errors.filter(isUnion)) {
    const at = union.instancePath
    if (!errors.some(error => error.instancePath.startsWith(`${at}/`))) continue
    for (const error of errors) {
      if (error.keyword === 'type' && error.instancePath === at && error.schemaPath.startsWith(`${union.schemaPath}/`)) other.add(error)
    }
  }
  return errors.filter(error => !other.has(error))
}

/**
 * Turns schema-validation failures into invalidParams: one entry per field, the first failure wins,
 * except that a value none of a union's types takes names them all (`must be an array or null`).
 */
export function toInvalidParams (errors: readonly SchemaError[], part: SchemaErrorDataVar): InvalidParam[] {
  const byField = new Map<string, SchemaError>()
  for (const error of withoutOtherBranches(errors)) {
    if (isUnion(error) || error.keyword === 'if') continue
    const field = fieldOf(error)
    const first = byField.get(field)
    if (first === undefined) byField.set(field, error)
    else if (first.keyword === 'type' && error.keyword === 'type' && first.instancePath === error.instancePath) {
      const types = [(first.params as { type: unknown }).type, (error.params as { type: unknown }).type].flat()
      byField.set(field, { ...first, params: { type: [...new Set(types)] } })
    }
  }
  return [...byField].map(([field, error]) => ({ field, message: message(error, part) }))
}

/**
 * At most this many unknown query parameters are named in invalidParams (in the order sent); the
 * detail gives the total. A query string can hold thousands, and the answer need not echo them all.
 */
const MAX_UNKNOWN_LISTED = 20
const UNKNOWN_QUERY_PARAMETER = 'is not a recognised query parameter'

const PARTS: Record<SchemaErrorDataVar, string> = {
  body: 'request body', querystring: 'query', params: 'path', headers: 'headers',
}

/** Fastify's schemaErrorFormatter: every validation failure becomes a 400 VALIDATION_FAILED. */
export function schemaErrorFormatter (errors: FastifySchemaValidationError[], part: SchemaErrorDataVar): Error {
  if (part === 'body' && errors.some(error => error.instancePath === '' && error.keyword === 'type')) {
    return new ApiError('MALFORMED_REQUEST', 'The request body must be a JSON object.')
  }
  const invalidParams = toInvalidParams(errors, part)
  if (part === 'querystring') {
    const unknown = invalidParams.filter(param => param.message === UNKNOWN_QUERY_PARAMETER)
    if (unknown.length > MAX_UNKNOWN_LISTED) {
      const listed = new Set(unknown.slice(0, MAX_UNKNOWN_LISTED))
      return new ApiError('VALIDATION_FAILED',
        `The request has ${unknown.length} unknown query parameters; the first ${MAX_UNKNOWN_LISTED} are listed.`,
        { invalidParams: invalidParams.filter(param => param.message !== UNKNOWN_QUERY_PARAMETER || listed.has(param)) })
    }
  }
  return new ApiError('VALIDATION_FAILED', `The ${PARTS[part]} has invalid parameters.`, { invalidParams })
}
