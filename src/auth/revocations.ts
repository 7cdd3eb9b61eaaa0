import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../db/schema.js'
import { findStatusesChangedSince, findSuspendedMemberIds } from '../members/repository.js'
import { databaseNow, findSessionsRevokedSince } from './repository.js'
import { ACCESS_TOKEN_TTL_SECONDS } from './tokens.js'

/** How far back each poll looks again, for revocations whose transactions committed late. */
const OVERLAP_MS = 5_000
/** A revoked session is remembered until every access token it could have had has expired. */
const REMEMBER_MS = ACCESS_TOKEN_TTL_SECONDS * 1000 + 60_000

/**
 * Which sessions are revoked and which members are suspended, kept in process memory so that
 * checking an access token costs no database round trip.
 *
 * A logout, password change or suspension made through this instance takes effect here at once.
 * Other instances learn of it by polling the database every `intervalMs` (default 1 s): that is
 * the bound on how long a revoked access token can still be used elsewhere. Memory is bounded by
 * the sessions revoked in the last 16 minutes plus the suspended members.
 */
export class Revocations {
  readonly #revoked = new Map<string, number>() // session id → forget after (epoch ms)
  readonly #suspended = new Set<number>()
  #since: Date | undefined
  #timer: NodeJS.Timeout | undefined

  constructor (
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    private readonly intervalMs = 1_000
  ) {}

  isRevoked (sessionId: string): boolean {
    const forgetAfter = this.#revoked.get(sessionId)
    return forgetAfter !== undefined && forgetAfter > Date.now()
  }

  isSuspended (memberId: number): boolean {
    return this.#suspended.has(memberId)
  }

  /** Records revocations made by this instance (they are in the database too). */
  revoke (sessionIds: readonly string[]): void {
    for (const id of sessionIds) this.#revoked.set(id, Date.now() + REMEMBER_MS)
  }

  setSuspended (memberId: number, suspended: boolean): void {
    if (suspended) this.#suspended.add(memberId)
    else this.#suspended.delete(memberId)
  }

  /** Loads the current state, then polls in the background until `stop()`. */
  async start (): Promise<void> {
    const now = await databaseNow(this.db)
    for (const id of await findSuspendedMemberIds(this.db)) this.#suspended.add(id)
    await this.#loadRevokedSince(new Date(now.getTime() - REMEMBER_MS))
    this.#since = now
    this.#timer = setInterval(() => {
      this.poll().catch(error => this.log.warn({ err: error }, 'revocation poll failed; will retry'))
    }, this.intervalMs)
    this.#timer.unref()
  }

  stop (): void {
    clearInterval(this.#timer)
  }

  /** One look at what changed since the previous one. */
  async poll (): Promise<void> {
    const now = await databaseNow(this.db)
    const since = new Date((this.#since ?? now).getTime() - OVERLAP_MS)
    await this.#loadRevokedSince(since)
    for (const member of await findStatusesChangedSince(this.db, since)) this.setSuspended(member.id, member.status === 'SUSPENDED')
    this.#since = now
    const nowMs = Date.now()
    for (const [id, forgetAfter] of this.#revoked) if (forgetAfter <= nowMs) this.#revoked.delete(id)
  }

  async #loadRevokedSince (since: Date): Promise<void> {
    for (const session of await findSessionsRevokedSince(this.db, since)) {
      this.#revoked.set(session.id, session.revokedAt.getTime() + REMEMBER_MS)
    }
  }
}
