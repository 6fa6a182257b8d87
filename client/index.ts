// The client SDK (typed handles for sessions and goals) and the `keel` CLI arrive with
// their issue; workflows are driven today with the Temporal CLI.
export {};
