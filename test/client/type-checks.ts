/**
 * What the typed client refuses at compile time. Never run: `npm run typecheck` compiles it against the
 * checked-in types, and test/client/generated.test.ts against types freshly generated from the live
 * document; an `@ts-expect-error` that no longer finds an error fails the compilation.
 */
import { createOrderClient, type OrderServiceError } from '../../client/src/index.js'

export async function typeChecks (error: OrderServiceError): Promise<void> {
  const api = createOrderClient({ baseUrl: 'http://localhost:8080', token: 'token' })

  // @ts-expect-error items are required
  await api.placeOrder({ customerId: 1 })
  // @ts-expect-error quantities are numbers
  await api.placeOrder({ customerId: 1, items: [{ productId: 1, quantity: '2' }] })
  // @ts-expect-error no such field: unknown body fields are refused
  await api.placeOrder({ customerId: 1, items: [{ productId: 1, quantity: 2 }], coupon: 'FREE' })
  // @ts-expect-error ids are numbers
  await api.getOrder('42')
  // @ts-expect-error no such operation
  await api.client.GET('/api/v1/orders/{id}/refund')
  // @ts-expect-error DELETE is not part of the API (405)
  await api.client.DELETE('/api/v1/orders/{id}')

  // `code` is the catalogue's: a code that does not exist cannot even be compared with.
  // @ts-expect-error not a code of the catalogue
  if (error.code === 'OUT_OF_STOCK') return
  if (error.code === 'INSUFFICIENT_STOCK') return
  const status: 'PLACED' | 'CONFIRMED' | 'PENDING' | 'DELIVERED' | 'CANCELLED' | 'DELETED' = (await api.getOrder(1)).data.status
  console.log(status)
}
