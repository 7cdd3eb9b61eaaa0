import { createHash, randomBytes } from 'node:crypto'

/** 256 bits of randomness, URL-safe: refresh tokens, mailed tokens, API key secrets. */
export function randomToken (): string {
  return randomBytes(32).toString('base64url')
}

/**
 * How high-entropy tokens are stored: SHA-256, hex. (A slow hash protects guessable passwords; a
 * 256-bit random token cannot be guessed, so a fast one-way hash is enough and keeps lookups cheap.)
 */
export function tokenHash (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
