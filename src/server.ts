import cluster, { type Worker } from 'node:cluster'
import { hostname } from 'node:os'
import { PerformanceObserver } from 'node:perf_hooks'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import closeWithGrace from 'close-with-grace'
import type { buildApp as BuildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'

/** A worker has this long to finish its in-flight requests and close its pool after SIGTERM. */
const GRACE_MS = 10_000
/** The primary waits a little longer, so that a worker's own time limit fires first. */
const PRIMARY_GRACE_MS = GRACE_MS + 2_000
/** Message from the primary asking a worker to shut down gracefully. */
const SHUTDOWN = 'order-service:shutdown'
/** pino's level numbers, for the lines written where there is no pino (`jsonLogger`). */
const LEVELS: Record<string, number> = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10, silent: Infinity }

/**
 * V8's allocation-site pretenuring off. Under sustained load V8 sometimes judged that the objects
 * a request allocates (pg's result rows, their Dates) live long, and allocated them straight in the
 * old generation, where they died and waited for a full collection: resident memory grew far past
 * the live heap, and the tail latency with it. Set before any request is served; every worker sets
 * it too.
 * Measured: bench/RESULTS.md, "The heap".
 */
setFlagsFromString('--no-allocation-site-pretenuring')

/**
 * The young generation's most, in MB (its two semi-spaces together). V8 would grow it to 32 MB: it
 * doubles it after collections in which much survives, which start-up does (routes, schemas), and it
 * keeps that size afterwards, mostly empty (the live heap is about 45 MB, of which the young
 * generation holds one or two). At 16 MB a process starts about 20 MB smaller and a request's
 * objects still die young. 8 MB saved 5 MB more but scavenged twice as often: the CSV export, whose
 * chunks of rows then outlived two scavenges, took 1.7-2.5 µs of CPU a row instead of 0.9-1.3.
 * V8 fixes the semi-spaces' maximum when the process starts (`--max-semi-space-size`, which only the
 * command line could set); what it reads at each collection is the growth factor, so growth stops
 * here by setting that factor to 1 once the young generation has reached this size.
 * Measured: bench/RESULTS.md, "The heap".
 */
const YOUNG_GENERATION_MB = 16
/**
 * How far the old generation may grow past what the last full collection left live before the next
 * one, in percent (V8 picks 10% to 300% from how fast it collects, and at least 8 MB more). Requests
 * that are in flight at two scavenges in a row are promoted and die in the old generation, about
 * 2 MB/s under full load; with V8's own choice the old generation grew to 150 MB and more between
 * full collections, whose marking runs concurrently. 25% keeps it under about 70 MB.
 * Measured: bench/RESULTS.md, "The heap".
 */
const HEAP_GROWING_PERCENT = 25

setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
capYoungGeneration(YOUNG_GENERATION_MB * 1024 * 1024)

/** Stops the young generation from growing past `bytes` (see YOUNG_GENERATION_MB); growth resumes if V8 shrank it below. */
function capYoungGeneration (bytes: number): void {
  let capped = false
  const check = () => {
    const size = getHeapSpaceStatistics().find(space => space.space_name === 'new_space')?.space_size ?? 0
    if ((size >= bytes) === capped) return
    capped = !capped
    setFlagsFromString(`--semi-space-growth-factor=${capped ? 1 : 2}`)
  }
  // Told after each collection; growth happens in a collection's epilogue, and needs several scavenges.
  new PerformanceObserver(check).observe({ entryTypes: ['gc'] })
}

// Only now the app's modules: the flags above apply to everything they allocate at start-up.
const { buildApp } = await import('./app.js')

let config: Config
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(`order-service: ${error.message}`)
  process.exit(1)
}

if (config.workers > 1 && cluster.isPrimary) supervise(config.workers)
else await serve(config)

/**
 * One server process: build the app, listen, and on SIGTERM/SIGINT stop accepting, drain, close the
 * pool, exit 0. A worker asked to stop while it is still starting stops once started, without listening.
 * A start-up failure (database unreachable, DATA_DIR in use) is one JSON line and exit code 1.
 */
async function serve (config: Config): Promise<void> {
  let stopAsked = false
  let shutdown = () => { stopAsked = true }
  if (cluster.isWorker) {
    // The primary asks by message (not by signal): a Ctrl-C already signals every process of the group,
    // and a second signal would make close-with-grace exit at once. A lost primary means shut down too.
    process.on('message', message => { if (message === SHUTDOWN) shutdown() })
    process.on('disconnect', () => shutdown())
  }
  let app: Awaited<ReturnType<typeof BuildApp>>
  try {
    app = await buildApp(config)
  } catch (error) {
    // Written even at LOG_LEVEL=silent: it is the only word on why the process exits 1.
    const log = jsonLogger('fatal', { role: cluster.isWorker ? 'worker' : 'server' })
    log(60, { err: (error as Error).message, database: config.databaseUrl ? 'DATABASE_URL' : `DATA_DIR=${config.dataDir}` }, 'start-up failed')
    process.exit(1)
  }
  if (stopAsked) {
    await app.close()
    process.exit(0)
  }
  let closing = false
  const grace = closeWithGrace({ delay: GRACE_MS, logger: app.log }, async ({ signal, err }) => {
    closing = true
    if (err) app.log.error({ err }, 'shutting down after an error')
    else app.log.info({ signal }, 'shutting down')
    // Stops accepting, waits for in-flight requests, then runs the onClose hooks (pool, timers).
    await app.close()
  })
  shutdown = () => { if (!closing) grace.close() }
  await app.listen({ port: config.port, host: config.host })
}

/**
 * The cluster primary: forks `count` workers that share the listening port, replaces a worker that dies
 * unexpectedly, and on SIGTERM/SIGINT asks each to shut down gracefully, exiting 0 once all have.
 * It serves no requests and opens no database.
 */
function supervise (count: number): void {
  const log = jsonLogger(config.logLevel, { role: 'primary' })
  let stopping = false
  let listened = false
  const startedAt = new Map<Worker, number>()

  const serving = new Set<Worker>()

  const fork = () => {
    const worker = cluster.fork()
    startedAt.set(worker, Date.now())
    worker.once('listening', () => {
      listened = true
      serving.add(worker)
    })
  }

  cluster.on('exit', (worker, code, signal) => {
    const ranFor = Date.now() - (startedAt.get(worker) ?? 0)
    startedAt.delete(worker)
    if (stopping) return
    if (!listened) {
      // None has ever served: a start-up failure (database unreachable, port taken) that a restart would repeat.
      log(50, { workerPid: worker.process.pid, code, signal }, 'worker failed to start; stopping')
      stopWorkers().then(() => process.exit(1), () => process.exit(1))
      return
    }
    log(40, { workerPid: worker.process.pid, code, signal }, 'worker died; starting another')
    // A worker crashing right after start waits a moment before the next try, instead of spinning.
    setTimeout(fork, ranFor < 5_000 ? 1_000 : 0)
  })

  /**
   * Asks every serving worker to shut down gracefully; resolves with their exit codes once all have
   * exited. A worker still starting may not listen for the message yet: it has served nothing, so
   * it is stopped with SIGTERM, and that counts as a clean exit (0).
   */
  const stopWorkers = (): Promise<Array<number | null>> => {
    stopping = true
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined)
    return Promise.all(workers.map(worker => new Promise<number | null>(resolve => {
      if (worker.isDead()) return resolve(worker.process.exitCode)
      const starting = !serving.has(worker)
      worker.once('exit', (code, signal) => resolve(starting && signal === 'SIGTERM' ? 0 : code))
      if (!starting && worker.isConnected()) worker.send(SHUTDOWN)
      else worker.process.kill('SIGTERM')
    })))
  }

  closeWithGrace({
    delay: PRIMARY_GRACE_MS,
    logger: { error: (message: unknown) => log(50, {}, String(message)) },
  }, async ({ signal, err }) => {
    if (err) log(50, { err: String(err) }, 'shutting down after an error')
    else log(30, { signal, workers: Object.keys(cluster.workers ?? {}).length }, 'shutting down')
    const codes = await stopWorkers()
    if (codes.some(code => code !== 0)) throw new Error(`workers exited with codes ${codes.join(', ')}`)
    log(30, {}, 'workers stopped')
  })

  log(30, { workers: count }, 'starting workers')
  for (let i = 0; i < count; i++) fork()
}

/**
 * Where there is no app, and so no pino (the cluster primary, a failed start-up): pino-shaped JSON
 * lines on stdout, at or above LOG_LEVEL.
 */
function jsonLogger (level: string, fields: Record<string, unknown>) {
  const base = { pid: process.pid, hostname: hostname(), ...fields }
  const threshold = LEVELS[level] ?? LEVELS.info!
  return (lineLevel: number, lineFields: Record<string, unknown>, msg: string) => {
    if (lineLevel >= threshold) process.stdout.write(JSON.stringify({ level: lineLevel, time: Date.now(), ...base, ...lineFields, msg }) + '\n')
  }
}
