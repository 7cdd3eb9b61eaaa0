/**
 * The floor of a Node service on this machine: node:http and pg running the statements pgbench runs
 * (bench/statements.ts: the service's by-id read, and its create of 2026-11-24), and nothing else: no framework, authentication, validation, query
 * builder, metrics or logging. It answers
 *   GET  /api/v1/orders/{id}   the by-id read (reads asked for together share one statement, as in
 *                              the service: src/db/coalesce.ts);
 *   POST /api/v1/orders        the order-creation transaction, keyed by the Idempotency-Key header:
 *                              the six statements of 2026-11-24, or, with `?statement=one`, the
 *                              service's one statement of today (createStatementNow);
 * and 404 to anything else. The service does all of the above on top, so the service's rate over the
 * floor's is what its own code costs, and the floor's rate over a ceiling is as far as any Node
 * service that runs these statements could get here. Spawned by bench/ceilings.ts (for bench/run.ts)
 * on 127.0.0.1:$PORT, with DATABASE_URL and POOL_SIZE. Its connections carry `application_name`
 * FLOOR_APP, so that the bench can read the CPU time of the backends serving it.
 */
import http from 'node:http'
import pg from 'pg'
import { coalesce } from '../src/db/coalesce.js'
import { isId64 } from '../src/limits.js'
import { FLOOR_APP } from './ceilings.js'
import { bind, createOf20261124, createStatementNow, orderByIdStatement } from './statements.js'

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10), application_name: FLOOR_APP })
// The by-id read as the service runs it; the create as pgbench runs it (the six statements of
// 2026-11-24), and as the service runs it now (one statement).
const S = { orderById: await orderByIdStatement(), ...createOf20261124(), createNow: await createStatementNow() }

/** One prepared statement through pg's callback form, as the service runs them (src/db/prepared.ts). */
function run (client: pg.Pool | pg.PoolClient, name: string | undefined, text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    client.query({ name, text, values }, (error: Error | undefined, result: pg.QueryResult) => error ? reject(error) : resolve(result))
  })
}

const readOrder = coalesce(async (ids: string[]) => {
  const { rows } = await run(pool, 'order', S.orderById.text, bind(S.orderById, { ids }))
  return new Map(rows.map(row => [String(row.id), row]))
})

interface CreateBody { customerId: number, items: Array<{ productId: number, quantity: number }> }

async function createOrder (body: CreateBody, key: string): Promise<{ status: number, body: unknown }> {
  const client = await pool.connect()
  try {
    await run(client, undefined, 'begin')
    const member = body.customerId
    const claimed = await run(client, 'claim', S.claimKey.text, bind(S.claimKey, { member, key, fingerprint: 'fingerprint' }))
    if (claimed.rowCount === 0) {
      await run(client, undefined, 'rollback')
      return { status: 409, body: { message: 'key already used' } }
    }
    const [product0, product1, product2] = body.items.map(item => item.productId)
    const locked = await run(client, 'lock', S.lockProducts.text, bind(S.lockProducts, { product0, product1, product2 }))
    const items = body.items.map(item => {
      const product = locked.rows.find(row => Number(row.id) === item.productId)
      if (!product || Number(product.stock_quantity) < item.quantity) throw new Error(`product ${item.productId} cannot be ordered`)
      const unitPrice = Number(product.price)
      return { productId: item.productId, productName: product.name as string, quantity: item.quantity, unitPrice, lineTotal: unitPrice * item.quantity }
    })
    const totalAmount = items.reduce((sum, item) => sum + item.lineTotal, 0)
    const fill: Record<string, unknown> = { member, total: totalAmount }
    items.forEach((item, k) => {
      Object.assign(fill, { [`product${k}`]: item.productId, [`name${k}`]: item.productName, [`quantity${k}`]: item.quantity, [`price${k}`]: item.unitPrice, [`line${k}`]: item.lineTotal })
    })
    const { rows: [order] } = await run(client, 'insert', S.insertOrder.text, bind(S.insertOrder, fill))
    const detail = { orderId: Number(order.id), customerId: body.customerId, status: order.status, totalAmount, items, createdAt: order.created_at }
    const location = `/api/v1/orders/${detail.orderId}`
    await run(client, 'store', S.storeResponse.text, bind(S.storeResponse, { body: JSON.stringify(detail), location, member, key }))
    await run(client, undefined, 'commit')
    return { status: 201, body: detail }
  } catch (error) {
    await run(client, undefined, 'rollback').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}

/**
 * The create as the service sends it now: one statement, under autocommit, whose row carries the
 * answer PostgreSQL built (the order's detail). Nothing is checked in Node: a refusal is a 409.
 */
async function createOrderInOneStatement (body: CreateBody, key: string): Promise<{ status: number, body: unknown }> {
  const { rows: [row] } = await run(pool, 'create-now', S.createNow.text, bind(S.createNow, {
    member: body.customerId,
    key,
    fingerprint: 'fingerprint',
    productIds: body.items.map(item => item.productId),
    quantities: body.items.map(item => item.quantity),
  }))
  const answer = row.answer as { status: number, body: unknown } | null
  return answer ? { status: answer.status, body: answer.body } : { status: 409, body: { message: 'not placed' } }
}

function send (res: http.ServerResponse, status: number, data: unknown): void {
  const body = JSON.stringify({ success: status < 400, data: status < 400 ? data : null, error: status < 400 ? null : data })
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}

const BY_ID = /^\/api\/v1\/orders\/(\d+)$/

const server = http.createServer((req, res) => {
  const fail = (error: Error) => send(res, 500, { message: error.message })
  const byId = req.method === 'GET' ? BY_ID.exec(req.url ?? '') : null
  if (byId) {
    // As in the service, an id that is not a bigint is answered alone, not sent to fail a shared statement.
    const found = isId64(byId[1]!) ? readOrder(byId[1]!) : Promise.resolve(undefined)
    found.then(order => order ? send(res, 200, order) : send(res, 404, { message: 'no such order' }), fail)
    return
  }
  const oneStatement = req.url === '/api/v1/orders?statement=one'
  if (req.method === 'POST' && (req.url === '/api/v1/orders' || oneStatement)) {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('error', () => res.destroy()) // a client gone mid-body: nothing to answer
    req.on('end', () => {
      Promise.resolve()
        .then(() => (oneStatement ? createOrderInOneStatement : createOrder)(JSON.parse(Buffer.concat(chunks).toString()) as CreateBody, String(req.headers['idempotency-key'])))
        .then(result => send(res, result.status, result.body), fail)
    })
    return
  }
  send(res, 404, { message: 'not found' })
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write('listening\n')
})
process.on('SIGTERM', () => server.close(() => { pool.end().finally(() => process.exit(0)) }))
