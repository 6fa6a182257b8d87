// Builds the app into public/app.js with esbuild; `--serve` also serves public/ on
// http://localhost:5173 and rebuilds on change.
import * as esbuild from 'esbuild';

const options = {
  entryPoints: ['src/main.tsx'],
  outfile: 'public/app.js',
  bundle: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  minify: true,
  sourcemap: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'info',
};

if (process.argv.includes('--serve')) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
  const { port } = await ctx.serve({ servedir: 'public', port: 5173 });
  console.log(`http://localhost:${port}/?server=http://127.0.0.1:8280&token=YOUR_TOKEN`);
} else {
  await esbuild.build(options);
}
