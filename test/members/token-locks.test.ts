import assert from 'node:assert/strict'
import { it } from 'node:test'
import pg from 'pg'
import { tokenHash } from '../../src/members/secrets.js'
import { issueMemberToken } from '../../src/members/member-tokens.js'
import { Api, createTestDatabase, testConfig, waitFor } from '../helper.js'
import { buildApp } from '../../src/app.js'

// Spending a reset token and issuing a new one for the same member, at the same moment, on
// PostgreSQL: both lock the member first, so they take turns. (Spending used to lock its token
// first and issuing the member first, and the two deadlocked.)
it('issuing a reset token while an earlier one is being spent takes turns, no deadlock', { skip: process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL (row locks held by two sessions)' }, async () => {
  const database = await createTestDatabase('postgres')
  const api = new Api(await buildApp(testConfig(), { logger: false, database }))
  const other = new pg.Client({ connectionString: database.url })
  try {
    const member = await api.member('tokens')
    const spent = await issueMemberToken(api.app.db, member.id, 'PASSWORD_RESET')
    // A second unused token, as a double-clicked "forgot password" leaves; another connection holds
    // its row, which pauses the spending transaction where it spends the member's other tokens.
    await api.app.db.updateTable('member_tokens').set({ used_at: null }).where('token_hash', '=', tokenHash(spent)).execute()
    await api.app.db.insertInto('member_tokens').values({
      token_hash: tokenHash('second'), member_id: member.id, purpose: 'PASSWORD_RESET', expires_at: new Date(Date.now() + 3_600_000), used_at: null,
    }).execute()
    await other.connect()
    await other.query('begin')
    await other.query('select 1 from member_tokens where token_hash = $1 for update', [tokenHash('second')])

    // Seen in the database, not guessed from the time: how many sessions wait on a lock.
    const waiting = (count: number) => waitFor(async () => {
      const { rows } = await other.query("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")
      return rows[0].n >= count
    }, `${count} transaction(s) waiting on a lock`)
    const reset = api.inject({ method: 'POST', url: '/api/v1/members/password/reset', payload: { token: spent, newPassword: 'another horse' } })
    await waiting(1) // the reset is waiting on the held token
    const issued = issueMemberToken(api.app.db, member.id, 'PASSWORD_RESET').then(() => 'issued', (error: Error) => error.message)
    await waiting(2) // the issue is waiting too
    await other.query('commit')

    const res = await reset
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(await issued, 'issued')
  } finally {
    await other.end().catch(() => {})
    await api.app.close()
    await database.close()
  }
})
