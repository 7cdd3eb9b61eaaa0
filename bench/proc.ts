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
