import { Type, type Static } from 'typebox'
import {
  Component, Currency, documentAs, Envelope, Id, Money, Nullable, Page, PageQuery, PathId, PlainName, Ref, Slice, SliceQuery, SortQuery, Timestamp,
} from '../http/schemas.js'
import { MAX_STOCK } from '../limits.js'

export const PRODUCT_STATUSES = ['ACTIVE', 'INACTIVE'] as const
export const ProductStatusSchema = Component('ProductStatus', Type.Enum([...PRODUCT_STATUSES]))
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
  status: Type.Optional(Ref(ProductStatusSchema)),
}, { additionalProperties: false })
export type CreateProductBody = Static<typeof CreateProductBody>

/** PUT replaces all six fields (description and categoryId may be null). */
export const PutProductBody = Type.Object({
  name: Name,
  description: Description,
  price: Price,
  stockQuantity: Stock,
  categoryId: CategoryRef,
  status: Ref(ProductStatusSchema),
}, { additionalProperties: false })
export type PutProductBody = Static<typeof PutProductBody>

/** PATCH changes the fields it names; description and categoryId may be set to null. */
export const PatchProductBody = Type.Partial(PutProductBody, { additionalProperties: false })
export type PatchProductBody = Static<typeof PatchProductBody>

export const Product = Component('Product', Type.Object({
  productId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  price: Money,
  currency: Currency,
  stockQuantity: Type.Integer(),
  categoryId: Nullable(Id),
  status: Ref(ProductStatusSchema),
  createdAt: Timestamp,
  updatedAt: Timestamp,
}, { description: 'A product of the catalog; prices in minor units of the currency' }))
export type Product = Static<typeof Product>

const ProductFilters = {
  categoryId: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Products of this category and of its subcategories' })),
  // At least one letter or digit, at most ten words: checked by the service (catalog/service.ts) with its own messages.
  q: Type.Optional(documentAs(Type.String({ minLength: 1, maxLength: 200, description: 'Words that must all start a word of the name or description (case-insensitive)' }), {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    pattern: '[\\p{L}\\p{N}]',
    description: 'Words that must all start a word of the name or description (case-insensitive): at least one letter or digit, at most ten words (runs of letters and digits), e.g. `espresso bean`',
  })),
  minPrice: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Inclusive' })),
  maxPrice: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Inclusive; at least minPrice' })),
}

/** Public lists: active products only, newest first, slice shape. */
export const ProductListQuery = Type.Object({ ...SliceQuery, ...ProductFilters }, { additionalProperties: false })
export type ProductListQuery = Static<typeof ProductListQuery>

export const PRODUCT_SORT = { createdAt: 'created_at', name: 'name', price: 'price', stockQuantity: 'stock_quantity' } as const

/** The admin list: every product, page shape, with a status filter and a sort. */
export const AdminProductListQuery = Type.Object({
  ...PageQuery,
  ...ProductFilters,
  status: Type.Optional(Ref(ProductStatusSchema)),
  ...SortQuery(Object.keys(PRODUCT_SORT)),
}, { additionalProperties: false })
export type AdminProductListQuery = Static<typeof AdminProductListQuery>

export const Category = Component('Category', Type.Object({
  categoryId: Id,
  name: Type.String(),
  parentId: Nullable(Id),
}, { description: 'A product category; parentId links a subcategory to its parent' }))
export type Category = Static<typeof Category>

export const CreateCategoryBody = Type.Object({
  name: PlainName({ minLength: 1, maxLength: 100, examples: ['Coffee'] }),
  parentId: Type.Optional(CategoryRef),
}, { additionalProperties: false })
export type CreateCategoryBody = Static<typeof CreateCategoryBody>

export const CategoryParams = Type.Object({ categoryId: PathId }, { additionalProperties: false })

/** The answers' envelopes, made when this module loads (named components). */
export const ProductEnvelope = Envelope(Product)
export const ProductSliceEnvelope = Envelope(Slice(Product))
export const ProductPageEnvelope = Envelope(Page(Product))
export const CategoryEnvelope = Envelope(Category)
export const CategoryListEnvelope = Envelope(Type.Array(Category))
