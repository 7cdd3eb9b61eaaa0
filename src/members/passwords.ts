import { hash, verify } from '@node-rs/argon2'

/** argon2id with the library's defaults (19 MiB, 2 passes, 1 lane: OWASP's recommendation). */
export function hashPassword (password: string): Promise<string> {
  return hash(password)
}

export function verifyPassword (passwordHash: string, password: string): Promise<boolean> {
  return verify(passwordHash, password)
}

let dummyHash: Promise<string> | undefined

/**
 * Spends the same work as a real check when there is no account, so that an unknown email and
 * a wrong password take the same time (no account enumeration by timing).
 */
export async function verifyAgainstNothing (password: string): Promise<false> {
  dummyHash ??= hashPassword('no account has this password')
  await verify(await dummyHash, password)
  return false
}
