// The few parts of oidc-provider (which ships no types) that the tests and scripts/oidc-dev-provider.ts use.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  type Context = any
  export default class Provider {
    constructor (issuer: string, configuration: Record<string, unknown>)
    use (middleware: (ctx: Context, next: () => Promise<void>) => Promise<void>): void
    callback (): (req: IncomingMessage, res: ServerResponse) => void
    listen (port: number, host: string): void
    interactionDetails (req: IncomingMessage, res: ServerResponse): Promise<{ uid: string, prompt: { name: string } }>
    interactionFinished (req: IncomingMessage, res: ServerResponse, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>
    Grant: any
  }
}
