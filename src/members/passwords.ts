import { hash, verify } from '@node-rs/argon2'
import { dictionary } from '@zxcvbn-ts/language-common'
import { invalidParam } from '../errors.js'

/** argon2id with the library's defaults (19 MiB, 2 passes, 1 lane: OWASP's recommendation). */
export function hashPassword (password: string): Promise<string> {
  return hash(password)
}

/** A member without a password (null) matches nothing, after the same work as a real check. */
export function verifyPassword (passwordHash: string | null, password: string): Promise<boolean> {
  return passwordHash === null ? verifyAgainstNothing(password) : verify(passwordHash, password)
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

/**
 * The common-password list of zxcvbn-ts (about 49,000 passwords seen most often in breaches, all in
 * lower case), read once when this module loads (start-up) and checked offline.
 */
const COMMON_PASSWORDS: ReadonlySet<string> = new Set(dictionary['passwords-common'])

const folded = (text: string) => text.trim().toLowerCase()

/**
 * Why `password` may not be chosen by the member with this email, or undefined when it may (CONTRACT
 * §11): it is a common password, or it is the email or its local part; both checks ignore case and
 * surrounding spaces. Length is the schema's job (8..128). Not applied to ADMIN_PASSWORD.
 * E.g. `passwordRefusal(' Ada.Lovelace', 'ada.lovelace@example.com')` → 'must not be your email address …'.
 */
export function passwordRefusal (password: string, email?: string): string | undefined {
  const candidate = folded(password)
  if (COMMON_PASSWORDS.has(candidate)) {
    return 'is too common: it is in a list of passwords that attackers try first; choose a longer or less predictable one'
  }
  if (email === undefined) return undefined
  const address = folded(email)
  const at = address.lastIndexOf('@')
  if (candidate === address || (at > 0 && candidate === address.slice(0, at))) {
    return 'must not be your email address or the part of it before the @'
  }
  return undefined
}

/** Throws 400 VALIDATION_FAILED naming `field` when `passwordRefusal` refuses the password (without an email: the list only). */
export function assertPasswordAllowed (field: string, password: string, email?: string): void {
  const refusal = passwordRefusal(password, email)
  if (refusal !== undefined) throw invalidParam(field, refusal)
}
