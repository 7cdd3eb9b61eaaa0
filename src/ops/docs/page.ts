import { renderGuide, type GuideSettings } from './guide.js'
import { anchor, escape, prose, wrappable } from './html.js'
import { groupByTag, renderOperation, type OpenApiDocument } from './operations.js'

// Inline only: the page must work offline and under the service's Content-Security-Policy
// (styles from 'self' or inline; no scripts at all).
const STYLE = `
:root { --fg: #1d232b; --muted: #5d6773; --line: #d9dee4; --bg-alt: #f5f7f9; --accent: #0b5cad; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); }
header { padding: 1.5rem 2rem; border-bottom: 1px solid var(--line); background: var(--bg-alt); }
header h1 { margin: 0 0 .25rem; font-size: 1.6rem; }
.layout { display: flex; align-items: flex-start; }
nav { position: sticky; top: 0; flex: 0 0 17rem; max-height: 100vh; overflow-y: auto; padding: 1rem 1.25rem; border-right: 1px solid var(--line); font-size: 13px; }
nav ul { list-style: none; margin: 0 0 .75rem; padding: 0; }
nav li { margin: .15rem 0; }
/* A long path wraps only after a slash (html.ts, wrappable), its later lines indented under the first. */
nav li li li a { display: block; padding-left: 1.25rem; text-indent: -1.25rem; }
nav li li li a span { white-space: nowrap; }
nav ul ul { padding-left: .75rem; }
main { flex: 1; min-width: 0; padding: 1rem 2rem 4rem; max-width: 70rem; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h2 { margin-top: 2.5rem; padding-bottom: .3rem; border-bottom: 2px solid var(--line); }
h3 a { color: inherit; }
h4 { margin: 1rem 0 .35rem; font-size: .95rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
pre { background: var(--bg-alt); padding: .75rem 1rem; overflow-x: auto; border-radius: 4px; }
table { border-collapse: collapse; width: 100%; margin: .35rem 0 .75rem; font-size: 13.5px; }
th, td { text-align: left; vertical-align: top; padding: .3rem .5rem; border: 1px solid var(--line); }
th { background: var(--bg-alt); }
td code { word-break: break-word; }
/* A constraint may be one long token (a pattern): it wraps rather than widening the page. */
table.params td:nth-child(5), table.fields td:nth-child(4) { overflow-wrap: anywhere; }
.operation { border: 1px solid var(--line); border-radius: 6px; padding: .25rem 1rem .5rem; margin: 1rem 0; }
.operation h3 { margin: .6rem 0 .2rem; font-size: 1.05rem; }
.summary { margin: .2rem 0; font-weight: 600; }
.muted, .example { color: var(--muted); font-weight: normal; }
.method { display: inline-block; min-width: 4.2rem; text-align: center; padding: .05rem .4rem; border-radius: 3px; color: #fff; font-size: .8rem; font-weight: 700; font-family: ui-monospace, monospace; }
.method.get { background: #1f7ac1; } .method.post { background: #2f8a3b; } .method.put { background: #a86500; }
.method.patch { background: #6b4fbb; } .method.delete { background: #b3261e; } .method.head, .method.options { background: #5d6773; }
.access { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: .8rem; font-weight: 600; }
.access.public { background: #e3f4e5; color: #1f5f28; } .access.auth { background: #fdf0d9; color: #7a4b00; }
.status { font-weight: 700; } .status.s2 { color: #1f6a2a; } .status.s4 { color: #9a5b00; } .status.s5 { color: #a1261d; }
details summary { cursor: pointer; }
.deprecated { color: #b3261e; font-size: .8rem; }
@media (max-width: 60rem) { .layout { display: block; } nav { position: static; max-height: none; border-right: 0; border-bottom: 1px solid var(--line); } main { padding: 1rem; } }
`

/**
 * The reference page: one self-contained HTML document (inline CSS, no scripts, nothing fetched)
 * built from the OpenAPI document, so every operation the service serves is on it.
 */
export function renderReferencePage (doc: OpenApiDocument, settings: GuideSettings): string {
  const groups = groupByTag(doc)
  const guideLinks = [['conventions', 'Conventions'], ['authentication', 'Authentication'], ['idempotency', 'Idempotency'], ['paging', 'Paging'], ['errors', 'Errors']]
  const toc = `<ul>
<li><a href="#guide"><strong>Guide</strong></a><ul>${guideLinks.map(([id, title]) => `<li><a href="#${id}">${escape(title)}</a></li>`).join('')}</ul></li>
<li><a href="#operations"><strong>Operations</strong></a><ul>
${groups.map(group => `<li><a href="#tag-${anchor(group.tag)}">${escape(group.tag)}</a><ul>${group.operations.map(({ method, path }) =>
    `<li><a href="#${anchor(method, path)}">${escape(method.toUpperCase())} ${wrappable(path)}</a></li>`).join('')}</ul></li>`).join('\n')}
</ul></li>
</ul>`
  const operations = groups.map(group => `<section class="tag" id="tag-${anchor(group.tag)}">
<h2>${escape(group.tag)}</h2>
${group.description ? `<p>${prose(group.description)}</p>` : ''}
${group.operations.map(listed => renderOperation(doc, listed)).join('\n')}
</section>`).join('\n')
  const count = groups.reduce((sum, group) => sum + group.operations.length, 0)

  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${escape(doc.info.title)} ${escape(doc.info.version)} — reference</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escape(doc.info.title)} <span class="muted">${escape(doc.info.version)}</span></h1>
<p>${prose(doc.info.description)}</p>
<p class="muted">OpenAPI ${escape(doc.openapi)} · ${count} operations · machine-readable document: <a href="/v3/api-docs">/v3/api-docs</a> · interactive: <a href="/swagger-ui.html">Swagger UI</a></p>
</header>
<div class="layout">
<nav aria-label="Contents">${toc}</nav>
<main>
${renderGuide(settings)}
<section id="operations">
<h2>Operations</h2>
<p>Grouped by tag. <em>Access</em> says whether a credential is needed; the role an operation needs is in its summary. Every operation can also answer the errors of the <a href="#errors">Errors</a> table.</p>
</section>
${operations}
</main>
</div>
</body>
</html>
`
}
