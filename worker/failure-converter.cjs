// Loaded by path (dataConverter.failureConverterPath) only when encryption keys are
// configured: failure messages and stack traces (an MCP server's error text may quote a
// file) travel in an encoded payload, which the codec encrypts, instead of in the clear.
// Plain CommonJS because the worker require()s it outside any bundler.
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
// How worker/workflow-bundle.ts tells a bundle built with this converter: keel-failures-encoded
exports.marker = 'keel-failures-encoded';
