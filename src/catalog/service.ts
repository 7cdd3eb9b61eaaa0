import type { Db } from '../db/schema.js'
import { ApiError } from '../http/errors.js'
import { findProduct, insertProduct } from './repository.js'
import type { CreateProductBody, Product } from './schemas.js'
import type { ProductRow } from './table.js'

export function toProduct (row: ProductRow, currency: string): Product {
  return {
    productId: row.id,
    name: row.name,
    description: row.description,
    price: row.price,
    currency,
    stockQuantity: row.stock_quantity,
    status: row.status,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

export async function createProduct (db: Db, currency: string, body: CreateProductBody): Promise<Product> {
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
