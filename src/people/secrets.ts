/**
 * Hashing of what people choose or are given to prove who they are: PINs, operator passwords, one-time codes
 * and link codes. One format, `scrypt$<salt>$<hash>` (base64url, a fresh 16-byte salt each, 32-byte hash from
 * node:crypto's scrypt at its defaults), compared in constant time. Nothing here logs or keeps the clear text.
 */
import { randomBytes, randomInt, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (secret: string, salt: Buffer, length: number) => Promise<Buffer>;
const HASH_BYTES = 32;

/** The shape of a stored hash. */
export const SECRET_HASH = /^scrypt\$[\w-]+\$[\w-]+$/;

/** `scrypt$salt$hash` of `secret`, with a fresh random salt. */
export function hashSecret(secret: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64url')}$${scryptSync(secret, salt, HASH_BYTES).toString('base64url')}`;
}

/** True when `secret` hashes to `stored` (a {@link hashSecret} result); false for anything malformed. */
export async function secretMatches(secret: string, stored: string): Promise<boolean> {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scryptAsync(secret, Buffer.from(salt, 'base64url'), expected.length || HASH_BYTES);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Letters and digits nobody confuses when reading a code aloud or off a small screen (no 0/O, 1/I/L). */
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

/** A random code of `length` characters from an unambiguous alphabet (about 4.9 bits each). */
export function randomCode(length: number): string {
  let code = '';
  for (let i = 0; i < length; i += 1) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** A code as typed: upper case, spaces and dashes dropped. */
export function normaliseCode(typed: string): string {
  return typed.toUpperCase().replace(/[\s-]/g, '');
}
