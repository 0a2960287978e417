// The password PostgreSQL is given, as a SCRAM-SHA-256 verifier computed here, so the credential is
// never in a statement (nor the server's statement or error log), whatever its characters. The
// verifier is over the password as PostgreSQL would prepare it (saslprep.ts); a credential that
// cannot be set so that every client logs in with it is refused instead.
import { Buffer } from 'node:buffer';
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { mapAndNormalize, saslprep } from './saslprep.ts';

/** The SCRAM iteration count PostgreSQL itself uses (`scram_iterations` default). */
export const SCRAM_ITERATIONS = 4096;

const pbkdf2Async = promisify(pbkdf2);

/**
 * Why a credential cannot be set as a verifier that logs in everywhere, or nothing: a NUL, a lone
 * surrogate, or one that fails SASLprep (PostgreSQL then hashes its raw bytes) yet changes under
 * SASLprep's mapping and NFKC, which drivers that apply only those (node-postgres) would hash
 * instead. No reason quotes the credential.
 */
export function credentialProblem(credential: string): string | undefined {
  if (credential.includes('\0')) return 'the credential holds a NUL character, which PostgreSQL cannot take';
  if (/\p{Surrogate}/u.test(credential)) return 'the credential is not valid Unicode text (it holds a lone surrogate)';
  if (!saslprep(credential).ok && mapAndNormalize(credential) !== credential) {
    return 'the credential fails SASLprep, so PostgreSQL hashes its raw bytes, yet drivers that only map and normalize it would hash other bytes and could not log in';
  }
  return undefined;
}

/** The bytes PostgreSQL hashes for `credential`: SASLprep's output, or the raw bytes where SASLprep fails. */
export function passwordBytes(credential: string): Buffer {
  const prepared = saslprep(credential);
  return Buffer.from(prepared.ok ? prepared.text : credential, 'utf8');
}

/** The verifier `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` for `credential` (a fresh salt unless given). */
export async function scramVerifier(credential: string, salt = randomBytes(16), iterations = SCRAM_ITERATIONS): Promise<string> {
  const salted = await pbkdf2Async(passwordBytes(credential), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const b64 = (b: Buffer) => b.toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}
