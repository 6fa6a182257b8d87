// `npm run model:standin -- --scenario FILE [--port N] [--host H]`: the stand-in on its
// own, for the keyless demo and for poking at it with the SDK or curl.
import { parseArgs } from 'node:util';
import { loadScenario } from './scenario';
import { startStandin } from './server';

const usage = 'usage: npm run model:standin -- --scenario FILE.(json|yaml) [--port N] [--host 127.0.0.1]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help || !values.scenario) {
    console.error(usage);
    process.exit(values.help ? 0 : 2);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be an integer between 0 and 65535, got ${values.port}\n${usage}`);
    process.exit(2);
  }
  const scenario = await loadScenario(values.scenario);
  const standin = await startStandin({
    scenario,
    port,
    host: values.host,
    log: (line) => console.log(`[stand-in] ${line}`),
  });
  console.log(`Messages API stand-in "${scenario.name}" (${scenario.rules.length} rules) listening on ${standin.url}`);
  console.log(`  export ANTHROPIC_BASE_URL=${standin.url}`);
  console.log(`  export ANTHROPIC_API_KEY=${scenario.apiKeys?.[0] ?? 'any-non-empty-key'}`);
  const stop = () => {
    void standin.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
