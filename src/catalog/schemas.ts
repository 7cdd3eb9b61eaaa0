import { Type, type Static } from 'typebox'
import { Currency, Id, Money, Nullable, PageQuery, PathId, PlainName, SliceQuery, SortQuery, Timestamp } from '../http/schemas.js'
import { MAX_STOCK } from '../limits.js'

export const PRODUCT_STATUSES = ['ACTIVE', 'INACTIVE'] as const
export const ProductStatusSchema = Type.Enum([...PRODUCT_STATUSES])
export type ProductStatus = Static<typeof ProductStatusSchema>

const Name = PlainName({ minLength: 1, maxLength: 200, examples: ['Espresso beans, 1 kg'] })
const Description = Nullable(Type.String({ maxLength: 5000 }))
const Price = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Minor units (cents)', examples: [2450] })
const Stock = Type.Integer({ minimum: 0, maximum: MAX_STOCK, examples: [100] })
const CategoryRef = Nullable(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'An existing category' }))

export const CreateProductBody = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  price: Price,
  stockQuantity: Stock,
  categoryId: Type.Optional(CategoryRef),
  status: Type.Optional(ProductStatusSchema),
}, { additionalProperties: false })
export type CreateProductBody = Static<typeof CreateProductBody>

/** PUT replaces all six fields (description and categoryId may be null). */
export const PutProductBody = Type.Object({
  name: Name,
  description: Description,
  price: Price,
  stockQuantity: Stock,
  categoryId: CategoryRef,
  status: ProductStatusSchema,
}, { additionalProperties: false })
export type PutProductBody = Static<typeof PutProductBody>

/** PATCH changes the fields it names; description and categoryId may be set to null. */
export const PatchProductBody = Type.Partial(PutProductBody, { additionalProperties: false })
export type PatchProductBody = Static<typeof PatchProductBody>

export const Product = Type.Object({
  productId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  price: Money,
  currency: Currency,
  stockQuantity: Type.Integer(),
  categoryId: Nullable(Id),
  status: ProductStatusSchema,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Product = Static<typeof Product>

const ProductFilters = {
  categoryId: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Products of this category and of its subcategories' })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Words that must all start a word of the name or description (case-insensitive)', examples: ['espresso bean'] })),
  minPrice: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Inclusive' })),
  maxPrice: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Inclusive' })),
}

/** Public lists: active products only, newest first, slice shape. */
export const ProductListQuery = Type.Object({ ...SliceQuery, ...ProductFilters }, { additionalProperties: false })
export type ProductListQuery = Static<typeof ProductListQuery>

export const PRODUCT_SORT = { createdAt: 'created_at', name: 'name', price: 'price', stockQuantity: 'stock_quantity' } as const

/** The admin list: every product, page shape, with a status filter and a sort. */
export const AdminProductListQuery = Type.Object({
  ...PageQuery,
  ...ProductFilters,
  status: Type.Optional(ProductStatusSchema),
  ...SortQuery(Object.keys(PRODUCT_SORT)),
}, { additionalProperties: false })
export type AdminProductListQuery = Static<typeof AdminProductListQuery>

export const Category = Type.Object({
  categoryId: Id,
  name: Type.String(),
  parentId: Nullable(Id),
})
export type Category = Static<typeof Category>

export const CreateCategoryBody = Type.Object({
  name: PlainName({ minLength: 1, maxLength: 100, examples: ['Coffee'] }),
  parentId: Type.Optional(CategoryRef),
}, { additionalProperties: false })
export type CreateCategoryBody = Static<typeof CreateCategoryBody>

export const CategoryParams = Type.Object({ categoryId: PathId }, { additionalProperties: false })
