// A message over the size limit is refused before it is sent, with the limit in the error
// (sent, it failed in Temporal as "Failed to signal Workflow" after workflow-task time-outs).
import { describe, expect, it } from 'vitest';
import { MESSAGE_MAX_BYTES, messageTooLarge } from '../../workflows/protocol/controls';

describe('messageTooLarge', () => {
  it('passes a message up to the limit and names the limit past it, in bytes (UTF-8)', () => {
    expect(messageTooLarge('x'.repeat(MESSAGE_MAX_BYTES))).toBeNull();
    expect(messageTooLarge('x'.repeat(MESSAGE_MAX_BYTES + 1))).toBe(
      'text: 524,289 bytes, more than the 524,288 bytes (512 KiB) a message may have; put longer material in a file in the workspace and name it',
    );
    // Characters are not bytes: 200,000 three-byte characters are 600,000 bytes.
    expect(messageTooLarge('€'.repeat(200_000))).toMatch(/^text: 600,000 bytes, more than the 524,288 bytes/);
  });
});
