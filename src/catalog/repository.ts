import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import type { Database, Db } from '../db/schema.js'
import { idValue } from '../db/sql.js'
import type { KeysetPosition, Sort } from '../http/paging.js'
import type { CreateCategoryBody, CreateProductBody, ProductStatus, PutProductBody } from './schemas.js'
import type { CategoryRow, ProductRow } from './table.js'

/** Every column but the generated search vector. */
const PRODUCT_COLUMNS = [
  'id', 'name', 'description', 'price', 'stock_quantity', 'category_id', 'status', 'created_at', 'updated_at',
] as const

export function findProduct (db: Db, id: number | string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').select(PRODUCT_COLUMNS).where('id', '=', idValue(id)).executeTakeFirst()
}

export function insertProduct (db: Db, product: CreateProductBody): Promise<ProductRow> {
  return db.insertInto('products')
    .values({
      name: product.name,
      description: product.description ?? null,
      price: product.price,
      stock_quantity: product.stockQuantity,
      category_id: product.categoryId ?? null,
      status: product.status ?? 'ACTIVE',
    })
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** Writes the given fields; `undefined` when the product does not exist. */
export function updateProduct (db: Db, id: string, change: Partial<PutProductBody>): Promise<ProductRow | undefined> {
  return db.updateTable('products')
    .set({
      ...(change.name !== undefined && { name: change.name }),
      ...(change.description !== undefined && { description: change.description }),
      ...(change.price !== undefined && { price: change.price }),
      ...(change.stockQuantity !== undefined && { stock_quantity: change.stockQuantity }),
      ...(change.categoryId !== undefined && { category_id: change.categoryId }),
      ...(change.status !== undefined && { status: change.status }),
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', idValue(id))
    .returning(PRODUCT_COLUMNS)
    .executeTakeFirst()
}

export interface ProductFilter {
  statuses?: readonly ProductStatus[]
  /** This category and its subcategories, at any depth. */
  categoryId?: number
  /** Words (letters and digits) that must each start a word of the name or description. */
  words?: readonly string[]
  minPrice?: number
  maxPrice?: number
}

/**
 * `espresso bea` → `espresso:* & bea:*`: every word as a prefix, all required. The words contain
 * only letters and digits, so nothing in them is tsquery syntax.
 */
export const prefixQuery = (words: readonly string[]) => words.map(word => `${word}:*`).join(' & ')

function productConditions (eb: ExpressionBuilder<Database, 'products'>, filter: ProductFilter): Expression<SqlBool> {
  const conditions: Array<Expression<SqlBool>> = []
  // Literals, not parameters (the statuses come from a fixed list): a prepared statement's generic
  // plan can then match `status = 'ACTIVE'` against products_active_created_idx's predicate.
  if (filter.statuses) conditions.push(eb('status', 'in', filter.statuses.map(status => sql.lit(status))))
  if (filter.minPrice !== undefined) conditions.push(eb('price', '>=', filter.minPrice))
  if (filter.maxPrice !== undefined) conditions.push(eb('price', '<=', filter.maxPrice))
  if (filter.words) {
    // Served by products_search_idx (GIN); see docs/catalog.md for the plan.
    conditions.push(sql<SqlBool>`search @@ to_tsquery('simple', ${prefixQuery(filter.words)})`)
  }
  if (filter.categoryId !== undefined) {
    conditions.push(sql<SqlBool>`category_id in (
      with recursive tree (id) as (
        select id from categories where id = ${filter.categoryId}
        union all
        select c.id from categories c join tree t on c.parent_id = t.id
      )
      select id from tree)`)
  }
  return eb.and(conditions)
}

/** The public list: newest first, keyset (`after`) or offset paging. */
export function listProductsNewestFirst (
  db: Db, filter: ProductFilter & { after?: KeysetPosition, offset: number, limit: number }
): Promise<ProductRow[]> {
  return db.selectFrom('products').select(PRODUCT_COLUMNS)
    .where(eb => productConditions(eb, filter))
    .$if(filter.after !== undefined, qb => qb.where(eb =>
      eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(filter.after!.createdAt, filter.after!.id))))
    .orderBy('created_at', 'desc').orderBy('id', 'desc')
    .limit(filter.limit).offset(filter.offset)
    .execute()
}

export type ProductSortColumn = 'created_at' | 'name' | 'price' | 'stock_quantity'

/** The admin list: one page in the requested order, and how many products match in all. */
export async function pageProducts (
  db: Db, filter: ProductFilter & { sort: Sort<ProductSortColumn>, offset: number, limit: number }
): Promise<{ rows: ProductRow[], total: number }> {
  const matching = db.selectFrom('products').where(eb => productConditions(eb, filter))
  const [rows, count] = await Promise.all([
    matching.select(PRODUCT_COLUMNS)
      .orderBy(filter.sort.column, filter.sort.direction).orderBy('id', filter.sort.direction)
      .limit(filter.limit).offset(filter.offset)
      .execute(),
    matching.select(eb => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.total) }
}

export function findCategory (db: Db, id: number | string): Promise<CategoryRow | undefined> {
  return db.selectFrom('categories').selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

export function listCategories (db: Db): Promise<CategoryRow[]> {
  return db.selectFrom('categories').selectAll().orderBy('name').orderBy('id').execute()
}

export function insertCategory (db: Db, category: CreateCategoryBody): Promise<CategoryRow> {
  return db.insertInto('categories')
    .values({ name: category.name, parent_id: category.parentId ?? null })
    .returningAll()
    .executeTakeFirstOrThrow()
}
