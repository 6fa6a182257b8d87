// The API's shapes, imported as types from the server's own schemas and the workflows'
// views (erased by the bundler: nothing of the server reaches the page).
export type { InboxItem } from '../../schemas';
export type { Task } from '../../../machines/task-graph';
export type { Usage } from '../../../machines/budget';
export type { GoalStateView, PlanView, StateView, TranscriptPage } from '../../../workflows/definitions';
export type { CheckpointsView, TurnsDiff } from '../../../workflows/protocol/checkpoints';
import type { listEntrySchema } from '../../schemas';
import type { z } from 'zod';
export type ListEntry = z.infer<typeof listEntrySchema>;
