import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { coalesce } from '../../src/db/coalesce.js'

/** A load that records each call's keys and answers every key but 'missing' with its upper case. */
function recordingLoad () {
  const calls: string[][] = []
  const load = async (keys: string[]) => {
    calls.push(keys)
    return new Map(keys.filter(key => key !== 'missing').map(key => [key, key.toUpperCase()]))
  }
  return { calls, load }
}

describe('coalesce', () => {
  it('reads the keys asked for in one turn with one call, and gives each caller its own value', async () => {
    const { calls, load } = recordingLoad()
    const read = coalesce(load)
    const values = await Promise.all(['a', 'b', 'a', 'missing', 'c'].map(read))
    assert.deepEqual(values, ['A', 'B', 'A', undefined, 'C'])
    assert.deepEqual(calls, [['a', 'b', 'missing', 'c']])
  })

  it('starts a new call for keys asked for after the batch has left', async () => {
    const { calls, load } = recordingLoad()
    const read = coalesce(load)
    assert.equal(await read('a'), 'A')
    assert.equal(await read('a'), 'A')
    assert.deepEqual(calls, [['a'], ['a']])
  })

  it('splits a turn into calls of at most maxKeys distinct keys', async () => {
    const { calls, load } = recordingLoad()
    const read = coalesce(load, { maxKeys: 2 })
    const values = await Promise.all(['a', 'a', 'b', 'c', 'd', 'e'].map(read))
    assert.deepEqual(values, ['A', 'A', 'B', 'C', 'D', 'E'])
    assert.deepEqual(calls, [['a', 'b'], ['c', 'd'], ['e']])
  })

  it("gives a failed call's error to every caller of that batch, and only to them", async () => {
    let failing = true
    const read = coalesce(async (keys: string[]) => {
      if (failing) throw new Error('connection lost')
      return new Map(keys.map(key => [key, key]))
    })
    const failed = await Promise.allSettled([read('a'), read('b')])
    assert.deepEqual(failed.map(result => result.status === 'rejected' && (result.reason as Error).message), ['connection lost', 'connection lost'])
    failing = false
    assert.equal(await read('a'), 'a')
  })

  it('fails only the batch whose call failed when one turn holds several', async () => {
    const read = coalesce(async (keys: string[]) => {
      if (keys.includes('bad')) throw new Error('connection lost')
      return new Map(keys.map(key => [key, key]))
    }, { maxKeys: 2 })
    const results = await Promise.allSettled(['a', 'bad', 'c', 'd'].map(read))
    assert.deepEqual(results.map(result => result.status === 'fulfilled' ? result.value : (result.reason as Error).message),
      ['connection lost', 'connection lost', 'c', 'd'])
  })

  it('settles every caller even when load answers something that is not a map', async () => {
    const read = coalesce(async () => undefined as unknown as Map<string, string>)
    await assert.rejects(Promise.all([read('a'), read('b')]), TypeError)
  })

  it('refuses a maxKeys that is not a positive integer', () => {
    for (const maxKeys of [0, -1, 1.5]) {
      assert.throws(() => coalesce(async () => new Map(), { maxKeys }), { name: 'RangeError', message: `maxKeys must be a positive integer, not ${maxKeys}` })
    }
  })

  it('turns a load that throws before its promise into a rejection', async () => {
    const read = coalesce((): Promise<Map<string, string>> => { throw new Error('bad statement') })
    await assert.rejects(read('a'), /bad statement/)
  })
})
