// The login link `keel serve` prints at every start: `/#login=<code>`. The code is random,
// works once and for 15 minutes; the console trades it (POST /login) for a new API token of
// the server's first token holder, which the browser keeps until the person signs out. The
// token itself never reaches the terminal or a log; its hash joins the token file (or, with
// KEEL_API_TOKEN, the running server only).
import { createHash, randomBytes } from 'node:crypto';
import type { TokenEntry, TokenSetup } from './auth';
import { appendTokenHash } from './auth';

const CODE_TTL_MS = 15 * 60_000;

export class LoginCodes {
  private readonly codes = new Map<string, { name: string; expires: number }>();

  constructor(
    private readonly setup: TokenSetup,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new code for the first token's holder. */
  issue(): string {
    const code = randomBytes(24).toString('base64url');
    this.codes.set(hash(code), { name: this.setup.tokens[0]!.name, expires: this.now() + CODE_TTL_MS });
    return code;
  }

  /** The new token for a valid code (the code is spent), or null. */
  redeem(code: unknown): { token: string; name: string } | null {
    if (typeof code !== 'string' || !/^[A-Za-z0-9_-]{16,64}$/.test(code)) return null;
    const key = hash(code);
    const entry = this.codes.get(key);
    this.codes.delete(key);
    if (!entry || entry.expires < this.now()) return null;
    const token = `keel_${randomBytes(32).toString('base64url')}`;
    const added: TokenEntry = { name: entry.name, sha256: createHash('sha256').update(token, 'utf8').digest() };
    this.setup.tokens.push(added);
    if (this.setup.source !== 'env') appendTokenHash(this.setup.file, added);
    return { token, name: entry.name };
  }
}

const hash = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
