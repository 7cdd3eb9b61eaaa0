import type { FastifyBaseLogger } from 'fastify'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>
interface ChildOptions { level?: string, serializers?: unknown }

/** The app's logger is pino's, which says whether a level is enabled (Fastify's logger type does not). */
export interface LevelledLogger extends FastifyBaseLogger {
  isLevelEnabled (level: string): boolean
  msgPrefix?: string
}

/**
 * The request's logger (`request.log`, `reply.log`), made only when something is logged through it at
 * a level that is enabled. Fastify makes a pino child per request for its `requestId` binding, and
 * pino runs the bindings through the redaction paths, which cost every request time even when
 * nothing is logged (at `warn`, a request that succeeds logs nothing). A line that is logged goes
 * through the same child, made then with the same bindings and options, so it is exactly what it was:
 * the same fields, the same redaction. Measured: bench/RESULTS.md, issue 22.
 */
class RequestLogger {
  #child: LevelledLogger | undefined

  constructor (private readonly parent: LevelledLogger, private readonly bindings: Bindings, private readonly options: ChildOptions) {}

  /** The real child logger, made on first use. */
  get #logger (): LevelledLogger {
    this.#child ??= this.parent.child(this.bindings, this.options as object) as LevelledLogger
    return this.#child
  }

  /** Logs through the child when `level` is enabled; otherwise nothing is made, as pino would write nothing. */
  #log (level: Level, args: unknown[]): void {
    if (!(this.#child ?? this.parent).isLevelEnabled(level)) return
    const logger = this.#logger as unknown as Record<Level, (...args: unknown[]) => void>
    logger[level](...args)
  }

  get level (): string { return (this.#child ?? this.parent).level }
  set level (level: string) { this.#logger.level = level }
  get msgPrefix (): string | undefined { return this.#logger.msgPrefix }

  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}

  isLevelEnabled (level: string): boolean { return (this.#child ?? this.parent).isLevelEnabled(level) }
  child (bindings: Bindings, options?: object): FastifyBaseLogger { return this.#logger.child(bindings, options) }
}

/**
 * Fastify's `childLoggerFactory` (for a pino logger): a `RequestLogger` when the route sets no log
 * level or serializers of its own (none here does), else the child Fastify would make.
 */
export function requestLogger (logger: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options as object)
  return new RequestLogger(logger as LevelledLogger, bindings, options) as unknown as FastifyBaseLogger
}
