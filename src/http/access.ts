import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'

/**
 * Every route declares who may call it (`config: { access }`), and one `onRequest` hook enforces it:
 * - `public`: anyone; an invalid credential is ignored (the caller is anonymous);
 * - `member`: any authenticated caller;
 * - `owner`: an authenticated caller; the use case then checks ownership (`assertOwnerOrAdmin`) after
 *   loading the resource, because ownership is a property of the resource (CONTRACT §10 order);
 * - `admin`: the ADMIN role.
 */
/** A member's roles (CONTRACT §4); the members feature's schemas are built from this list. */
export const ROLES = ['USER', 'ADMIN'] as const
export type Role = typeof ROLES[number]

export const ACCESS_RULES = ['public', 'member', 'owner', 'admin'] as const
export type Access = typeof ACCESS_RULES[number]

export interface Principal {
  readonly memberId: number
  readonly role: Role
  /** The login session of a bearer token; null for an API key. */
  readonly sessionId: string | null
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

/**
 * Resolves the caller's credential: null when none was sent; throws UNAUTHORIZED when it is invalid.
 * A credential checked in memory (a bearer token) is answered synchronously, the answer returned or
 * the error thrown; one that needs the database (an API key) returns a promise of the same.
 */
export type Authenticator = (request: FastifyRequest) => Principal | null | Promise<Principal | null>

const REALM = 'Bearer realm="order-service"'

export function unauthorized (detail: string, invalidToken = true): ApiError {
  return new ApiError('UNAUTHORIZED', detail, {
    headers: { 'WWW-Authenticate': invalidToken ? `${REALM}, error="invalid_token"` : REALM },
  })
}

export function registerAccessRules (app: FastifyInstance, authenticate: Authenticator): void {
  app.decorateRequest('principal', null)

  // A route without a rule cannot be registered: the service refuses to start.
  app.addHook('onRoute', (route) => {
    const access = route.config?.access
    if (!access || !(ACCESS_RULES as readonly string[]).includes(access)) {
      throw new Error(`Route ${String(route.method)} ${route.url} declares no access rule (config.access)`)
    }
  })

  /** The rule applied to the caller `authenticate` found: the hook's error, or undefined to go on. */
  const admit = (request: FastifyRequest, access: Access | undefined, principal: Principal | null): ApiError | undefined => {
    if (access === 'public') {
      request.principal = principal
      return undefined
    }
    if (!principal) return unauthorized('Authentication is required: send Authorization: Bearer <access token> or X-API-Key.', false)
    request.principal = principal
    if (access === 'admin' && principal.role !== 'ADMIN') {
      return new ApiError('ACCESS_DENIED', 'This operation requires the ADMIN role.')
    }
    return undefined
  }

  // A callback hook, not an async one: a bearer token is checked synchronously, and the request then
  // goes on in the same turn instead of after a promise (bench/RESULTS.md, issue 22).
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) return done()
    const access = request.routeOptions.config.access
    let found: ReturnType<Authenticator>
    try {
      found = authenticate(request)
    } catch (error) {
      // An invalid credential on a public route: the caller is anonymous.
      return access === 'public' ? done(admit(request, access, null)) : done(error as Error)
    }
    if (found instanceof Promise) {
      found.then(principal => done(admit(request, access, principal)),
        error => access === 'public' ? done(admit(request, access, null)) : done(error as Error))
    } else {
      done(admit(request, access, found))
    }
  })
}

/** The authenticated caller of a non-public route. */
export function principalOf (request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized('Authentication is required.', false)
  return request.principal
}

export const isAdmin = (principal: Principal) => principal.role === 'ADMIN'

/** Throws ACCESS_DENIED unless the caller owns the resource or is an admin. */
export function assertOwnerOrAdmin (principal: Principal, ownerId: number, what: string): void {
  if (principal.memberId !== ownerId && !isAdmin(principal)) {
    throw new ApiError('ACCESS_DENIED', `Only the owner of this ${what} or an admin may do this.`)
  }
}
