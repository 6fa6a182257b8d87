// The stand-in model in a process of its own, for the benches that measure their own
// process's CPU (process.cpuUsage): the stand-in's work must not count as the caller's.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ScenarioInput } from '../standin/scenario';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function standinProcess(scenario: ScenarioInput): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-standin-'));
  const scenarioFile = path.join(dir, 'scenario.json');
  await fs.writeFile(scenarioFile, JSON.stringify(scenario));
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'standin/main.ts'), '--scenario', scenarioFile, '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = async () => {
    child.kill();
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const found = /listening on (http:\/\/\S+)/.exec(out)?.[1];
        if (found) resolve(found);
      });
      child.once('exit', (code) => reject(new Error(`the stand-in exited ${code}:\n${out}`)));
    });
    return { url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
