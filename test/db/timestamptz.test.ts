import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { parseTimestamptz } from '../../src/db/database.js'

const reference = pg.types.getTypeParser(1184, 'text') as (value: string) => Date

describe('parseTimestamptz (the pool\'s timestamptz parser)', () => {
  it('reads what PostgreSQL writes as pg\'s own parser does, to the millisecond', () => {
    for (const text of [
      '2026-11-24 07:40:21.123456+00',
      '2026-11-24 07:40:21+00',
      '2026-11-24 07:40:21.1+00',
      '2026-11-24 07:40:21.12+05:30',
      '2026-02-28 23:59:59.999999-08',
      '1999-12-31 23:00:00.5+01:00:30',
      '2024-02-29 00:00:00.000001+14',
      '1970-01-01 00:00:00+00',
    ]) {
      assert.equal(parseTimestamptz(text).getTime(), reference(text).getTime(), text)
    }
  })

  it('keeps the millisecond that a float product loses (.57 s is 570 ms)', () => {
    assert.equal(parseTimestamptz('2026-11-24 07:40:21.57+00').toISOString(), '2026-11-24T07:40:21.570Z')
  })

  it('leaves anything else to pg\'s parser: infinity, BC, years before 1000, another style', () => {
    for (const text of ['infinity', '-infinity', '2026-11-24 07:40:21+00 BC', '0099-01-01 00:00:00+00', '2026-11-24T07:40:21Z', '12026-11-24 07:40:21+00']) {
      const expected = reference(text)
      const actual = parseTimestamptz(text)
      assert.equal(actual instanceof Date ? actual.getTime() : actual, expected instanceof Date ? expected.getTime() : expected, text)
    }
  })
})
