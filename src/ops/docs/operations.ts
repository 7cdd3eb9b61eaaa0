import { anchor, escape, prose, table } from './html.js'

/** The parts of an OpenAPI 3.1 document the reference page reads. */
export interface Schema {
  $ref?: string
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  additionalProperties?: boolean | Schema
  description?: string
  format?: string
  default?: unknown
  examples?: unknown[]
  [constraint: string]: unknown
}

export interface Parameter {
  name: string
  in: string
  required?: boolean
  description?: string
  schema?: Schema
  example?: unknown
}

export interface Response {
  description?: string
  headers?: Record<string, unknown>
  content?: Record<string, { schema?: Schema }>
}

export interface Operation {
  summary?: string
  description?: string
  operationId?: string
  tags?: string[]
  deprecated?: boolean
  parameters?: Parameter[]
  requestBody?: { required?: boolean, description?: string, content?: Record<string, { schema?: Schema }> }
  responses?: Record<string, Response & { $ref?: string }>
  security?: Array<Record<string, string[]>>
}

export interface OpenApiDocument {
  openapi: string
  info: { title: string, version: string, description?: string }
  tags?: Array<{ name: string, description?: string }>
  paths?: Record<string, Record<string, Operation>>
  components?: {
    schemas?: Record<string, Schema>
    responses?: Record<string, Response>
    securitySchemes?: Record<string, { type: string, scheme?: string, in?: string, name?: string, description?: string }>
  }
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

export interface ListedOperation {
  method: string
  path: string
  operation: Operation
}

/** Every operation of the document, in document order. */
export function operationsOf (doc: OpenApiDocument): ListedOperation[] {
  return Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => (HTTP_METHODS as readonly string[]).includes(method))
      .map(([method, operation]) => ({ method, path, operation })))
}

/** Operations grouped by their first tag: the document's tag order first, then first appearance. */
export function groupByTag (doc: OpenApiDocument): Array<{ tag: string, description?: string, operations: ListedOperation[] }> {
  const groups = new Map<string, ListedOperation[]>()
  for (const declared of doc.tags ?? []) groups.set(declared.name, [])
  for (const listed of operationsOf(doc)) {
    const tag = listed.operation.tags?.[0] ?? 'other'
    groups.set(tag, [...(groups.get(tag) ?? []), listed])
  }
  return [...groups]
    .filter(([, operations]) => operations.length > 0)
    .map(([tag, operations]) => ({ tag, description: doc.tags?.find(t => t.name === tag)?.description, operations }))
}

function resolve (doc: OpenApiDocument, schema: Schema | undefined, seen = new Set<string>()): Schema {
  if (!schema?.$ref) return schema ?? {}
  const name = schema.$ref.replace(/^#\/components\/schemas\//, '')
  if (seen.has(name)) return { type: name }
  seen.add(name)
  return resolve(doc, doc.components?.schemas?.[name], seen)
}

/** `string`, `integer | null`, `array of object`, `"PLACED" | "CONFIRMED"`. */
function typeOf (doc: OpenApiDocument, raw: Schema): string {
  if (raw.$ref) return raw.$ref.replace(/^#\/components\/schemas\//, '')
  const schema = resolve(doc, raw)
  if (schema.const !== undefined) return JSON.stringify(schema.const)
  if (schema.enum) return schema.enum.map(v => JSON.stringify(v)).join(' | ')
  const variants = schema.anyOf ?? schema.oneOf
  if (variants) return variants.map(v => typeOf(doc, v)).join(' | ')
  if (schema.allOf) return schema.allOf.map(v => typeOf(doc, v)).join(' & ')
  const type = [schema.type ?? 'any'].flat().join(' | ')
  if (type === 'array' && schema.items) return `array of ${typeOf(doc, schema.items)}`
  return schema.format ? `${type} (${schema.format})` : type
}

const CONSTRAINTS: Array<[string, (value: unknown) => string]> = [
  ['minimum', v => `≥ ${v}`],
  ['exclusiveMinimum', v => `> ${v}`],
  ['maximum', v => `≤ ${v}`],
  ['exclusiveMaximum', v => `< ${v}`],
  ['minLength', v => `length ≥ ${v}`],
  ['maxLength', v => `length ≤ ${v}`],
  ['minItems', v => `items ≥ ${v}`],
  ['maxItems', v => `items ≤ ${v}`],
  ['uniqueItems', v => (v ? 'unique items' : '')],
  ['pattern', v => `pattern ${v}`],
  ['default', v => `default ${JSON.stringify(v)}`],
]

/** The constraints of a schema and of its non-null variants, e.g. `length ≤ 500`, `1 ≤ … ≤ 100`. */
function constraintsOf (doc: OpenApiDocument, raw: Schema): string[] {
  const schema = resolve(doc, raw)
  const own = CONSTRAINTS.flatMap(([key, render]) => (schema[key] === undefined ? [] : [render(schema[key])])).filter(Boolean)
  const variants = (schema.anyOf ?? schema.oneOf ?? []).flatMap(v => constraintsOf(doc, v))
  if (schema.additionalProperties === false && schema.properties) own.push('no other fields')
  return [...own, ...variants]
}

function examplesOf (schema: Schema): unknown[] {
  return [...(schema.examples ?? []), ...(schema.anyOf ?? schema.oneOf ?? []).flatMap(examplesOf)]
}

interface Field { name: string, type: string, required: boolean, constraints: string[], description: string | undefined, example: unknown }

/** The fields of an object schema, nested objects and array elements flattened: `items[].quantity`. */
export function fieldsOf (doc: OpenApiDocument, raw: Schema | undefined, prefix = '', depth = 0): Field[] {
  const schema = resolve(doc, raw)
  if (depth > 6) return []
  const objectVariant = [schema, ...(schema.anyOf ?? schema.oneOf ?? []).map(v => resolve(doc, v))].find(s => s.properties)
  if (!objectVariant?.properties) return []
  return Object.entries(objectVariant.properties).flatMap(([name, property]) => {
    const resolved = resolve(doc, property)
    const path = `${prefix}${name}`
    const field: Field = {
      name: path,
      type: typeOf(doc, property),
      required: objectVariant.required?.includes(name) ?? false,
      constraints: constraintsOf(doc, property),
      description: resolved.description,
      example: examplesOf(resolved)[0],
    }
    const element = resolved.type === 'array' ? resolve(doc, resolved.items) : undefined
    const nested = element
      ? fieldsOf(doc, element, `${path}[].`, depth + 1)
      : fieldsOf(doc, resolved, `${path}.`, depth + 1)
    return [field, ...nested]
  })
}

function fieldTable (fields: Field[]): string {
  return table(['field', 'type', 'required', 'constraints', 'description'], fields.map(f => [
    `<code>${escape(f.name)}</code>`,
    escape(f.type),
    f.required ? '<strong>yes</strong>' : 'no',
    escape(f.constraints.join('; ')),
    prose(f.description) + (f.example === undefined ? '' : ` <span class="example">e.g. <code>${escape(JSON.stringify(f.example))}</code></span>`),
  ]), 'fields')
}

function accessOf (doc: OpenApiDocument, operation: Operation): string {
  const security = operation.security
  if (!security || security.length === 0 || security.some(requirement => Object.keys(requirement).length === 0)) {
    return '<span class="access public">public</span> no credential needed'
  }
  const schemes = doc.components?.securitySchemes ?? {}
  const ways = security.map(requirement => Object.keys(requirement).map(name => {
    const scheme = schemes[name]
    if (scheme?.type === 'http' && scheme.scheme === 'bearer') return 'bearer token (<code>Authorization: Bearer …</code>)'
    if (scheme?.type === 'apiKey') return `API key (<code>${escape(scheme.name)}</code> ${escape(scheme.in)})`
    return escape(name)
  }).join(' and '))
  return `<span class="access auth">authenticated</span> ${ways.join(' or ')}`
}

function parametersOf (doc: OpenApiDocument, operation: Operation): string {
  const parameters = operation.parameters ?? []
  return table(['name', 'in', 'type', 'required', 'constraints', 'description'], parameters.map(p => [
    `<code>${escape(p.name)}</code>`,
    escape(p.in),
    escape(typeOf(doc, p.schema ?? {})),
    p.required ? '<strong>yes</strong>' : 'no',
    escape(constraintsOf(doc, p.schema ?? {}).join('; ')),
    prose(p.description ?? p.schema?.description) + (p.example === undefined ? '' : ` <span class="example">e.g. <code>${escape(String(p.example))}</code></span>`),
  ]), 'params')
}

function requestBodyOf (doc: OpenApiDocument, operation: Operation): string {
  const body = operation.requestBody
  if (!body) return ''
  const [[mediaType, content] = ['', undefined]] = Object.entries(body.content ?? {})
  const fields = fieldsOf(doc, content?.schema)
  return `<h4>Request body <span class="muted"><code>${escape(mediaType)}</code>${body.required ? '' : ', optional'}</span></h4>
${body.description ? `<p>${prose(body.description)}</p>` : ''}
${fields.length > 0 ? fieldTable(fields) : `<p class="muted">${escape(typeOf(doc, content?.schema ?? {}))}</p>`}`
}

/** The `data` of a success envelope, or the schema itself when the answer is not an envelope. */
function payloadOf (doc: OpenApiDocument, schema: Schema | undefined): Schema | undefined {
  const resolved = resolve(doc, schema)
  return resolved.properties?.data && resolved.properties.success ? resolved.properties.data : resolved
}

function responsesOf (doc: OpenApiDocument, operation: Operation): string {
  const rows = Object.entries(operation.responses ?? {}).map(([status, answer]) => {
    // Error responses are shared under components.responses.
    const response = answer.$ref ? doc.components?.responses?.[answer.$ref.replace(/^#\/components\/responses\//, '')] ?? {} : answer
    const media = Object.keys(response.content ?? {})
    const firstContent = Object.values(response.content ?? {})[0]
    const success = /^2/.test(status)
    const data = success ? payloadOf(doc, firstContent?.schema) : undefined
    const fields = data ? fieldsOf(doc, data) : []
    const shape = success && data
      ? fields.length > 0
        ? `<details><summary><code>data</code>: ${escape(typeOf(doc, data))}</summary>${fieldTable(fields)}</details>`
        : `<code>data</code>: ${escape(typeOf(doc, data))}`
      : /^[45]/.test(status) ? 'error envelope — see <a href="#errors">Errors</a>' : ''
    return [
      `<code class="status s${escape(status[0])}">${escape(status)}</code>`,
      prose(response.description),
      media.map(m => `<code>${escape(m)}</code>`).join(', '),
      shape,
    ]
  })
  return `<h4>Responses</h4>\n${table(['status', 'description', 'content type', 'body'], rows, 'responses')}`
}

export function renderOperation (doc: OpenApiDocument, { method, path, operation }: ListedOperation): string {
  const id = anchor(method, path)
  const parameters = parametersOf(doc, operation)
  return `<section class="operation" id="${id}">
<h3><a href="#${id}"><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> <code class="path">${escape(path)}</code></a>${operation.deprecated ? ' <span class="deprecated">deprecated</span>' : ''}</h3>
<p class="summary">${prose(operation.summary)}</p>
${operation.description ? `<p>${prose(operation.description)}</p>` : ''}
<p class="access-line"><strong>Access:</strong> ${accessOf(doc, operation)}${operation.operationId ? ` · <span class="muted">operationId <code>${escape(operation.operationId)}</code></span>` : ''}</p>
${parameters ? `<h4>Parameters</h4>\n${parameters}` : ''}
${requestBodyOf(doc, operation)}
${responsesOf(doc, operation)}
</section>`
}
