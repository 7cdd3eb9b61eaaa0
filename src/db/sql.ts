import { sql } from 'kysely'

/**
 * A path id as a bigint parameter. Path ids are validated digits up to 2^63−1, which may exceed
 * what a JS number holds exactly, so they travel to PostgreSQL as text and are cast there:
 * `where('id', '=', idValue(request.params.id))`.
 */
export const idValue = (id: string | number) => sql<number>`cast(${String(id)} as bigint)`
