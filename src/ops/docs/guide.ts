import { ERRORS, errorSlug, type ErrorCode } from '../../errors.js'
import { escape, table } from './html.js'

/** What the guide needs from the configuration (values shown in examples). */
export interface GuideSettings {
  errorTypeBase: string
  currency: string
}

/** The hand-written part of the reference page; the error table is generated from the catalogue. */
export function renderGuide ({ errorTypeBase, currency }: GuideSettings): string {
  const errorRows = (Object.entries(ERRORS) as Array<[ErrorCode, { status: number, title: string }]>).map(([code, { status, title }]) => [
    `<code id="error-${escape(errorSlug(code))}">${escape(code)}</code>`,
    `<code class="status s${escape(String(status)[0])}">${escape(status)}</code>`,
    escape(title),
    `<code>${escape(`${errorTypeBase}/errors/${errorSlug(code)}`)}</code>`,
  ])

  return `<section id="guide">
<h2>Guide</h2>

<section id="conventions">
<h3>Conventions</h3>
<ul>
<li>Every response under <code>/api/**</code> is the envelope <code>{success, data, error}</code>: on success <code>error</code> is <code>null</code>, on failure <code>data</code> is <code>null</code>. The one exception is the admin CSV export, which streams <code>text/csv</code>.</li>
<li>Successful answers are <code>application/json</code>; errors are <code>application/problem+json</code> (the body is still the envelope).</li>
<li>Every <code>POST</code> that succeeds answers <strong>201</strong> (login included); <code>GET</code>, <code>PUT</code> and <code>PATCH</code> answer 200. <code>DELETE</code> is never supported: it answers 405 with an <code>Allow</code> header; orders are deleted with <code>PATCH /api/v1/orders/{id}/delete</code>.</li>
<li>Request bodies must be <code>application/json</code> (415 otherwise), at most 1 MiB by default (413). Unknown body fields and unknown query parameters are refused with 400 <code>VALIDATION_FAILED</code>; clients must ignore unknown <em>response</em> fields.</li>
<li>Timestamps are RFC 3339 in UTC with milliseconds (<code>2026-11-22T09:30:00.000Z</code>); dates are <code>yyyy-MM-dd</code>. Timestamp query parameters accept <code>Z</code> or an explicit offset.</li>
<li>Ids are positive integers. Money is an integer amount of minor units (cents) with an ISO 4217 <code>currency</code>, one per deployment (here <code>${escape(currency)}</code>): <code>2450</code> is 24.50.</li>
<li>Orders carry an <code>ETag</code> (from their <code>version</code>); <code>PUT</code> and <code>PATCH</code> honour <code>If-Match</code> and answer 412 <code>PRECONDITION_FAILED</code> when it no longer matches.</li>
<li>Conditional reads: every <code>GET</code> or <code>HEAD</code> that answers with an <code>ETag</code> honours <code>If-None-Match</code> (a list of tags, weak comparison, or <code>*</code>): when it matches, the answer is 304 with no body and the same <code>ETag</code>. Errors are never 304; other methods ignore <code>If-None-Match</code>.</li>
</ul>
</section>

<section id="authentication">
<h3>Authentication</h3>
<p>Operations marked <em>public</em> need no credential (an invalid one sent to them is ignored). Every other operation takes either credential below; a missing, malformed, expired or revoked one is 401 <code>UNAUTHORIZED</code> with a <code>WWW-Authenticate: Bearer</code> header, and a missing role or another member's resource is 403 <code>ACCESS_DENIED</code>.</p>
<h4>Bearer tokens</h4>
<ol>
<li><code>POST /api/v1/auth/login</code> with <code>{email, password}</code> answers 201 with <code>{accessToken, refreshToken, tokenType: "Bearer", expiresIn, refreshExpiresIn}</code> (lifetimes in seconds).</li>
<li>Send the access token as <code>Authorization: Bearer &lt;accessToken&gt;</code>. It is a signed JWT that lives 15 minutes.</li>
<li><strong>Refresh</strong> before or after it expires: <code>POST /api/v1/auth/refresh</code> with <code>{refreshToken}</code> answers a new pair. Each refresh token works once (it lives 14 days); presenting a spent one again revokes the whole session (reuse detection) and answers 401, so log in again.</li>
<li><code>POST /api/v1/auth/logout</code> ends the session: its refresh token and its access tokens are refused from then on.</li>
</ol>
<h4>API keys</h4>
<p>For scripts and servers: <code>POST /api/v1/members/me/api-keys</code> with <code>{name}</code> answers the key with its <code>secret</code>, shown <strong>only once</strong>. Send it as <code>X-API-Key: &lt;secret&gt;</code>; it authenticates as its member, like a bearer token, until revoked with <code>PATCH /api/v1/members/me/api-keys/{keyId}/revoke</code>. <code>GET /api/v1/members/me/api-keys</code> lists keys without their secrets. When both headers are sent, the bearer token is used.</p>
<p>Login, registration and password reset are rate-limited per client address, and failed logins per email: over the limit the answer is 429 <code>TOO_MANY_REQUESTS</code> with <code>Retry-After</code> and <code>RateLimit-*</code> headers.</p>
</section>

<section id="idempotency">
<h3>Idempotency</h3>
<p><code>POST /api/v1/orders</code> and the payment verbs (<code>process</code>, <code>refund</code>) accept an idempotency key, so that a request whose answer was lost can be sent again safely.</p>
<ul>
<li>Send it as the <code>Idempotency-Key</code> header or as the body field <code>idempotencyKey</code> (both present and different → 400). It is 1 to 255 printable ASCII characters; a UUID v4 is recommended.</li>
<li>A key is scoped to the caller, the method and the path, and kept for 24 hours by default.</li>
<li>The same key with the same body answers the <strong>first</strong> response again, with status <strong>200</strong>, the same body and <code>Location</code>, and the header <code>Idempotent-Replayed: true</code>; nothing is done twice.</li>
<li>The same key with a different body is 422 <code>IDEMPOTENCY_KEY_REUSED</code>. While the first request with a key is still running, a duplicate waits for it or gets 409 <code>IDEMPOTENCY_KEY_IN_FLIGHT</code> (retry after <code>Retry-After</code>).</li>
<li>Only successes are stored: a request that failed may be retried with the same key.</li>
</ul>
</section>

<section id="paging">
<h3>Paging</h3>
<p>Lists come in one of two shapes, named in each operation's response.</p>
<table>
<thead><tr><th>shape</th><th>used by</th><th><code>data</code></th></tr></thead>
<tbody>
<tr><td><strong>slice</strong> (cursor)</td><td>a member's own lists (orders, payments) and the public product list</td><td><code>{content, size, hasNext, nextCursor}</code></td></tr>
<tr><td><strong>page</strong> (offset)</td><td>admin lists (<code>/api/v1/admin/**</code>)</td><td><code>{content, page, size, totalElements, totalPages, first, last}</code></td></tr>
</tbody>
</table>
<ul>
<li><code>size</code> is 1 to 100 (default 20); <code>content</code> holds at most <code>size</code> elements.</li>
<li><strong>Cursor</strong>: to read the next slice, send the previous slice's <code>nextCursor</code> as <code>cursor</code>, with the same filters. <code>nextCursor</code> is <code>null</code> on the last slice. Cursors are opaque; cursor paging is stable, so items created while paging never cause duplicates or gaps.</li>
<li><strong>Page</strong>: <code>page</code> is zero-based (default 0). Slice lists accept <code>page</code> too, but not together with <code>cursor</code> (400). Admin lists also take <code>sort</code>, such as <code>createdAt,desc</code> (the default).</li>
<li>Lists are newest first (<code>createdAt</code>, then id, descending).</li>
</ul>
</section>

<section id="errors">
<h3>Errors</h3>
<p>Every error is the envelope with <code>data: null</code> and an <code>error</code> object in the style of RFC 9457 problem details:</p>
<ul>
<li><code>type</code>: <code>${escape(errorTypeBase)}/errors/&lt;slug&gt;</code>, the code in kebab case; <code>title</code>, <code>status</code>, <code>detail</code> (a sentence for people); <code>instance</code> (the request path); <code>code</code> (the stable value to program against); <code>timestamp</code>.</li>
<li><code>invalidParams</code>, only on <code>VALIDATION_FAILED</code>: <code>[{field, message}]</code>, with fields such as <code>items[0].quantity</code>, <code>size</code> or <code>id</code>.</li>
<li>429 and 503 answers carry <code>Retry-After</code>; 405 carries <code>Allow</code>; 401 carries <code>WWW-Authenticate</code>.</li>
</ul>
<pre><code>{"success": false, "data": null, "error": {
  "type": "${escape(errorTypeBase)}/errors/insufficient-stock", "title": "Insufficient Stock", "status": 409,
  "detail": "…", "instance": "/api/v1/orders", "code": "INSUFFICIENT_STOCK",
  "timestamp": "2026-11-22T09:30:00.000Z"}}</code></pre>
<p>Every code the API answers:</p>
${table(['code', 'status', 'title', 'type'], errorRows, 'errors')}
</section>
</section>`
}
