import { invalidParam } from '../errors.js'

/**
 * Range filters are checked alike (CONTRACT §11): a lower bound above its upper bound is a 400
 * naming the second field, e.g. `assertRange('minTotal', 50, 'maxTotal', 10)`. With `exclusive`
 * (a `createdFrom`/`createdTo` window, whose end is excluded) equal bounds are refused too.
 */
export function assertRange<T extends number | string> (
  lowField: string, low: T | undefined, highField: string, high: T | undefined, exclusive = false
): void {
  if (low === undefined || high === undefined) return
  if (exclusive ? low >= high : low > high) {
    throw invalidParam(highField, `must be ${exclusive ? 'after' : 'at least'} ${lowField}`)
  }
}
