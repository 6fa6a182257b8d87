// The reducer of a run's stream lives in the React package (packages/react/src/http/run-state.ts),
// which the console and the hooks share.
export * from '../../../packages/react/src/http/run-state';
