import { describe, expect, it } from 'vitest';
import { decideHostMove, describeHostMove, hostMoveSchema } from '../../../machines/host-move';

describe('moving a workspace host', () => {
  const move = { moveId: 'move-1', from: 'host-a', to: 'host-b', files: 'copy' as const };

  it('moves a run whose workspace is on the old host, and answers a run already moved there without moving it again', () => {
    expect(decideHostMove('host-a', move)).toEqual({ type: 'move', from: 'host-a', to: 'host-b' });
    expect(decideHostMove('host-b', move)).toEqual({ type: 'already_there', host: 'host-b' });
  });

  it('refuses runs the move is not for: another host, or a shared workspace', () => {
    expect(decideHostMove('host-c', move)).toMatchObject({ type: 'refused', code: 'not_on_host', message: `this run's workspace is on host "host-c", not "host-a"` });
    expect(decideHostMove(null, move)).toMatchObject({ type: 'refused', code: 'shared_workspace' });
  });

  it('validates the request: host names, files, a source only for copy, a new host that is not the old one', () => {
    expect(hostMoveSchema.safeParse(move).success).toBe(true);
    expect(hostMoveSchema.safeParse({ ...move, source: '/mnt/old-a' }).success).toBe(true);
    const issues = (v: unknown) => (hostMoveSchema.safeParse(v).error?.issues ?? []).map((i) => i.message);
    expect(issues({ ...move, to: 'host-a' })).toEqual(['to: the new host must not be the old one']);
    expect(issues({ ...move, files: 'lost', source: '/mnt/old-a' })).toEqual(['source: only with files: copy (lost files have nowhere to come from)']);
    expect(issues({ ...move, source: 'relative/path' })).toEqual(['source: an absolute path on the new host']);
    expect(issues({ ...move, from: 'host a;rm' })[0]).toMatch(/^from: a host name/);
    expect(issues({ ...move, files: 'maybe' })).toHaveLength(1);
    expect(issues({ ...move, extra: 1 })[0]).toMatch(/Unrecognized key/);
  });

  it('says in words that a lost workspace was lost, and where copied files came from', () => {
    expect(describeHostMove({ workspace: '/w/x', from: 'host-a', to: 'host-b', files: 'lost' })).toBe(
      'workspace /w/x was lost in a host move from "host-a" to "host-b": its files are gone, and the run goes on in an empty workspace on "host-b"',
    );
    expect(describeHostMove({ workspace: '/w/x', from: 'host-a', to: 'host-b', files: 'copy', source: '/mnt/a', copied: 3 })).toBe(
      'workspace /w/x moved from host "host-a" to "host-b" with its files (3 copied from /mnt/a/w/x)',
    );
  });
});
