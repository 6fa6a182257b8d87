// The API token: generated once into the config directory (only its hash kept, file 0600),
// read back on the next start, or given by KEEL_API_TOKEN; the holder's name is the approver.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { authenticate, loadTokens } from '../../server/auth';
import { openApiDocument } from '../../server/openapi';
import { routes } from '../../server/routes';

const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-auth-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('API tokens', () => {
  it('generates a token on first start, keeps only its hash, and accepts it on the next start', () => {
    const dir = tempDir();
    const first = loadTokens({ KEEL_CONFIG_DIR: dir });
    expect(first.source).toBe('generated');
    const token = first.generated!;
    expect(token).toMatch(/^keel_[A-Za-z0-9_-]{43}$/);
    const file = path.join(dir, 'api-tokens.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, 'utf8')).not.toContain(token);

    const second = loadTokens({ KEEL_CONFIG_DIR: dir });
    expect(second.source).toBe('file');
    expect(second.generated).toBeNull();
    expect(authenticate(second.tokens, `Bearer ${token}`)?.name).toBe(first.tokens[0]!.name);
    expect(authenticate(second.tokens, `Bearer ${token}x`)).toBeNull();
    expect(authenticate(second.tokens, token)).toBeNull();
    expect(authenticate(second.tokens, undefined)).toBeNull();
  });

  it('takes KEEL_API_TOKEN and KEEL_API_APPROVER from the environment, writing nothing', () => {
    const dir = tempDir();
    const setup = loadTokens({ KEEL_CONFIG_DIR: dir, KEEL_API_TOKEN: 'a-long-enough-secret-1234', KEEL_API_APPROVER: 'Grace' });
    expect(setup.source).toBe('env');
    expect(fs.existsSync(path.join(dir, 'api-tokens.json'))).toBe(false);
    expect(authenticate(setup.tokens, 'Bearer a-long-enough-secret-1234')?.name).toBe('Grace');
    expect(() => loadTokens({ KEEL_CONFIG_DIR: dir, KEEL_API_TOKEN: 'short' })).toThrow(/at least 16/);
  });

  it('names several holders in the file, each recorded as its own approver', () => {
    const dir = tempDir();
    const hash = (t: string) => createHash('sha256').update(t).digest('hex');
    fs.writeFileSync(path.join(dir, 'api-tokens.json'), JSON.stringify({ tokens: [{ name: 'ada', sha256: hash('token-of-ada-0000000') }, { name: 'bob', sha256: hash('token-of-bob-0000000') }] }));
    const setup = loadTokens({ KEEL_CONFIG_DIR: dir });
    expect(authenticate(setup.tokens, 'Bearer token-of-bob-0000000')?.name).toBe('bob');
    expect(authenticate(setup.tokens, 'Bearer token-of-ada-0000000')?.name).toBe('ada');
  });
});

describe('OpenAPI document', () => {
  it('describes the approve body from the workflow schema, without the approver (it comes from the token)', () => {
    const doc = openApiDocument(routes, 'test') as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean } }> } }>> };
    const schema = doc.paths['/api/workflows/{id}/approve']!.post!.requestBody!.content['application/json']!.schema;
    expect(Object.keys(schema.properties).sort()).toEqual(['callId', 'rule', 'scope']);
    expect(schema.required).toEqual(['callId']);
    expect(schema.additionalProperties).toBe(false);
  });
});
