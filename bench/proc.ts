import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** µs per clock tick: /proc/<pid>/stat counts CPU time in ticks (USER_HZ). */
const TICK_US = 1e6 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim())

/** utime + stime of a process, every thread (/proc/<pid>/stat fields 14 and 15), in µs; undefined once it is gone. */
export function cpuOf (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * TICK_US
  } catch { return undefined }
}

/**
 * The CPU time of a process's children that have exited and been waited for (cutime + cstime,
 * /proc/<pid>/stat fields 16 and 17), in µs. For PostgreSQL's postmaster these are its backends and
 * background workers, among them the parallel workers a query starts and ends within a few hundred
 * ms, which a reading of running processes every 50 ms misses. Also the parent's pid (field 4).
 */
export function exitedChildrenOf (pid: number): { us: number, parent: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { us: (Number(fields[13]) + Number(fields[14])) * TICK_US, parent: Number(fields[1]) }
  } catch { return undefined }
}
