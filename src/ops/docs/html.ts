/** HTML building blocks for the reference page: everything that reaches the page goes through `escape`. */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escape (value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, char => ENTITIES[char]!)
}

/** Escapes, then turns Markdown-style `code` spans (as used in schema descriptions) into <code>. */
export function prose (text: string | undefined): string {
  return escape(text ?? '').replace(/`([^`]+)`/g, '<code>$1</code>')
}

/**
 * A path that a narrow column may wrap after any `/` and nowhere else: each segment is a `<span>`
 * that the page's style keeps whole (`white-space: nowrap`, so not at a `-` either).
 */
export function wrappable (path: string): string {
  return path.split('/').map(segment => segment === '' ? '' : `<span>${escape(segment)}</span>`).join('/<wbr>')
}

/** A stable fragment id made of `[a-z0-9-]`: `get /api/v1/orders/{id}` → `get-api-v1-orders-id`. */
export function anchor (...parts: string[]): string {
  return parts.join(' ').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
}

/** A table: header cells are text (escaped); body cells are HTML already built by the caller. */
export function table (headers: string[], rows: string[][], className = ''): string {
  if (rows.length === 0) return ''
  const head = headers.map(h => `<th>${escape(h)}</th>`).join('')
  const body = rows.map(row => `<tr>${row.map(cell => `<td>${cell}</td>`).join('')}</tr>`).join('\n')
  return `<table${className ? ` class="${escape(className)}"` : ''}><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`
}
