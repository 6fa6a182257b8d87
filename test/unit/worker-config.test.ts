import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../worker/config';

// An empty config file path keeps a developer's own ~/.config/temporalio out of the test.
const isolated = { TEMPORAL_CONFIG_FILE: '/nonexistent/keel-test.toml' };

describe('worker config', () => {
  it('defaults to the local dev server, namespace default, task queue keel', () => {
    const config = loadWorkerConfig({ ...isolated });
    expect(config.connection.address).toBe('localhost:7233');
    expect(config.namespace).toBe('default');
    expect(config.taskQueue).toBe('keel');
  });

  it('reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and KEEL_TASK_QUEUE', () => {
    const config = loadWorkerConfig({
      ...isolated,
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'agents',
      KEEL_TASK_QUEUE: 'keel-gpu',
    });
    expect(config.connection.address).toBe('temporal.internal:7233');
    expect(config.namespace).toBe('agents');
    expect(config.taskQueue).toBe('keel-gpu');
  });
});
