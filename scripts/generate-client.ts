/**
 * Regenerates the typed client's types from the live OpenAPI document (client/README.md):
 *
 *   npm run client:generate     # writes client/src/schema.ts; commit it with the API change
 */
import { readFile, writeFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { liveDocument, SCHEMA_FILE, schemaSource } from './client-types.js'

const source = await schemaSource(await liveDocument())
const before = await readFile(SCHEMA_FILE, 'utf8').catch(() => '')
const name = relative(process.cwd(), SCHEMA_FILE)
if (before === source) {
  console.log(`${name} is up to date`)
} else {
  await writeFile(SCHEMA_FILE, source)
  console.log(`${name} regenerated from /v3/api-docs (${source.split('\n').length} lines)`)
}
