// Every activity the Keel worker runs is registered from here.
import { createModelActivities } from './llm';

export const activities = {
  ...createModelActivities(),
};
