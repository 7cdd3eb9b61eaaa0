import { Type, type Static } from 'typebox'
import { Currency, Id, Money, Nullable, Timestamp } from '../http/schemas.js'

export const ProductStatusSchema = Type.Enum(['ACTIVE', 'INACTIVE'])
export type ProductStatus = Static<typeof ProductStatusSchema>

export const CreateProductBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200, examples: ['Espresso beans, 1 kg'] }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 5000 }))),
  price: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Minor units (cents)', examples: [2450] }),
  stockQuantity: Type.Integer({ minimum: 0, maximum: 2_147_483_647, examples: [100] }),
  status: Type.Optional(ProductStatusSchema),
}, { additionalProperties: false })
export type CreateProductBody = Static<typeof CreateProductBody>

export const Product = Type.Object({
  productId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  price: Money,
  currency: Currency,
  stockQuantity: Type.Integer(),
  status: ProductStatusSchema,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Product = Static<typeof Product>
