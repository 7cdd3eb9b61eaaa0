import type { Generated, Selectable } from 'kysely'
import type { ProductStatus } from './schemas.js'

export interface ProductsTable {
  id: Generated<number>
  name: string
  description: string | null
  price: number
  stock_quantity: number
  status: Generated<ProductStatus>
  created_at: Generated<Date>
  updated_at: Generated<Date>
}

export type ProductRow = Selectable<ProductsTable>
