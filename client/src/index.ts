/**
 * A typed client for the order service: openapi-fetch over the types generated from the service's
 * OpenAPI document (./schema.ts), plus what every caller would otherwise write by hand: credentials
 * on each request, the `{success, data, error}` envelope taken off, error answers thrown as
 * `OrderServiceError`, and the headers that matter (`ETag`, `Location`, `Idempotent-Replayed`) handed
 * back beside the data. See client/README.md.
 *
 * The named types below are derived from operations (`paths[...]`), not from component names, so
 * they keep working however the document names its schemas.
 */
import createClient, { type Client } from 'openapi-fetch'
import { isProblem, OrderServiceError, UnexpectedResponseError } from './errors.js'
import type { paths } from './schema.js'

export type { components, operations, paths } from './schema.js'
export { ERROR_CODES, OrderServiceError, UnexpectedResponseError, type ErrorCode, type InvalidParam, type Problem } from './errors.js'

// ---- Types from the document's operations ----------------------------------------------------

type Method = 'get' | 'put' | 'post' | 'patch'
type Path = keyof paths
type Operation<P extends Path, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never
type SuccessEnvelope<O> = O extends { responses: infer R } ? JsonOf<R[(200 | 201) & keyof R]> : never
type DataOfEnvelope<E> = E extends { success: true, data: infer D } ? D : never

/** The `data` of an operation's success envelope, e.g. `ResponseData<'/api/v1/orders/{id}', 'get'>`. */
export type ResponseData<P extends Path, M extends Method> = DataOfEnvelope<SuccessEnvelope<Operation<P, M>>>
/** The JSON request body of an operation. */
export type RequestBody<P extends Path, M extends Method> =
  Operation<P, M> extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never
/** The query parameters of an operation. */
export type QueryParams<P extends Path, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never

/** An order as `GET /orders/{id}` shows it (items, totals, `version`, `allowedActions`, …). */
export type Order = ResponseData<'/api/v1/orders/{id}', 'get'>
/** A slice of the caller's orders: `{content, size, hasNext, nextCursor}`. */
export type OrderSlice = ResponseData<'/api/v1/orders', 'get'>
/** A list element of `OrderSlice`. */
export type OrderSummary = OrderSlice['content'][number]
export type OrderStatus = Order['status']
export type OrderHistoryEntry = ResponseData<'/api/v1/orders/{id}/history', 'get'>[number]
export type PlaceOrderRequest = RequestBody<'/api/v1/orders', 'post'>
export type UpdateOrderRequest = RequestBody<'/api/v1/orders/{id}', 'patch'>
export type OrderListQuery = QueryParams<'/api/v1/orders', 'get'>
export type OrderEdit = ResponseData<'/api/v1/orders/{id}/edits/{editId}', 'get'>
export type EditOrderRequest = RequestBody<'/api/v1/orders/{id}/edits', 'post'>
export type Payment = ResponseData<'/api/v1/payments/{id}', 'get'>
export type Fulfillment = ResponseData<'/api/v1/orders/{id}/fulfillments/{fulfillmentId}', 'get'>
export type ShipRequest = RequestBody<'/api/v1/admin/orders/{id}/fulfillments', 'post'>
export type Product = ResponseData<'/api/v1/products/{id}', 'get'>
export type Member = ResponseData<'/api/v1/members/me', 'get'>
export type LoginRequest = RequestBody<'/api/v1/auth/login', 'post'>
export type LoginResult = ResponseData<'/api/v1/auth/login', 'post'>
export type Return = ResponseData<'/api/v1/orders/{id}/returns/{returnId}', 'get'>
export type RequestReturnRequest = RequestBody<'/api/v1/orders/{id}/returns', 'post'>

// ---- Answers ---------------------------------------------------------------------------------

/** A success: the envelope's `data`, and what the headers say about it. */
export interface Answer<T> {
  data: T
  status: number
  /** `ETag` of the resource as it is now: send it as `ifMatch` with the next change. */
  etag: string | undefined
  /** `Location` of a created resource (e.g. `/api/v1/orders/42`). */
  location: string | undefined
  /** True when the service answered a repeated idempotency key with the first answer (`Idempotent-Replayed`). */
  replayed: boolean
  requestId: string | undefined
  response: Response
}

/** Anything openapi-fetch answers: data on 2xx, the parsed error body otherwise. */
interface FetchResult {
  data?: unknown
  error?: unknown
  response: Response
}

type Unwrapped<R extends FetchResult> = DataOfEnvelope<NonNullable<R['data']>>

/**
 * Takes a raw openapi-fetch call's result apart: the envelope's `data` with the headers, or an
 * `OrderServiceError` thrown for an error answer.
 */
export async function unwrap<R extends FetchResult> (pending: Promise<R>): Promise<Answer<Unwrapped<R>>> {
  const { data, error, response } = await pending
  if (!response.ok) {
    const problem = typeof error === 'object' && error !== null ? (error as { error?: unknown }).error : undefined
    throw isProblem(problem) ? new OrderServiceError(problem, response) : new UnexpectedResponseError(response, error)
  }
  const envelope = data as { success?: unknown, data?: unknown } | undefined
  if (typeof envelope !== 'object' || envelope === null || envelope.success !== true || !('data' in envelope)) {
    throw new UnexpectedResponseError(response, data)
  }
  return {
    data: envelope.data as Unwrapped<R>,
    status: response.status,
    etag: response.headers.get('etag') ?? undefined,
    location: response.headers.get('location') ?? undefined,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    requestId: response.headers.get('x-request-id') ?? undefined,
    response,
  }
}

// ---- The client ------------------------------------------------------------------------------

export interface OrderClientOptions {
  /** Where the service is, e.g. `https://orders.example.com` (the paths carry `/api/v1`). */
  baseUrl: string
  /** An access token (`POST /api/v1/auth/login`), sent as `Authorization: Bearer …`. */
  token?: string
  /** An API key's secret, sent as `X-API-Key`. */
  apiKey?: string
  /** Headers for every request, e.g. an `X-Request-Id` of your own tracing. */
  headers?: Record<string, string>
  /** A fetch of your own (defaults to the global one). */
  fetch?: (request: Request) => Promise<Response>
}

/** For changes of an existing resource. */
export interface WriteOptions {
  /** The `ETag` the change is based on: when the resource has changed since, the answer is 412 PRECONDITION_FAILED. */
  ifMatch?: string
}

/** For operations that take an idempotency key (placing an order, the payment verbs). */
export interface IdempotentOptions {
  /** 1..255 printable ASCII characters; `crypto.randomUUID()` is a good one. Send the same key when retrying. */
  idempotencyKey?: string
}

/**
 * A numeric id for a path parameter of a raw call: `params: { path: { id: pathId(42) } }`. Ids are
 * JSON numbers; whether the document types a path id as an integer or as a digit string, openapi-fetch
 * writes it into the path the same way, so this fits either.
 */
export const pathId = (id: number): never => id as never

const headersOf = (options: WriteOptions & IdempotentOptions = {}): Record<string, string> => ({
  ...(options.ifMatch !== undefined ? { 'If-Match': options.ifMatch } : {}),
  ...(options.idempotencyKey !== undefined ? { 'Idempotency-Key': options.idempotencyKey } : {}),
})

export function createOrderClient (options: OrderClientOptions) {
  let token = options.token
  const client: Client<paths> = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    // Lists take several values of one parameter comma-separated (`status=PLACED,CONFIRMED`).
    querySerializer: { array: { style: 'form', explode: false } },
  })
  client.use({
    onRequest ({ request }) {
      if (token !== undefined && !request.headers.has('authorization')) request.headers.set('Authorization', `Bearer ${token}`)
      if (options.apiKey !== undefined && !request.headers.has('x-api-key')) request.headers.set('X-API-Key', options.apiKey)
      return request
    },
  })

  return {
    /** The raw typed client for every operation (credentials included); pass its calls to `call`. */
    client,
    /** Takes the envelope off a raw call: `await api.call(api.client.GET('/api/v1/members/me'))`. */
    call: unwrap,
    /** Uses this access token from now on (or none). */
    setToken (next: string | undefined): void {
      token = next
    },

    /** Logs in with email and password and uses the access token from now on. */
    async login (credentials: LoginRequest): Promise<Answer<LoginResult>> {
      const answer = await unwrap(client.POST('/api/v1/auth/login', { body: credentials }))
      token = answer.data.accessToken
      return answer
    },

    /**
     * Places an order (201, `location` set). With an idempotency key, a repeat answers the first
     * order again with `replayed: true`, and no second order is made.
     */
    placeOrder (order: PlaceOrderRequest, opts: IdempotentOptions = {}): Promise<Answer<Order>> {
      return unwrap(client.POST('/api/v1/orders', { body: order, headers: headersOf(opts) }))
    },

    /** One order, with its `etag`. */
    getOrder (id: number): Promise<Answer<Order>> {
      return unwrap(client.GET('/api/v1/orders/{id}', { params: { path: { id: pathId(id) } } }))
    },

    /** The caller's orders, newest first: pass `nextCursor` as `cursor` for the next slice. */
    listOrders (query: OrderListQuery = {}): Promise<Answer<OrderSlice>> {
      return unwrap(client.GET('/api/v1/orders', { params: { query } }))
    },

    /** Every order of the caller that matches `query`, following the cursor from slice to slice. */
    async * eachOrder (query: Omit<OrderListQuery, 'cursor' | 'page'> = {}): AsyncGenerator<OrderSummary> {
      let cursor: string | undefined
      do {
        const { data } = await unwrap(client.GET('/api/v1/orders', { params: { query: { ...query, ...(cursor ? { cursor } : {}) } } }))
        yield * data.content
        cursor = data.hasNext && data.nextCursor !== null ? data.nextCursor : undefined
      } while (cursor !== undefined)
    },

    /** Changes an order's memo (or status) by PATCH; `orderId` is filled in. */
    updateOrder (id: number, changes: Omit<UpdateOrderRequest, 'orderId'>, opts: WriteOptions = {}): Promise<Answer<Order>> {
      const body = { ...changes, orderId: id } as UpdateOrderRequest
      return unwrap(client.PATCH('/api/v1/orders/{id}', { params: { path: { id: pathId(id) } }, body, headers: headersOf(opts) }))
    },

    /** Confirms a placed order (its customer only) and opens its payment; `etag` is the order's new one. */
    confirmOrder (id: number, opts: WriteOptions = {}): Promise<Answer<null>> {
      return unwrap(client.PATCH('/api/v1/orders/{id}/confirm', { params: { path: { id: pathId(id) } }, headers: headersOf(opts) }))
    },

    /** Cancels an order: stock released, payment refunded or cancelled. */
    cancelOrder (id: number, opts: WriteOptions = {}): Promise<Answer<null>> {
      return unwrap(client.PATCH('/api/v1/orders/{id}/cancel', { params: { path: { id: pathId(id) } }, headers: headersOf(opts) }))
    },

    /** Deletes an order (soft): cancelled first when it is still active. */
    deleteOrder (id: number, opts: WriteOptions = {}): Promise<Answer<null>> {
      return unwrap(client.PATCH('/api/v1/orders/{id}/delete', { params: { path: { id: pathId(id) } }, headers: headersOf(opts) }))
    },

    /**
     * Asks to send some of a delivered order's lines back (201, `location` set; `etag` is the order's
     * new one). With an idempotency key, a repeat answers the first return again with `replayed: true`.
     */
    requestReturn (orderId: number, request: RequestReturnRequest, opts: IdempotentOptions = {}): Promise<Answer<Return>> {
      return unwrap(client.POST('/api/v1/orders/{id}/returns', { params: { path: { id: pathId(orderId) } }, body: request, headers: headersOf(opts) }))
    },

    /** An order's returns, oldest first. */
    listReturns (orderId: number): Promise<Answer<Return[]>> {
      return unwrap(client.GET('/api/v1/orders/{id}/returns', { params: { path: { id: pathId(orderId) } } }))
    },

    /** Cancels a return that is still REQUESTED; `etag` is the order's new one. */
    cancelReturn (orderId: number, returnId: number): Promise<Answer<Return>> {
      return unwrap(client.PATCH('/api/v1/orders/{id}/returns/{returnId}/cancel', {
        params: { path: { id: pathId(orderId), returnId: pathId(returnId) } },
      }))
    },

    /**
     * Edits an order's lines or address (201, `location` and the order's new `etag` set). `ifMatch` is
     * required (the order's `etag`); with `dryRun: true` the answer (200, `editId` null) shows the edit
     * and its settlement as they would be, and nothing changes. With an idempotency key, a repeat
     * answers the first edit again with `replayed: true`.
     */
    editOrder (id: number, edit: EditOrderRequest, opts: WriteOptions & IdempotentOptions & { dryRun?: boolean } = {}): Promise<Answer<OrderEdit>> {
      return unwrap(client.POST('/api/v1/orders/{id}/edits', {
        params: { path: { id: pathId(id) }, query: opts.dryRun ? { dryRun: true } : {} },
        body: edit,
        headers: headersOf(opts),
      }))
    },

    /** An order's edits, oldest first. */
    listOrderEdits (id: number): Promise<Answer<OrderEdit[]>> {
      return unwrap(client.GET('/api/v1/orders/{id}/edits', { params: { path: { id: pathId(id) } } }))
    },

    /** A payment (its order's customer, or an admin). */
    getPayment (id: number): Promise<Answer<Payment>> {
      return unwrap(client.GET('/api/v1/payments/{id}', { params: { path: { id: pathId(id) } } }))
    },

    /**
     * Pays a confirmed order's payment with a payment-method token. A decline throws
     * `OrderServiceError` with code `PAYMENT_DECLINED` (the payment is FAILED and may be paid again).
     */
    pay (paymentId: number, paymentMethodToken: string, opts: IdempotentOptions = {}): Promise<Answer<Payment>> {
      return unwrap(client.PATCH('/api/v1/payments/{id}/process', {
        params: { path: { id: pathId(paymentId) } },
        body: { paymentMethodToken },
        headers: headersOf(opts),
      }))
    },

    /** The order's shipments, oldest first (its customer, or an admin). */
    listFulfillments (id: number): Promise<Answer<Fulfillment[]>> {
      return unwrap(client.GET('/api/v1/orders/{id}/fulfillments', { params: { path: { id: pathId(id) } } }))
    },

    /**
     * Ships goods of a paid CONFIRMED order (admin): `items` absent ships everything not yet shipped.
     * With an idempotency key, a repeat answers the first shipment again with `replayed: true`.
     */
    shipOrder (id: number, shipment: ShipRequest = {}, opts: IdempotentOptions = {}): Promise<Answer<Fulfillment>> {
      return unwrap(client.POST('/api/v1/admin/orders/{id}/fulfillments', { params: { path: { id: pathId(id) } }, body: shipment, headers: headersOf(opts) }))
    },

    /** Marks a shipment delivered (admin); the order is delivered with its last one. `etag` is the order's new one. */
    deliverFulfillment (id: number, fulfillmentId: number): Promise<Answer<Fulfillment>> {
      return unwrap(client.PATCH('/api/v1/admin/orders/{id}/fulfillments/{fulfillmentId}/deliver', {
        params: { path: { id: pathId(id), fulfillmentId: pathId(fulfillmentId) } },
      }))
    },

    /** Cancels a shipment that has not arrived (admin): its quantities are to ship again. */
    cancelFulfillment (id: number, fulfillmentId: number): Promise<Answer<Fulfillment>> {
      return unwrap(client.PATCH('/api/v1/admin/orders/{id}/fulfillments/{fulfillmentId}/cancel', {
        params: { path: { id: pathId(id), fulfillmentId: pathId(fulfillmentId) } },
      }))
    },
  }
}

export type OrderClient = ReturnType<typeof createOrderClient>
