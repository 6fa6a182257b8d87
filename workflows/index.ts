// Every workflow the Keel worker runs is exported from here; the worker bundles this
// file. The goal workflow arrives with its issue.
export { sessionWorkflow, type SessionCarry, type SessionOptions, type SessionResult } from './session';
