import { createHmac, randomBytes } from 'node:crypto'

/** How long a rotated-out secret keeps signing beside the new one (CONTRACT §12). */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
export function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/** `v1,` + base64 HMAC-SHA256 over `{id}.{timestamp}.{body}`, keyed with the secret's decoded bytes. */
export function sign (secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The `webhook-signature` header: one signature per secret, space-separated. */
export function signatureHeader (secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map(secret => sign(secret, id, timestamp, body)).join(' ')
}
