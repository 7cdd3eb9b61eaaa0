import { idValue, type Db } from '../db/schema.js'
import type { CreateProductBody } from './schemas.js'
import type { ProductRow } from './table.js'

export function findProduct (db: Db, id: number | string): Promise<ProductRow | undefined> {
  return db.selectFrom('products').selectAll().where('id', '=', idValue(id)).executeTakeFirst()
}

export function insertProduct (db: Db, product: CreateProductBody): Promise<ProductRow> {
  return db.insertInto('products')
    .values({
      name: product.name,
      description: product.description ?? null,
      price: product.price,
      stock_quantity: product.stockQuantity,
      status: product.status ?? 'ACTIVE',
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}
