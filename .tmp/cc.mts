import { compiledCli } from '../test/fixtures/compiled-cli';
console.log(await compiledCli(process.pid));
