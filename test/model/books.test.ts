import { it } from 'node:test'
import fc from 'fast-check'
import { describeEachBackend } from '../helper.js'
import { people, runTables, resetBooks, type Model, type ProductSpec, type Real } from './books-model.js'
import { BooksCommand, COMMANDS } from './commands.js'

// "The books balance, proven" (CONTRACT §15.1-§15.4, §15.7; issue 31): fast-check draws sequences of
// commands (place, confirm, pay approved or declined, goodwill refunds, cancel and delete by owner
// or admin, the one-step deliver, edits up and down with and without a preview, shipments in parts,
// delivered or cancelled, returns asked for, cancelled, rejected and received with or without
// restock and with the default or a given refund), sends each through the real HTTP API, asserts the
// answer the model predicts (a refusal with its whole error, after which the model stays as it was),
// and after every step checks the books through the API: each order as the model has it (lines with
// what shipped and came back, shipments, returns, money, fulfilment status, version), balanceDue =
// totalAmount − credited − (paid − refunded) = the open payments on active orders, 0 on ended ones,
// no refund beyond what was captured, stock conserved per product (initial = on hand + reserved by
// open orders + shipped − restocked), and each order's events numbered 1..n, exactly those the model
// predicts. See docs/orders.md, "How the books are proven".
//
// MODEL_RUNS (default 200 per backend, the least CI runs), MODEL_SEED and MODEL_PATH (to replay the
// failure fast-check printed: both come in its message), MODEL_COMMANDS (the longest sequence drawn,
// 100: commands with nothing to act on are skipped without a request, so about 13 of them run per
// sequence; each run places at most MAX_ORDERS orders and takes them far along). The default keeps
// 200 runs at about 2-2.5 minutes per backend on the shared 2-core machine.

const RUNS = Number(process.env.MODEL_RUNS ?? 200)
const MAX_COMMANDS = Number(process.env.MODEL_COMMANDS ?? 100)
const SEED = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED)
const PATH = process.env.MODEL_PATH
/** Low, so that sequences this short reach the unpaid-order limit (CONTRACT §18) too. */
const UNPAID_LIMIT = 3

/** Three products: prices where refunds split unevenly, stock low enough to run short (orders and edits). */
const productsArb = fc.array(
  fc.record({ price: fc.integer({ min: 1, max: 2500 }), stock: fc.integer({ min: 2, max: 12 }) }), { minLength: 3, maxLength: 3 })

describeEachBackend('the books balance after every step (model-based)', (ctx) => {
  it(`holds over ${RUNS} random sequences of up to ${MAX_COMMANDS} commands`, async (t) => {
    BooksCommand.outcomes.clear()
    const everyone = await people(ctx.api)
    const tables = await runTables(ctx.api)
    const setup = (products: ProductSpec[]) => async (): Promise<{ model: Model, real: Real }> => {
      await resetBooks(ctx.api, tables)
      const productIds: number[] = []
      for (const [i, spec] of products.entries()) {
        productIds.push((await ctx.api.product(everyone.admin, { name: `Model product ${i}`, price: spec.price, stockQuantity: spec.stock })).productId)
      }
      return { model: { products, orders: [], unpaidLimit: UNPAID_LIMIT }, real: { api: ctx.api, ...everyone, productIds, feed: { events: [] } } }
    }
    await fc.assert(
      fc.asyncProperty(productsArb, fc.commands(COMMANDS, { maxCommands: MAX_COMMANDS, size: 'max' }), async (products, commands) => {
        await fc.asyncModelRun(setup(products), commands)
      }),
      { numRuns: RUNS, includeErrorInReport: true, ...(SEED === undefined ? {} : { seed: SEED }), ...(PATH === undefined ? {} : { path: PATH }) }
    )
    // What the runs exercised, so that a generator that stopped reaching a case shows.
    for (const [outcome, count] of [...BooksCommand.outcomes].sort()) t.diagnostic(`${outcome}: ${count}`)
  })
}, { env: { MAX_UNPAID_ORDERS: String(UNPAID_LIMIT) } })
