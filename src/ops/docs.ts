import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyPluginAsync, RouteOptions } from 'fastify'
import type { OpenApiDocument } from './docs/operations.js'
import { renderReferencePage } from './docs/page.js'

const HTML = 'text/html; charset=utf-8'

/**
 * Swagger UI and the reference page (CONTRACT §8):
 * - `/swagger-ui.html` → `/swagger-ui/`: Swagger UI, its assets served from node_modules (no CDN),
 *   reading `/v3/api-docs`;
 * - `/docs/index.html` (`/docs`, `/docs/` redirect to it): one self-contained page built once from the
 *   OpenAPI document, on its first request. Not at start-up: the page (about 650 kB) and the document
 *   it is built from would stay in every process's memory whether or not anyone reads them.
 * None of these routes is in the OpenAPI document.
 */
export const docsRoutes: FastifyPluginAsync = async (app) => {
  await app.register(swaggerUiPlugin)

  app.get('/swagger-ui.html', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/swagger-ui/'))
  app.get('/swagger-ui', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/swagger-ui/'))
  app.get('/swagger-ui/index.html', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/swagger-ui/'))

  let page: string | undefined
  const build = () => renderReferencePage(app.swagger() as unknown as OpenApiDocument, app.config)

  for (const url of ['/docs', '/docs/']) {
    app.get(url, { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
      reply.redirect('/docs/index.html'))
  }
  app.get('/docs/index.html', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) => {
    page ??= build()
    return reply.type(HTML).send(page)
  })
}

/**
 * @fastify/swagger-ui cannot be given route config, and every route must declare an access rule
 * (src/http/access.ts) before any onRoute hook of ours could add one, since hooks of the root run
 * first. So, in this scope only, `route()` (which the plugin and its @fastify/static use for every
 * route) marks each route public: it serves nothing but the UI's files and the public document.
 */
async function swaggerUiPlugin (scope: FastifyInstance): Promise<void> {
  const route = scope.route
  // `this` is the instance that registers the route (a child scope with its own prefix).
  scope.route = function (this: FastifyInstance, options: RouteOptions) {
    return route.call(this, {
      ...options,
      config: { ...options.config, access: options.config?.access ?? 'public' },
      // The UI's page is `/swagger-ui/` only (`/swagger-ui` redirects to it): with Fastify's default,
      // `/swagger-ui/` would be added without onRoute hooks, unseen by the 405 rule (error-handler.ts).
      prefixTrailingSlash: 'slash',
    })
  } as typeof scope.route
  await scope.register(swaggerUi, {
    routePrefix: '/swagger-ui',
    // The UI reads the same document as every other client, not a copy under /swagger-ui/json.
    uiConfig: { urls: [{ url: '/v3/api-docs', name: 'Order service API' }], deepLinking: true },
    theme: { title: 'Order service API — Swagger UI' },
  })
}
