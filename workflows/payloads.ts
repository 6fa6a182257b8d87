// Validation of what arrives from outside a workflow (signals, updates, queries, start
// input, reports between workflows): one place that turns a zod error into a reason a
// person can act on, naming the field — never "(root): Invalid input" for a union whose
// branch is obvious from the value.
import { ApplicationFailure } from '@temporalio/workflow';
import { noPayloadSchema, reasonSchema } from './definitions';
import { isUndecodable } from './payload-converter';

interface Issue {
  code?: string;
  path: PropertyKey[];
  message: string;
  errors?: Issue[][];
}

/** One line per problem, `field.path: message`; a union reports its closest branch. */
export function describeIssues(issues: readonly Issue[], prefix: PropertyKey[] = []): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const at = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors && issue.errors.length > 0) {
      // The branch that got furthest (deepest path, fewest issues) is the one the sender meant.
      // A branch whose type matched scores over one that did not.
      const score = (branch: Issue[]) => Math.max(0, ...branch.map((i) => i.path.length * 2 + (i.code === 'invalid_type' ? 0 : 1)));
      const best = [...issue.errors].sort((a, b) => score(b) - score(a) || a.length - b.length)[0]!;
      if (best.length > 0 && score(best) > 0) {
        lines.push(...describeIssues(best, at));
        continue;
      }
    }
    // A problem with the whole payload reads as the schema's own message ("text must not be empty").
    lines.push(at.length > 0 ? `${at.map(String).join('.')}: ${issue.message}` : issue.message);
  }
  return lines;
}

/** Validates a payload; throws a TypeError with the reason. */
export function parsePayload<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: readonly unknown[] } } }, value: unknown, name: string): T {
  if (isUndecodable(value) && value.encoding === 'keel/unauthenticated') {
    throw new TypeError(`refused ${name}: the payload is not encrypted with a Keel key; with KEEL_ENCRYPTION_KEYS set only key holders can act`);
  }
  if (isUndecodable(value)) throw new TypeError(`invalid ${name} payload: cannot decode a payload with encoding ${value.encoding} (${value.reason})`);
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new TypeError(`invalid ${name} payload: ${describeIssues(r.error.issues as Issue[]).join('; ')}`);
}

/**
 * A control that names nothing (resume, stop, reset, restart, approvePlan). Its payload, when
 * there is one, is `{}`: with encryption enforced, an encrypted `{}` is what shows a key holder
 * sent it (a plaintext one is refused above). In a workflow whose starter held the keys
 * (`authenticatedControls`), a call with no payload at all is refused too: nothing in it can
 * be checked. Elsewhere such a call is accepted, as it always was (old histories replay).
 */
export function parseBareControl(raw: unknown, name: string, authenticated: boolean | undefined): void {
  if (authenticated === true && raw === undefined) {
    throw new TypeError(`refused ${name}: it carries no payload, so nothing shows it came from a holder of the encryption keys (Keel's clients send {} encrypted)`);
  }
  parsePayload(noPayloadSchema, raw, name);
}

/**
 * A control whose payload is an optional reason (interrupt, pause, close, a goal's cancel).
 * A reason is optional, so a call without any payload used to pass, and with it the only
 * thing encryption could check: any Temporal client could close, pause or interrupt a run
 * whose starter held the keys. In such a run (`authenticated`: keys, and a run of format 2,
 * run-format.ts) the call needs a payload —
 * Keel's clients send `{}` (encrypted) when there is no reason — like `parseBareControl`.
 */
export function parseReasonControl(raw: unknown, name: string, authenticated: boolean | undefined): { reason?: string } {
  if (authenticated === true && raw === undefined) {
    throw new TypeError(`refused ${name}: it carries no payload, so nothing shows it came from a holder of the encryption keys (Keel's clients send {} or {"reason": …} encrypted)`);
  }
  const input = parsePayload(reasonSchema, raw, name);
  return input?.reason ? { reason: input.reason } : {};
}

/**
 * Who approved, as recorded: the name a Keel client proved (API token, OS user), or what a
 * raw Temporal client claimed, labelled as such (shared/approver-proof.ts).
 */
export function approverLabel(input: { approver?: string | undefined; proven?: boolean | undefined }): string {
  if (input.proven === true && input.approver) return input.approver;
  return `claimed: ${input.approver ?? '(nobody)'} via temporal client`;
}

/** Start input: invalid input fails the workflow at once, not retried, naming the field. */
export function parseStartInput<T>(schema: Parameters<typeof parsePayload<T>>[0], value: unknown, workflow: string): T {
  try {
    return parsePayload(schema, value, `${workflow} start`);
  } catch (error) {
    throw ApplicationFailure.nonRetryable((error as Error).message, 'InvalidStartInput');
  }
}

/** Every cause in an error chain: "Activity task failed: ENOENT: no such file …". */
export function failureMessage(error: unknown): string {
  let e: unknown = error;
  const parts: string[] = [];
  while (e instanceof Error && parts.length < 10) {
    if (!parts.includes(e.message)) parts.push(e.message);
    e = (e as { cause?: unknown }).cause;
  }
  return parts.filter((p) => p !== '').join(': ') || String(error);
}

const NAME_CHARS = 200;
const shortName = (name: string) => (name.length > NAME_CHARS ? `${name.slice(0, NAME_CHARS)}…` : name);

/** The `event.rejected` entry for a signal of a name the workflow does not handle. */
export function unknownSignal(machine: string, state: string, name: string, known: readonly string[]) {
  const n = shortName(name);
  return { kind: 'event.rejected' as const, source: `signal ${n}`, machine, state, event: n, code: 'unknown_signal', message: `no signal named ${JSON.stringify(n)}; this workflow takes: ${known.join(', ')}` };
}

/** A default update handler's answer: the update fails with the reason (it cannot be validated before acceptance). */
export function rejectUnknownUpdate(name: string, known: readonly string[]): never {
  throw ApplicationFailure.nonRetryable(`no update named ${JSON.stringify(shortName(name))}; this workflow takes: ${known.join(', ')}`, 'UnknownUpdate');
}
