/**
 * The error catalogue (CONTRACT §2): every error the API can answer, with its status and title.
 * Services throw `ApiError`s by code; the one error handler (error-handler.ts) renders them.
 */
export const ERRORS = {
  VALIDATION_FAILED: { status: 400, title: 'Validation Failed' },
  LAST_SIGN_IN_METHOD: { status: 400, title: 'Last Sign-In Method' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed Request' },
  INVALID_ORDER_STATUS: { status: 400, title: 'Invalid Order Status' },
  INVALID_PAYMENT_STATUS: { status: 400, title: 'Invalid Payment Status' },
  INVALID_TOKEN: { status: 400, title: 'Invalid Token' },
  INVALID_FULFILLMENT_STATUS: { status: 400, title: 'Invalid Fulfillment Status' },
  INVALID_RETURN_STATUS: { status: 400, title: 'Invalid Return Status' },
  RETURN_WINDOW_CLOSED: { status: 400, title: 'Return Window Closed' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  EMAIL_NOT_VERIFIED: { status: 401, title: 'Email Not Verified' },
  INVALID_CLAIMS: { status: 401, title: 'Invalid Claims' },
  PAYMENT_DECLINED: { status: 402, title: 'Payment Declined' },
  ACCESS_DENIED: { status: 403, title: 'Forbidden' },
  ACCOUNT_SUSPENDED: { status: 403, title: 'Account Suspended' },
  ORDER_NOT_FOUND: { status: 404, title: 'Order Not Found' },
  MEMBER_NOT_FOUND: { status: 404, title: 'Member Not Found' },
  PRODUCT_NOT_FOUND: { status: 404, title: 'Product Not Found' },
  CATEGORY_NOT_FOUND: { status: 404, title: 'Category Not Found' },
  PAYMENT_NOT_FOUND: { status: 404, title: 'Payment Not Found' },
  API_KEY_NOT_FOUND: { status: 404, title: 'API Key Not Found' },
  IDENTITY_NOT_FOUND: { status: 404, title: 'Identity Not Found' },
  EVENT_NOT_FOUND: { status: 404, title: 'Event Not Found' },
  EDIT_NOT_FOUND: { status: 404, title: 'Edit Not Found' },
  FULFILLMENT_NOT_FOUND: { status: 404, title: 'Fulfillment Not Found' },
  RETURN_NOT_FOUND: { status: 404, title: 'Return Not Found' },
  WEBHOOK_ENDPOINT_NOT_FOUND: { status: 404, title: 'Webhook Endpoint Not Found' },
  WEBHOOK_DELIVERY_NOT_FOUND: { status: 404, title: 'Webhook Delivery Not Found' },
  RESOURCE_NOT_FOUND: { status: 404, title: 'Not Found' },
  API_VERSION_NOT_AVAILABLE: { status: 404, title: 'Not Found' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method Not Allowed' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request Timeout' },
  EMAIL_ALREADY_REGISTERED: { status: 409, title: 'Email Already Registered' },
  INSUFFICIENT_STOCK: { status: 409, title: 'Insufficient Stock' },
  IDEMPOTENCY_KEY_IN_FLIGHT: { status: 409, title: 'Idempotency Key In Flight' },
  API_KEY_LIMIT_REACHED: { status: 409, title: 'API Key Limit Reached' },
  UNPAID_ORDER_LIMIT_REACHED: { status: 409, title: 'Unpaid Order Limit Reached' },
  WEBHOOK_ENDPOINT_DISABLED: { status: 409, title: 'Webhook Endpoint Disabled' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition Failed' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload Too Large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported Media Type' },
  PRECONDITION_REQUIRED: { status: 428, title: 'Precondition Required' },
  CURSOR_EXPIRED: { status: 410, title: 'Cursor Expired' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency Key Reused' },
  TOO_MANY_REQUESTS: { status: 429, title: 'Too Many Requests' },
  REQUEST_HEADER_FIELDS_TOO_LARGE: { status: 431, title: 'Request Header Fields Too Large' },
  INTERNAL_ERROR: { status: 500, title: 'Internal Server Error' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service Unavailable' },
} as const satisfies Record<string, { status: number, title: string }>

export type ErrorCode = keyof typeof ERRORS

export interface InvalidParam {
  field: string
  message: string
}

export interface ApiErrorOptions {
  invalidParams?: InvalidParam[]
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  headers?: Record<string, string>
  /** What went wrong underneath; logged with 5xx errors, never sent. */
  cause?: unknown
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly title: string
  readonly invalidParams: InvalidParam[] | undefined
  readonly headers: Record<string, string>

  constructor (code: ErrorCode, detail: string, options: ApiErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.status = ERRORS[code].status
    this.title = ERRORS[code].title
    this.invalidParams = options.invalidParams
    this.headers = options.headers ?? {}
  }
}

/** A 400 VALIDATION_FAILED naming one field, e.g. `invalidParam('customerId', 'no such member')`. */
export function invalidParam (field: string, message: string): ApiError {
  return new ApiError('VALIDATION_FAILED', 'The request has invalid parameters.', {
    invalidParams: [{ field, message }],
  })
}

/** `ORDER_NOT_FOUND` → `order-not-found`, the slug of `error.type`. */
export function errorSlug (code: ErrorCode): string {
  return code.toLowerCase().replaceAll('_', '-')
}
