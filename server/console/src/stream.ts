// Following a workflow's event stream with the console's token: the reader itself is the
// React package's (packages/react/src/http/stream.ts), shared with the hooks.
import { followRun, type Follow } from '../../../packages/react/src/http/stream';
import { token } from './api';
import type { StreamItem } from './run-state';

export type { StreamItem } from './run-state';
export type { Follow } from '../../../packages/react/src/http/stream';

export function follow(id: string, onItem: (item: StreamItem) => void, onEnd: () => void): Follow {
  return followRun(id, { token }, onItem, onEnd);
}
