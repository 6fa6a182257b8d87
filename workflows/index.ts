// Every workflow the Keel worker runs is exported from here; the worker bundles this
// file. The session and goal workflows arrive with their issues.
export {};
