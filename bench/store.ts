// `npx tsx bench/store.ts [bench args…]`: `npm run bench` with Keel's conversation store in
// a local directory (the default), then in PostgreSQL (a server of its own, started here
// with initdb/pg_ctl like the tests do), each against the floor in the same run, so the
// two are compared as ratios to the floor rather than as times. Results go to
// bench/results/store-local.* and bench/results/store-postgres.*.
// Default arguments: --scenario single,concurrent --variants floor,keel --quick --rounds 2.
import { spawnSync } from 'node:child_process';
import { startPostgres } from '../test/helpers/postgres';

const args = process.argv.slice(2);
const benchArgs = args.length > 0 ? args : ['--scenario', 'single,concurrent', '--variants', 'floor,keel', '--quick', '--rounds', '2'];
const pg = await startPostgres();
try {
  const url = await pg.createDatabase('keel_bench');
  for (const [name, extra] of [
    ['store-local', {}],
    ['store-postgres', { KEEL_STORE_URL: url }],
  ] as const) {
    console.log(`\n== ${name}`);
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'bench/suite.ts', ...benchArgs, '--name', name], {
      stdio: 'inherit',
      env: { ...process.env, ...extra },
    });
    if (result.status !== 0) throw new Error(`${name}: the bench exited with ${result.status}`);
  }
} finally {
  await pg.stop();
}
