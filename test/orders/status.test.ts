import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ORDER_STATUSES, type OrderStatus } from '../../src/orders/schemas.js'
import { TRANSITIONS, VERB_TARGET, canTransition, holdsReservation, mayApply, verbFor } from '../../src/orders/status.js'

// The state table of CONTRACT §3, written out independently of src/orders/status.ts.
const LEGAL: Array<[OrderStatus, OrderStatus]> = [
  ['PLACED', 'CONFIRMED'], ['PENDING', 'CONFIRMED'],
  ['PLACED', 'CANCELLED'], ['PENDING', 'CANCELLED'], ['CONFIRMED', 'CANCELLED'],
  ['CONFIRMED', 'DELIVERED'],
  ['PLACED', 'DELETED'], ['PENDING', 'DELETED'], ['CONFIRMED', 'DELETED'], ['DELIVERED', 'DELETED'], ['CANCELLED', 'DELETED'],
]

describe('order lifecycle table', () => {
  it('allows exactly the transitions of the contract', () => {
    for (const from of ORDER_STATUSES) {
      for (const to of ORDER_STATUSES) {
        const legal = LEGAL.some(([f, t]) => f === from && t === to)
        assert.equal(canTransition(from, to), legal, `${from} → ${to}`)
      }
    }
  })

  it('has an entry for every status', () => {
    assert.deepEqual(Object.keys(TRANSITIONS).sort(), [...ORDER_STATUSES].sort())
  })

  it('treats PENDING exactly like PLACED', () => {
    assert.deepEqual(TRANSITIONS.PENDING, TRANSITIONS.PLACED)
    assert.equal(holdsReservation('PENDING'), holdsReservation('PLACED'))
  })

  it('maps each verb to its target and back', () => {
    assert.deepEqual(VERB_TARGET, { confirm: 'CONFIRMED', cancel: 'CANCELLED', deliver: 'DELIVERED', delete: 'DELETED' })
    assert.equal(verbFor('CANCELLED'), 'cancel')
    assert.equal(verbFor('PLACED'), undefined)
    assert.equal(verbFor('PENDING'), undefined)
  })

  it('lets only the owner confirm, only an admin deliver, and both cancel or delete', () => {
    const owner = { isOwner: true, isAdmin: false }
    const admin = { isOwner: false, isAdmin: true }
    assert.deepEqual([mayApply('confirm', owner), mayApply('confirm', admin)], [true, false])
    assert.deepEqual([mayApply('deliver', owner), mayApply('deliver', admin)], [false, true])
    assert.deepEqual([mayApply('cancel', owner), mayApply('cancel', admin)], [true, true])
    assert.deepEqual([mayApply('delete', owner), mayApply('delete', admin)], [true, true])
    assert.equal(mayApply('confirm', { isOwner: true, isAdmin: true }), true)
  })

  it('holds stock only while PENDING, PLACED or CONFIRMED', () => {
    assert.deepEqual(ORDER_STATUSES.filter(holdsReservation), ['PENDING', 'PLACED', 'CONFIRMED'])
  })
})
