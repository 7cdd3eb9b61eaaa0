/**
 * The service's error catalogue (CONTRACT §2 and §14) as the client sees it: every `error.code` an
 * answer can carry. test/client/errors.test.ts keeps this list equal to the service's catalogue.
 */
export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'LAST_SIGN_IN_METHOD',
  'MALFORMED_REQUEST',
  'INVALID_ORDER_STATUS',
  'INVALID_PAYMENT_STATUS',
  'INVALID_TOKEN',
  'INVALID_FULFILLMENT_STATUS',
  'INVALID_RETURN_STATUS',
  'RETURN_WINDOW_CLOSED',
  'UNAUTHORIZED',
  'EMAIL_NOT_VERIFIED',
  'INVALID_CLAIMS',
  'PAYMENT_DECLINED',
  'ACCESS_DENIED',
  'ACCOUNT_SUSPENDED',
  'ORDER_NOT_FOUND',
  'MEMBER_NOT_FOUND',
  'PRODUCT_NOT_FOUND',
  'CATEGORY_NOT_FOUND',
  'PAYMENT_NOT_FOUND',
  'API_KEY_NOT_FOUND',
  'IDENTITY_NOT_FOUND',
  'EVENT_NOT_FOUND',
  'EDIT_NOT_FOUND',
  'FULFILLMENT_NOT_FOUND',
  'RETURN_NOT_FOUND',
  'WEBHOOK_ENDPOINT_NOT_FOUND',
  'WEBHOOK_DELIVERY_NOT_FOUND',
  'RESOURCE_NOT_FOUND',
  'API_VERSION_NOT_AVAILABLE',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'EMAIL_ALREADY_REGISTERED',
  'INSUFFICIENT_STOCK',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'API_KEY_LIMIT_REACHED',
  'UNPAID_ORDER_LIMIT_REACHED',
  'WEBHOOK_ENDPOINT_DISABLED',
  'PRECONDITION_FAILED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'PRECONDITION_REQUIRED',
  'CURSOR_EXPIRED',
  'IDEMPOTENCY_KEY_REUSED',
  'TOO_MANY_REQUESTS',
  'REQUEST_HEADER_FIELDS_TOO_LARGE',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
] as const

/** A code of the service's error catalogue, e.g. `INSUFFICIENT_STOCK`. */
export type ErrorCode = typeof ERROR_CODES[number]

/** One refused input of a `VALIDATION_FAILED` answer: `field` like `items[0].quantity`, `size`, `id`. */
export interface InvalidParam {
  field: string
  message: string
}

/** The error object of the envelope (`application/problem+json`, RFC 9457 plus `code`). */
export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  instance: string
  code: ErrorCode
  timestamp: string
  invalidParams?: InvalidParam[]
}

const KNOWN = new Set<string>(ERROR_CODES)

/** True for an error object the service wrote (as opposed to a proxy's or a gateway's page). */
export function isProblem (value: unknown): value is Problem {
  if (typeof value !== 'object' || value === null) return false
  const problem = value as Record<string, unknown>
  return typeof problem.code === 'string' && typeof problem.status === 'number' && typeof problem.title === 'string'
}

/**
 * An error answer of the service: its status, its catalogue `code`, `title`, `detail`, the
 * `invalidParams` of a validation failure (empty otherwise), and the headers that say what to do
 * next (`Retry-After` on 409 in-flight, 429 and 503).
 */
export class OrderServiceError extends Error {
  readonly status: number
  readonly code: ErrorCode
  readonly title: string
  readonly detail: string
  readonly invalidParams: readonly InvalidParam[]
  /** The whole error object as sent. */
  readonly problem: Problem
  /** Seconds to wait before trying again, from `Retry-After`, when the answer has one. */
  readonly retryAfter: number | undefined
  /** The `X-Request-Id` of the answer: quote it when asking the service's operators. */
  readonly requestId: string | undefined
  readonly response: Response

  constructor (problem: Problem, response: Response) {
    const params = problem.invalidParams ?? []
    const fields = params.length > 0 ? ` (${params.map(p => `${p.field}: ${p.message}`).join('; ')})` : ''
    super(`${response.status} ${problem.code}: ${problem.detail}${fields}`)
    this.name = 'OrderServiceError'
    this.status = response.status
    this.code = problem.code
    this.title = problem.title
    this.detail = problem.detail
    this.invalidParams = params
    this.problem = problem
    const retryAfter = response.headers.get('retry-after')
    this.retryAfter = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined
    this.requestId = response.headers.get('x-request-id') ?? undefined
    this.response = response
  }

  /** Whether `code` is one this client knows (a newer service may add codes). */
  get isKnownCode (): boolean {
    return KNOWN.has(this.code)
  }
}

/**
 * An answer that is not the service's own: a 2xx without the envelope, or an error without the error
 * object (a proxy's or load balancer's page, a 304 to a conditional request made through the raw client).
 */
export class UnexpectedResponseError extends Error {
  readonly status: number
  readonly body: unknown
  readonly response: Response

  constructor (response: Response, body: unknown) {
    super(`unexpected answer ${response.status} from ${response.url || 'the service'}: not the service's envelope`)
    this.name = 'UnexpectedResponseError'
    this.status = response.status
    this.body = body
    this.response = response
  }
}
