import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { crlfInPlace } from '../../src/orders/export.js'
import type { OrderDetail } from '../../src/orders/schemas.js'
import { assertError, describeEachBackend, type Member, successData } from '../helper.js'

const EXPORT = '/api/v1/admin/orders/export'
const SEARCH = '/api/v1/admin/orders/search'
const COLUMNS = [
  'orderId', 'customerId', 'customerEmail', 'status', 'itemCount', 'totalAmount', 'currency', 'paymentId', 'paymentStatus',
  'shippingAddress', 'memo', 'createdAt', 'updatedAt', 'orderPaymentStatus', 'fulfillmentStatus', 'paidAmount', 'refundedAmount',
  'balanceDue',
] as const
const HEADER_LINE = `${COLUMNS.join(',')}\r\n`
const QUERY_INVALID = 'The query has invalid parameters.'
const UNKNOWN_PARAM = 'is not a recognised query parameter'

type Query = Record<string, string | number>
type Caller = Pick<Member, 'headers'> | undefined
type Row = Record<typeof COLUMNS[number], string>

/**
 * RFC 4180: records end with CRLF (the last one too); a field is quoted when it holds a comma,
 * quote or line break, and a quote inside it is doubled. Anything else is a parse failure.
 */
function parseCsv (text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let i = 0
  while (i < text.length) {
    if (text[i] === '"') {
      assert.equal(field, '', `a quote inside an unquoted field at ${i}`)
      i++
      for (;;) {
        assert.ok(i < text.length, 'an unterminated quoted field')
        if (text[i] === '"' && text[i + 1] === '"') {
          field += '"'
          i += 2
        } else if (text[i] === '"') {
          i++
          break
        } else {
          field += text[i++]
        }
      }
      assert.ok(text[i] === ',' || text[i] === '\r', `a closing quote not followed by a comma or CRLF at ${i}`)
    } else if (text[i] === ',') {
      record.push(field)
      field = ''
      i++
    } else if (text[i] === '\r') {
      assert.equal(text[i + 1], '\n', `CR without LF at ${i}`)
      record.push(field)
      records.push(record)
      record = []
      field = ''
      i += 2
    } else {
      assert.notEqual(text[i], '\n', `a bare LF at ${i}`)
      field += text[i++]
    }
  }
  assert.ok(record.length === 0 && field === '', 'the last record does not end with CRLF')
  return records
}

describeEachBackend('admin: orders export', (ctx) => {
  /** GET `path` with the query properly encoded (`+` in offsets becomes %2B). */
  const get = (caller: Caller, path: string, query: Query = {}) => ctx.api.get(path, query, caller)
  const patch = (caller: Member, url: string, payload?: object) =>
    ctx.api.inject({ method: 'PATCH', url, headers: caller.headers, ...(payload ? { payload } : {}) })

  /** A 200 CSV export: checks the headers and the header line, returns the lines after it as objects. */
  function rowsOf (res: LightMyRequestResponse): Row[] {
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
    assert.match(String(res.headers['content-disposition']), /^attachment; filename="orders-[\w-]+\.csv"$/)
    assert.ok(res.body.startsWith(HEADER_LINE), res.body.slice(0, 200))
    const [header, ...records] = parseCsv(res.body)
    assert.deepEqual(header, COLUMNS)
    return records.map(record => {
      assert.equal(record.length, COLUMNS.length, JSON.stringify(record))
      return Object.fromEntries(COLUMNS.map((column, i) => [column, record[i]!])) as Row
    })
  }

  const exportRows = async (admin: Member, query: Query = {}) => rowsOf(await get(admin, EXPORT, query))
  const exportIds = async (admin: Member, query: Query = {}) => (await exportRows(admin, query)).map(row => Number(row.orderId))

  /** The line the contract expects for an order, from what the API says about it elsewhere. */
  async function expectedRow (admin: Member, orderId: number): Promise<Row> {
    const order = successData<OrderDetail>(await get(admin, `/api/v1/admin/orders/${orderId}`))
    const customer = successData<{ email: string }>(await get(admin, `/api/v1/admin/members/${order.customerId}`))
    const payment = order.paymentId === null ? null : successData<{ status: string }>(await get(admin, `/api/v1/payments/${order.paymentId}`))
    return {
      orderId: String(order.orderId),
      customerId: String(order.customerId),
      customerEmail: customer.email,
      status: order.status,
      itemCount: String(order.items.length),
      totalAmount: String(order.totalAmount),
      currency: order.currency,
      paymentId: order.paymentId === null ? '' : String(order.paymentId),
      paymentStatus: payment?.status ?? '',
      shippingAddress: order.shippingAddress ?? '',
      memo: order.memo ?? '',
      createdAt: order.createdAt,
      updatedAt: order.updatedAt,
      orderPaymentStatus: order.paymentStatus,
      fulfillmentStatus: order.fulfillmentStatus,
      paidAmount: String(order.paidAmount),
      refundedAmount: String(order.refundedAmount),
      balanceDue: String(order.balanceDue),
    }
  }

  /**
   * Orders of two customers in every interesting state, created at midnight UTC on 1–5 January 2026:
   * jan1 ann PLACED with a two-line address and a memo with quotes; jan2 bob DELIVERED (paid);
   * jan3 ann CANCELLED after confirming (payment CANCELLED), a memo with a comma; jan4 bob DELETED;
   * jan5 ann PLACED with a CRLF in the memo. Totals 1000 to 5000; jan3 and jan4 contain mugs, the others beans.
   */
  async function fixture () {
    const admin = await ctx.api.admin()
    const ann = await ctx.api.member('ann')
    const bob = await ctx.api.member('bob')
    const beans = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000, name: 'Beans' })
    const mugs = await ctx.api.product(admin, { price: 1000, stockQuantity: 1000, name: 'Mug' })
    const place = async (who: Member, productId: number, quantity: number, day: number, extra: Record<string, unknown> = {}) => {
      const { orderId } = await ctx.api.order(who, [{ productId, quantity }], extra)
      await ctx.api.app.db.updateTable('orders').set({ created_at: new Date(`2026-01-0${day}T00:00:00.000Z`) }).where('id', '=', orderId).execute()
      return orderId
    }
    const jan1 = await place(ann, beans.productId, 1, 1, { shippingAddress: '1 Main St\nSpringfield', memo: 'Ring "twice"' })
    const jan2 = await place(bob, beans.productId, 2, 2)
    const jan3 = await place(ann, mugs.productId, 3, 3, { memo: 'fragile, handle with care' })
    const jan4 = await place(bob, mugs.productId, 4, 4)
    const jan5 = await place(ann, beans.productId, 5, 5, { memo: 'line one\r\nline two' })

    assert.equal((await patch(bob, `/api/v1/orders/${jan2}/confirm`)).statusCode, 200)
    const paymentId = successData<OrderDetail>(await get(bob, `/api/v1/orders/${jan2}`)).paymentId
    successData(await patch(bob, `/api/v1/payments/${paymentId}/process`, { paymentMethodToken: 'tok_visa' }))
    assert.equal(successData<OrderDetail>(await patch(admin, `/api/v1/admin/orders/${jan2}`, { status: 'DELIVERED' })).status, 'DELIVERED')
    assert.equal((await patch(ann, `/api/v1/orders/${jan3}/confirm`)).statusCode, 200)
    assert.equal((await patch(ann, `/api/v1/orders/${jan3}/cancel`)).statusCode, 200)
    assert.equal((await patch(bob, `/api/v1/orders/${jan4}/delete`)).statusCode, 200)
    return { admin, ann, bob, beans, mugs, jan1, jan2, jan3, jan4, jan5 }
  }

  it('streams every order, DELETED included, newest first, as RFC 4180 CSV: one CRLF-terminated line per order', async () => {
    const { admin, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const res = await get(admin, EXPORT)
    const rows = rowsOf(res)
    // Quoted exactly when a field holds a line break, a quote or a comma; quotes doubled.
    assert.ok(res.body.includes(',"1 Main St\nSpringfield","Ring ""twice""",'), res.body)
    assert.ok(res.body.includes(',"fragile, handle with care",'), res.body)
    assert.ok(res.body.includes(',"line one\r\nline two",'), res.body)
    const expected = await Promise.all([jan5, jan4, jan3, jan2, jan1].map(id => expectedRow(admin, id)))
    assert.deepEqual(rows, expected)
    assert.deepEqual(rows.map(row => [row.status, row.paymentStatus]), [
      ['PLACED', ''], ['DELETED', ''], ['CANCELLED', 'CANCELLED'], ['DELIVERED', 'COMPLETED'], ['PLACED', ''],
    ])
    // The order's own money and shipping, last (CONTRACT §15.7): nothing is owed on a cancelled or
    // deleted order, and the delivered one shipped everything.
    assert.deepEqual(rows.map(row => [row.orderPaymentStatus, row.fulfillmentStatus, row.paidAmount, row.refundedAmount, row.balanceDue]), [
      ['UNPAID', 'UNFULFILLED', '0', '0', '5000'],
      ['UNPAID', 'UNFULFILLED', '0', '0', '0'],
      ['UNPAID', 'UNFULFILLED', '0', '0', '0'],
      ['PAID', 'FULFILLED', '2000', '0', '0'],
      ['UNPAID', 'UNFULFILLED', '0', '0', '1000'],
    ])
  })

  it('answers only the header line when there is no order', async () => {
    const admin = await ctx.api.admin()
    const res = await get(admin, EXPORT)
    assert.deepEqual(rowsOf(res), [])
    assert.equal(res.body, HEADER_LINE)
  })

  it('prefixes text that a spreadsheet would run as a formula (= + - @, tab, CR) with a single quote, in every text column', async () => {
    const admin = await ctx.api.admin()
    const product = await ctx.api.product(admin)
    const res = await ctx.api.inject({ method: 'POST', url: '/api/v1/members', payload: { email: '=cmd@example.com', password: 'correct horse', name: 'Eve' } })
    assert.equal(res.statusCode, 201, res.body)
    const eve = await ctx.api.login('=cmd@example.com', 'correct horse')
    const cases: Array<[string | null, string | null, string, string]> = [
      // memo, shippingAddress, and the two columns as exported
      ['=SUM(A1)', '@home', "'=SUM(A1)", "'@home"],
      ['+1 555 0100', '-1 Back Alley', "'+1 555 0100", "'-1 Back Alley"],
      ['-5', null, "'-5", ''],
      ['@SUM(A1)', null, "'@SUM(A1)", ''],
      ['=1,"2"', null, '\'=1,"2"', ''],
      ['a=b', '1 Main St', 'a=b', '1 Main St'],
      ['\tTAB', '\rCR', "'\tTAB", "'\rCR"],
      ['Grüße — 東京', ' =after a space', 'Grüße — 東京', "' =after a space"],
    ]
    const ids: number[] = []
    for (const [memo, shippingAddress] of cases) ids.push((await ctx.api.order(eve, [{ productId: product.productId, quantity: 1 }], { memo, shippingAddress })).orderId)

    const exported = await get(admin, EXPORT, { sort: 'createdAt,asc' })
    const rows = rowsOf(exported)
    assert.deepEqual(rows.map(row => Number(row.orderId)), ids)
    assert.deepEqual(rows.map(row => [row.memo, row.shippingAddress]), cases.map(([, , memo, address]) => [memo, address]))
    assert.ok(rows.every(row => row.customerEmail === "'=cmd@example.com"))
    const body = exported.body
    assert.ok(body.includes(",'=SUM(A1),"), 'the prefix is inside the field, unquoted when nothing else needs quoting')
    assert.ok(body.includes(',"\'=1,""2""",'), 'the prefixed value is quoted like any other when it holds a comma or quote')
    assert.ok(body.includes(',"\'\rCR",'), 'a value starting with CR is prefixed, then quoted for its line break')
  })

  it('prefixes a formula behind white space, zero-width characters or a BOM, and full-width signs (CONTRACT §18.1): the exact lines', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member('mallory')
    const product = await ctx.api.product(admin, { price: 100, stockQuantity: 100 })
    // memo, shippingAddress as the member sent them, and the two fields as written in the CSV
    const cases: Array<[string, string, string, string]> = [
      [' =1+1', '＝1+1', "' =1+1", "'＝1+1"],
      ['\u00A0\u3000+1', '＋1', "'\u00A0\u3000+1", "'＋1"],
      ['\u200B-1', '－1', "'\u200B-1", "'－1"],
      ['\u200C\u200D\u2060@A1', '＠A1', "'\u200C\u200D\u2060@A1", "'＠A1"],
      ['\uFEFF=HYPERLINK(1)', ' \u2002\u205F＝1', "'\uFEFF=HYPERLINK(1)", "' \u2002\u205F＝1"],
      ['\n =1', '\t1', '"\'\n =1"', "'\t1"],
      [' \u200B x=1', 'a ＝ b', ' \u200B x=1', 'a ＝ b'],
      ['\u00AD=1', '\u202E=1', '\u00AD=1', '\u202E=1'],
    ]
    const records: string[] = []
    for (const [i, [memo, shippingAddress, memoField, addressField]] of cases.entries()) {
      const at = `2026-02-0${i + 1}T00:00:00.000Z`
      const { orderId } = await ctx.api.order(member, [{ productId: product.productId, quantity: 1 }], { memo, shippingAddress })
      await ctx.api.app.db.updateTable('orders').set({ created_at: new Date(at), updated_at: new Date(at) }).where('id', '=', orderId).execute()
      records.push(`${orderId},${member.id},${member.email},PLACED,1,100,USD,,,${addressField},${memoField},${at},${at},` +
        'UNPAID,UNFULFILLED,0,0,100\r\n')
    }
    const res = await get(admin, EXPORT, { sort: 'createdAt,asc' })
    assert.equal(res.body, HEADER_LINE + records.join(''))
  })

  it('takes the search’s filters and sort: the same orders, in the same order', async () => {
    const { admin, ann, bob, beans, mugs, jan1, jan2, jan3, jan4, jan5 } = await fixture()
    const queries: Query[] = [
      {},
      { status: 'PLACED' },
      { status: 'DELETED' },
      { status: 'CANCELLED,DELIVERED' },
      { customerId: ann.id },
      { customerId: bob.id, status: 'DELETED' },
      { createdFrom: '2026-01-02T00:00:00.000Z' },
      { createdTo: '2026-01-03T00:00:00.000Z' },
      { createdFrom: '2026-01-02T02:00:00+02:00', createdTo: '2026-01-04T00:00:00.001Z' },
      { minTotal: 2000, maxTotal: 4000 },
      { productId: mugs.productId },
      { productId: beans.productId, customerId: ann.id, sort: 'totalAmount,asc' },
      { sort: 'createdAt,asc' },
      { sort: 'totalAmount' },
      { sort: 'status' },
      { sort: 'updatedAt,desc' },
    ]
    const results = []
    const expected = []
    for (const query of queries) {
      const res = await get(admin, EXPORT, query)
      const exported = res.statusCode === 200 ? parseCsv(res.body).slice(1).map(record => Number(record[0])) : `HTTP ${res.statusCode}`
      results.push([JSON.stringify(query), exported])
      expected.push([JSON.stringify(query), (await get(admin, SEARCH, { ...query, size: 100 })).json().data.content.map((o: { orderId: number }) => o.orderId)])
    }
    assert.deepEqual(results, expected)
    assert.deepEqual(await exportIds(admin, { status: 'PLACED,CANCELLED', customerId: ann.id }), [jan5, jan3, jan1])
    assert.deepEqual(await exportIds(admin, { minTotal: 2000, sort: 'totalAmount,asc' }), [jan2, jan3, jan4, jan5])
    assert.deepEqual(await exportIds(admin, { createdTo: '2026-01-02T00:00:00.001Z', sort: 'createdAt,asc' }), [jan1, jan2])
  })

  it('exports far more orders than one database cursor chunk, every one once, in order', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    // 2,500 orders; three share each second, and totals repeat every 7, so ties are decided by id.
    await sql`
      insert into orders (customer_id, status, total_amount, currency, item_count, created_at, updated_at)
      select ${member.id}::bigint, 'PLACED', (g % 7) * 100, 'USD', 1 + g % 3,
             timestamptz '2026-01-01T00:00:00Z' + (g / 3) * interval '1 second', timestamptz '2026-01-01T00:00:00Z'
      from generate_series(1, 2500) as g`.execute(ctx.api.app.db)
    const stored = await ctx.api.app.db.selectFrom('orders').select(['id', 'created_at', 'total_amount']).execute()
    assert.equal(stored.length, 2500)

    const newestFirst = [...stored].sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || b.id - a.id).map(o => o.id)
    const rows = await exportRows(admin)
    assert.equal(rows.length, 2500)
    assert.deepEqual(rows.map(row => Number(row.orderId)), newestFirst)
    assert.ok(rows.every(row => row.customerEmail === member.email && row.status === 'PLACED' && row.currency === 'USD'))

    const cheapestFirst = [...stored].sort((a, b) => a.total_amount - b.total_amount || a.id - b.id).map(o => o.id)
    assert.deepEqual(await exportIds(admin, { sort: 'totalAmount' }), cheapestFirst)
    const dearestFirst = stored.filter(o => o.total_amount >= 300).sort((a, b) => b.total_amount - a.total_amount || b.id - a.id).map(o => o.id)
    assert.deepEqual(await exportIds(admin, { minTotal: 300, sort: 'totalAmount,desc' }), dearestFirst)
  })

  it('writes every kind of value exactly: the whole body, byte for byte', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member('zoe')
    const product = await ctx.api.product(admin, { price: 250, stockQuantity: 100 })
    // memo, shippingAddress, createdAt (also updatedAt), and the two text fields as written
    const cases: Array<[string | null, string | null, string, string, string]> = [
      ['', null, '2026-01-01T00:00:00.000Z', '', ''],
      ['say "hi",\nthen =go', '=1+2', '2026-01-02T03:04:05.010Z', '"say ""hi"",\nthen =go"', "'=1+2"],
      ['-"quoted"\r\n', ' ', '2026-01-03T00:00:00.001Z', '"\'-""quoted""\r\n"', ' '],
      ['\t', ',', '2026-01-04T23:59:59.999Z', "'\t", '","'],
      ['"', 'ends with LF\n', '2026-01-05T12:00:00.100Z', '""""', '"ends with LF\n"'],
      ['Grüße "東京"', '\\.', '2026-01-06T00:00:00.000Z', '"Grüße ""東京"""', '\\.'],
      [null, '', '2026-01-07T00:00:00.000Z', '', ''],
    ]
    const records: string[] = []
    for (const [i, [memo, shippingAddress, at, memoField, addressField]] of cases.entries()) {
      const { orderId } = await ctx.api.order(member, [{ productId: product.productId, quantity: 1 + i }])
      await ctx.api.app.db.updateTable('orders')
        .set({ memo, shipping_address: shippingAddress, created_at: new Date(at), updated_at: new Date(at) })
        .where('id', '=', orderId).execute()
      // The second one confirmed: a payment, PENDING (and a later updatedAt).
      if (i === 1) assert.equal((await patch(member, `/api/v1/orders/${orderId}/confirm`)).statusCode, 200)
      const order = await ctx.api.app.db.selectFrom('orders')
        .select(['status', 'payment_id', 'updated_at']).where('id', '=', orderId).executeTakeFirstOrThrow()
      const payment = order.payment_id === null ? ',' : `${order.payment_id},PENDING`
      records.push(`${orderId},${member.id},${member.email},${order.status},1,${250 * (1 + i)},USD,${payment},` +
        `${addressField},${memoField},${at},${order.updated_at.toISOString()},UNPAID,UNFULFILLED,0,0,${250 * (1 + i)}\r\n`)
    }
    const res = await get(admin, EXPORT, { sort: 'createdAt,asc' })
    assert.equal(res.body, HEADER_LINE + records.join(''))
    assert.equal(rowsOf(res).length, cases.length)
  })

  it('lets a client go away midway: the export stops, and the next one is whole', async () => {
    const admin = await ctx.api.admin()
    const member = await ctx.api.member()
    // 20,000 orders, about 2 MB of CSV: more than the sockets hold, so the export is still running
    // when the client leaves. Every tenth memo spans two lines.
    await sql`
      insert into orders (customer_id, status, total_amount, currency, item_count, memo, created_at, updated_at)
      select ${member.id}::bigint, 'PLACED', g, 'USD', 1, case when g % 10 = 0 then E'two\nlines' end,
             timestamptz '2026-01-01T00:00:00Z' + g * interval '1 second', timestamptz '2026-01-01T00:00:00Z'
      from generate_series(1, 20000) as g`.execute(ctx.api.app.db)
    await ctx.api.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = ctx.api.app.server.address() as AddressInfo
    const url = `http://127.0.0.1:${port}${EXPORT}`
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        await new Promise<void>((resolve, reject) => {
          const req = http.get(url, { headers: admin.headers }, (res) => {
            assert.equal(res.statusCode, 200)
            res.once('data', () => { req.destroy(); resolve() })
          })
          req.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'ECONNRESET') reject(error) })
        })
      }
      const res = await new Promise<{ statusCode: number, headers: http.IncomingHttpHeaders, body: string }>((resolve, reject) => {
        http.get(url, { headers: admin.headers }, (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => { body += chunk })
          res.on('end', () => resolve({ statusCode: res.statusCode!, headers: res.headers, body }))
          res.on('error', reject)
        }).on('error', reject)
      })
      const rows = rowsOf(res as unknown as LightMyRequestResponse)
      assert.equal(rows.length, 20000)
      assert.deepEqual(rows.slice(0, 2).map(row => [row.totalAmount, row.memo]), [['20000', 'two\nlines'], ['19999', '']])
      // And the service goes on answering.
      assert.equal((await get(admin, SEARCH, { size: 1 })).statusCode, 200)
    } finally {
      await new Promise(resolve => ctx.api.app.server.close(resolve))
    }
  })

  const badQueries: Array<[string, Query, string, Array<{ field: string, message: string | RegExp }>]> = [
    ['page (the export has no pages)', { page: 0 }, QUERY_INVALID, [{ field: 'page', message: UNKNOWN_PARAM }]],
    ['size', { size: 10 }, QUERY_INVALID, [{ field: 'size', message: UNKNOWN_PARAM }]],
    ['a cursor', { cursor: 'abc' }, QUERY_INVALID, [{ field: 'cursor', message: UNKNOWN_PARAM }]],
    ['an unknown status', { status: 'NOPE' }, 'The request has invalid parameters.',
      [{ field: 'status', message: 'must be one or more of PENDING, PLACED, CONFIRMED, DELIVERED, CANCELLED, DELETED, comma-separated' }]],
    ['an unknown sort', { sort: 'email' }, QUERY_INVALID, [{ field: 'sort', message: /^must be one of createdAt, / }]],
    ['a timestamp without an offset', { createdFrom: '2026-01-01T00:00:00' }, QUERY_INVALID,
      [{ field: 'createdFrom', message: 'must be an RFC 3339 timestamp with Z or an offset, in the years 0001 to 9999, e.g. 2026-11-22T09:30:00.000Z' }]],
    ['a negative minTotal', { minTotal: -1 }, QUERY_INVALID, [{ field: 'minTotal', message: 'must be at least 0' }]],
  ]
  for (const [what, query, detail, invalidParams] of badQueries) {
    it(`rejects ${what} with a 400 envelope, not CSV`, async () => {
      const admin = await ctx.api.admin()
      assertError(await get(admin, EXPORT, query), { code: 'VALIDATION_FAILED', instance: EXPORT, detail, invalidParams })
    })
  }

  it('refuses anonymous callers with 401 and members with 403, as envelopes', async () => {
    const member = await ctx.api.member()
    const anonymous = await get(undefined, EXPORT)
    assertError(anonymous, {
      code: 'UNAUTHORIZED', instance: EXPORT, detail: 'Authentication is required: send Authorization: Bearer <access token> or X-API-Key.',
    })
    assert.equal(anonymous.headers['content-disposition'], undefined)
    assertError(await get(member, EXPORT), { code: 'ACCESS_DENIED', instance: EXPORT, detail: 'This operation requires the ADMIN role.' })
  })
})

describe('the COPY path’s record ends (crlfInPlace)', () => {
  // COPY's CSV: each record ends with an empty last column and an LF; LFs also appear inside
  // quoted fields, after doubled quotes, and as a quoted field's only character.
  const copied = [
    '1,a,,\n',
    '2,"x\ny",b,\n',
    '3,"say ""hi"",\n""then""",,\n',
    '4,"\n",,\n',
    '5,"""",",",\n',
    '6,Grüße,,\n',
  ].join('')
  const expected = copied.replaceAll(/,\n(?=\d|$)/g, '\r\n')

  /** Runs the chunks through as copyCsv does: each is sent once the next has been seen. */
  function run (chunks: Buffer[]): string {
    const crlf = crlfInPlace()
    const sent: Buffer[] = []
    let previous: Buffer | undefined
    for (const chunk of chunks) {
      crlf(chunk, previous)
      if (previous) sent.push(previous)
      previous = chunk
    }
    if (previous) sent.push(previous)
    return Buffer.concat(sent).toString()
  }

  it('ends each record with CRLF and leaves the LFs inside quoted fields, wherever the chunks split the text', () => {
    const bytes = Buffer.from(copied)
    assert.equal(run([Buffer.from(bytes)]), expected)
    for (let i = 1; i < bytes.length; i++) {
      for (const j of [i + 1, i + 7, bytes.length]) {
        if (j > bytes.length) continue
        const copy = Buffer.from(bytes)
        const chunks = [copy.subarray(0, i), copy.subarray(i, j), copy.subarray(j)].filter(chunk => chunk.length > 0)
        assert.equal(run(chunks), expected, `split at ${i} and ${j}`)
      }
    }
    assert.equal(run([...bytes].map(byte => Buffer.from([byte]))), expected, 'one byte a chunk')
  })

  it('refuses a record that does not end with the empty last column', () => {
    assert.throws(() => run([Buffer.from('1,a\n')]), /does not end with its empty last column/)
    assert.throws(() => run([Buffer.from('1,a'), Buffer.from('\n')]), /does not end with its empty last column/)
  })
})
