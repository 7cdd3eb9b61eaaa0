import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * One process per DATA_DIR. PGlite has no lock of its own, and two processes on one directory each
 * answer 201 to writes of which only one survives a restart; so the embedded database claims its
 * directory with a PID file before opening it.
 */

/** The file in DATA_DIR naming the process that has the embedded database open. */
export const DATA_DIR_LOCK = 'order-service.pid'

/**
 * Claims DATA_DIR for one database handle, or refuses; resolves to the release.
 *
 * The claim is a file holding `<pid> <start time> <random>`: the process, when it started (so that
 * a pid reused by another process after a crash is not taken for the holder), and this handle. A
 * claim whose process is gone (a crash, `kill -9`) is taken over. Two processes taking over the
 * same stale claim at once both write theirs; each reads the file again a moment later, and the one
 * whose claim is no longer there refuses. The release removes the file only while it is still this
 * handle's claim. It guards processes of one host and PID namespace, not containers sharing a volume.
 */
export async function claimDataDir (dir: string): Promise<() => Promise<void>> {
  const file = join(dir, DATA_DIR_LOCK)
  const claim = `${process.pid} ${startTimeOf(process.pid) ?? 0} ${randomBytes(8).toString('hex')}`
  const holds = async () => (await readFile(file, 'utf8').catch(() => '')).trim() === claim
  for (let look = 0; ; look++) {
    try {
      await writeFile(file, claim, { flag: 'wx' })
      await new Promise(resolve => setTimeout(resolve, 100)) // a racing take-over would have replaced it by now
      if (await holds()) return async () => { if (await holds()) await rm(file, { force: true }) }
      continue // taken over: look at who holds it now
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const held = (await readFile(file, 'utf8').catch(() => '')).trim()
    const [pid, started] = held.split(' ').map(Number) as [number, number | undefined]
    const named = Number.isSafeInteger(pid) && pid > 0
    if (!named && look < 10) {
      await new Promise(resolve => setTimeout(resolve, 50)) // another process may be writing its claim
      continue
    }
    if (named && isRunning(pid) && (started === undefined || started === 0 || startTimeOf(pid) === started)) {
      throw new Error(`DATA_DIR ${dir} is in use by process ${pid}: the embedded database serves one process at a time ` +
        `(stop that process, or delete ${file} if it is not this service)`)
    }
    // Left by a process that has gone: removed only if it is still the claim just read.
    if ((await readFile(file, 'utf8').catch(() => '')).trim() === held) await rm(file, { force: true })
  }
}

function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' // exists, owned by someone else
  }
}

/** When the process started, in clock ticks since boot (Linux); undefined where /proc does not say. */
function startTimeOf (pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)!.split(' ')
    return Number(fields[19])
  } catch {
    return undefined
  }
}
