import type { Db } from '../db/schema.js'
import { assertRange } from '../http/ranges.js'
import { ApiError, invalidParam } from '../errors.js'
import { pageWindow, parseSort, sliceWindow, toPage, toSlice } from '../http/paging.js'
import {
  findCategory, findProduct, insertCategory, insertProduct, listCategories, listProductsNewestFirst, pageProducts,
  updateProduct, type ProductFilter,
} from './repository.js'
import {
  PRODUCT_SORT, type AdminProductListQuery, type Category, type CreateCategoryBody, type CreateProductBody,
  type PatchProductBody, type Product, type ProductListQuery,
} from './schemas.js'
import type { CategoryRow, ProductRow } from './table.js'

export function toProduct (row: ProductRow, currency: string): Product {
  return {
    productId: row.id,
    name: row.name,
    description: row.description,
    price: row.price,
    currency,
    stockQuantity: row.stock_quantity,
    categoryId: row.category_id,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

export const toCategory = (row: CategoryRow): Category => ({ categoryId: row.id, name: row.name, parentId: row.parent_id })

/** A category named in a body must exist (400 naming the field); null means none. */
async function assertCategoryExists (db: Db, field: string, id: number | null | undefined): Promise<void> {
  if (id === null || id === undefined) return
  if (!(await findCategory(db, id))) throw invalidParam(field, 'is not an existing category')
}

export async function createProduct (db: Db, currency: string, body: CreateProductBody): Promise<Product> {
  await assertCategoryExists(db, 'categoryId', body.categoryId)
  return toProduct(await insertProduct(db, body), currency)
}

const notFound = (id: string) => new ApiError('PRODUCT_NOT_FOUND', `Product ${id} does not exist.`)

/** Admin view: every product. */
export async function getProduct (db: Db, currency: string, id: string): Promise<Product> {
  const row = await findProduct(db, id)
  if (!row) throw notFound(id)
  return toProduct(row, currency)
}

/** Public view: inactive products do not exist. */
export async function getActiveProduct (db: Db, currency: string, id: string): Promise<Product> {
  const row = await findProduct(db, id)
  if (!row || row.status !== 'ACTIVE') throw notFound(id)
  return toProduct(row, currency)
}

/** PUT (every field) or PATCH (the fields sent). Prices of placed orders are snapshots and do not change. */
export async function changeProduct (db: Db, currency: string, id: string, change: PatchProductBody): Promise<Product> {
  const current = await findProduct(db, id)
  if (!current) throw notFound(id)
  await assertCategoryExists(db, 'categoryId', change.categoryId)
  if (Object.keys(change).length === 0) return toProduct(current, currency) // PATCH {}: nothing to change
  const row = await updateProduct(db, id, change)
  if (!row) throw notFound(id)
  return toProduct(row, currency)
}

const MAX_SEARCH_WORDS = 10

/**
 * The words of a `q` parameter, as written; none, or more than ten, is a 400. They are lower-cased
 * by PostgreSQL's text search, as the indexed text was: JavaScript lower-cases some letters another
 * way (`İ` becomes `i` and a combining dot, a final `Σ` becomes `ς`), which then matched nothing.
 */
function searchWords (q: string | undefined): string[] | undefined {
  if (q === undefined) return undefined
  const words = q.match(/[\p{L}\p{N}]+/gu)
  if (!words) throw invalidParam('q', 'must contain at least one letter or digit')
  if (words.length > MAX_SEARCH_WORDS) throw invalidParam('q', `must have at most ${MAX_SEARCH_WORDS} words`)
  return words
}

function productFilter (query: Partial<ProductListQuery>): ProductFilter {
  assertRange('minPrice', query.minPrice, 'maxPrice', query.maxPrice)
  return { categoryId: query.categoryId, words: searchWords(query.q), minPrice: query.minPrice, maxPrice: query.maxPrice }
}

/** The public list and search: active products, newest first, slice shape. */
export async function listActiveProducts (db: Db, currency: string, query: ProductListQuery) {
  const { size, ...window } = sliceWindow(query)
  const rows = await listProductsNewestFirst(db, { ...productFilter(query), statuses: ['ACTIVE'], ...window })
  return toSlice(rows, size, row => toProduct(row, currency))
}

/** The admin list: every product (or those of one status), page shape, sorted. */
export async function pageAllProducts (db: Db, currency: string, query: AdminProductListQuery) {
  const window = pageWindow(query)
  const { rows, total } = await pageProducts(db, {
    ...productFilter(query),
    statuses: query.status ? [query.status] : undefined,
    sort: parseSort(query.sort, PRODUCT_SORT),
    ...window,
  })
  return toPage(rows, total, window, row => toProduct(row, currency))
}

export async function createCategory (db: Db, body: CreateCategoryBody): Promise<Category> {
  await assertCategoryExists(db, 'parentId', body.parentId)
  return toCategory(await insertCategory(db, body))
}

export async function getCategory (db: Db, id: string): Promise<Category> {
  const row = await findCategory(db, id)
  if (!row) throw new ApiError('CATEGORY_NOT_FOUND', `Category ${id} does not exist.`)
  return toCategory(row)
}

export const getCategories = async (db: Db): Promise<Category[]> => (await listCategories(db)).map(toCategory)
