/**
 * A keyed read whose callers share statements: every key asked for during one turn of the event loop
 * is read by a single call of `load`, made once that turn's I/O callbacks have run (`setImmediate`).
 * Under load, the requests that arrive together share one statement and one round trip, which costs
 * PostgreSQL and this process far less than one each. A lone caller waits no timer, only for the end
 * of its turn. Measured: bench/RESULTS.md, "Reads that share a statement".
 *
 * At most `maxKeys` keys go to one call (default 500); callers beyond that start the next batch.
 * `load` answers the keys it found, by key; a key it leaves out resolves to `undefined`. If it fails,
 * every caller of that batch gets the error (and no other batch's). Callers with the same key get
 * the same value, so values must be treated as read-only.
 *
 *   const findUser = coalesce(keys => db.selectFrom('users').selectAll().where('id', 'in', keys).execute()
 *     .then(rows => new Map(rows.map(row => [String(row.id), row]))))
 */
export function coalesce<V> (
  load: (keys: string[]) => Promise<Map<string, V>>,
  { maxKeys = 500 }: { maxKeys?: number } = {}
): (key: string) => Promise<V | undefined> {
  if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be a positive integer, not ${maxKeys}`)
  let batch: Map<string, Array<Waiter<V>>> | undefined

  const run = (waiting: Map<string, Array<Waiter<V>>>) => {
    if (batch === waiting) batch = undefined
    Promise.resolve([...waiting.keys()]).then(load).then(found => {
      for (const [key, waiters] of waiting) for (const waiter of waiters) waiter.resolve(found.get(key))
    }).catch(error => {
      // Settles whoever is left (resolving again after a rejection, or the reverse, does nothing).
      for (const waiters of waiting.values()) for (const waiter of waiters) waiter.reject(error)
    })
  }

  return key => new Promise<V | undefined>((resolve, reject) => {
    if (batch === undefined) {
      const next = new Map<string, Array<Waiter<V>>>()
      batch = next
      setImmediate(run, next)
    }
    const waiters = batch.get(key)
    if (waiters) waiters.push({ resolve, reject })
    else batch.set(key, [{ resolve, reject }])
    // A full batch leaves; the next caller in this turn starts another.
    if (batch.size >= maxKeys) batch = undefined
  })
}

interface Waiter<V> {
  resolve: (value: V | undefined) => void
  reject: (error: unknown) => void
}
