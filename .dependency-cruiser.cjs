// Layering rule 10 (README, "Layering"): no import cycle in workflows/. ESLint's cycle rules
// (import-x/no-cycle) skip type-only imports, and the circle this guards against was made of
// them (interfaces written beside their schemas, each file importing the other's types), so
// dependency-cruiser checks the graph as TypeScript writes it (`tsPreCompilationDeps`), type
// imports included. `npm run lint` runs it after ESLint; lint-boundaries.test.ts plants a cycle.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-workflow-cycle',
      severity: 'error',
      comment: 'Layering rule 10: no import cycle in workflows/, type imports included.',
      from: { path: '(^|/)workflows/' },
      to: { circular: true, path: '(^|/)workflows/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
  },
};
