// The tool result type and builders are pure, so workflow code can use them too: they
// live in machines/tool-result.ts.
export * from '../../machines/tool-result';
