// The largest request body the API reads: a larger one is refused with 413 before any route
// reads it (server/app.ts), and the OpenAPI document says so for every operation with a body.
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
