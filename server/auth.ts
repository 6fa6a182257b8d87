// Who may call the API: a bearer token on every /api request (no cookies, so no CSRF).
// Tokens come from KEEL_API_TOKEN (with KEEL_API_APPROVER naming its holder) or from
// <config dir>/api-tokens.json, where only their SHA-256 is kept; on first start, with
// neither, one is generated, written there (mode 0600) and printed once.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { configDir } from '../shared/config-dir';

const tokenFileSchema = z.strictObject({
  tokens: z.array(z.strictObject({ name: z.string().min(1), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).min(1),
});
export type TokenFile = z.infer<typeof tokenFileSchema>;

export interface TokenEntry {
  /** Recorded as the approver of what this token approves. */
  name: string;
  sha256: Buffer;
}

export interface TokenSetup {
  tokens: TokenEntry[];
  /** Set only when a token was generated now: print it once, it is not stored in clear. */
  generated: string | null;
  source: 'env' | 'file' | 'generated';
  file: string;
}

export { configDir };

const hash = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

export function loadTokens(env: NodeJS.ProcessEnv = process.env): TokenSetup {
  const file = path.join(configDir(env), 'api-tokens.json');
  if (env.KEEL_API_TOKEN) {
    if (env.KEEL_API_TOKEN.length < 16) throw new Error('KEEL_API_TOKEN must be at least 16 characters');
    return { tokens: [{ name: env.KEEL_API_APPROVER || 'api', sha256: hash(env.KEEL_API_TOKEN) }], generated: null, source: 'env', file };
  }
  if (fs.existsSync(file)) {
    const parsed = tokenFileSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
    if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    return { tokens: parsed.data.tokens.map((t) => ({ name: t.name, sha256: Buffer.from(t.sha256, 'hex') })), generated: null, source: 'file', file };
  }
  const token = `keel_${randomBytes(32).toString('base64url')}`;
  const name = safeUserName();
  const content: TokenFile = { tokens: [{ name, sha256: hash(token).toString('hex') }] };
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return { tokens: [{ name, sha256: hash(token) }], generated: token, source: 'generated', file };
}

function safeUserName(): string {
  try {
    return os.userInfo().username || 'owner';
  } catch {
    return 'owner';
  }
}

/** The holder of a presented `Authorization: Bearer …` header, or null. */
export function authenticate(tokens: readonly TokenEntry[], header: string | undefined): TokenEntry | null {
  const m = header?.match(/^Bearer ([\x21-\x7e]{16,512})$/);
  if (!m) return null;
  const presented = hash(m[1]!);
  // Every entry is compared, so the time taken says nothing about which one matched.
  let found: TokenEntry | null = null;
  for (const t of tokens) if (timingSafeEqual(t.sha256, presented) && found === null) found = t;
  return found;
}

/** Adds a token (by its hash) to the token file, so it is accepted after a restart too. */
export function appendTokenHash(file: string, entry: TokenEntry): void {
  const current = fs.existsSync(file) ? tokenFileSchema.parse(JSON.parse(fs.readFileSync(file, 'utf8'))) : { tokens: [] };
  const content: TokenFile = { tokens: [...current.tokens, { name: entry.name, sha256: entry.sha256.toString('hex') }] };
  fs.writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
}
