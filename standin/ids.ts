// Identifiers in the shapes the real API uses (`req_…`, `msg_…`, `toolu_…`), so code
// that logs or matches on them sees nothing unusual.
import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function base62(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

export const requestId = (): string => `req_011C${base62(20)}`;
export const messageId = (): string => `msg_01${base62(22)}`;
export const toolUseId = (): string => `toolu_01${base62(22)}`;
export const serverToolUseId = (): string => `srvtoolu_01${base62(22)}`;

/** An opaque signature, stable for the same thinking text (the real one is opaque too). */
export function thinkingSignature(thinking: string): string {
  const digest = createHash('sha256').update(thinking).digest('base64');
  return `Eq${digest}${createHash('sha512').update(thinking).digest('base64')}`;
}
