// Every activity the Keel worker runs is registered from here. Model calls and tools
// arrive with their issues.
export const activities = {};
