/**
 * Value limits that both the wire (validation) and storage (the column types) depend on. They sit
 * below `http/` and `db/` so that neither has to import the other to know them.
 */

/** PostgreSQL's largest bigint, and so the largest id a path may name. */
const MAX_ID = 9223372036854775807n

/** Whether `text` is an id as paths write it: digits without a leading zero, 1 to 2^63−1 (CONTRACT §1). */
export const isId64 = (text: string): boolean => /^[1-9]\d{0,18}$/.test(text) && BigInt(text) <= MAX_ID

/** The instants a timestamp in a query or a cursor may name: the years 0001 to 9999, in UTC. */
const FIRST_TIME = Date.parse('0001-01-01T00:00:00.000Z')
const LAST_TIME = Date.parse('9999-12-31T23:59:59.999Z')

/**
 * Whether an instant (epoch ms) is one both databases store and compare: PGlite refuses the year 0
 * and PostgreSQL refuses what JavaScript writes for years past 9999, with a 500 if they got there.
 */
export const isStorableTime = (ms: number): boolean => ms >= FIRST_TIME && ms <= LAST_TIME

/** The largest stock a product may hold (an `integer` column). */
export const MAX_STOCK = 2_147_483_647
