// Random walks for each machine, shared by the audit and the property tests.
import { goalMachine, streamMachine, toolCallMachine, turnMachine, type GoalState, type StreamState, type ToolCallState, type TurnState } from '../../../machines/index';
import {
  goalCandidates,
  newGoal,
  newSession,
  newStream,
  newToolCall,
  newTurn,
  pick,
  sessionEvents,
  streamCandidates,
  toolCallCandidates,
  turnCandidates,
  walk,
} from './generators';
import { World } from './runner';

/** The session with its turns, driven the way the workflow will drive them. */
export function sessionWalk(variant: number, choices: readonly number[]): World {
  const world = new World(newSession(variant));
  for (const choice of choices) {
    if (world.turn !== null && world.turnLive() && Math.floor(choice / 7) % 3 !== 0) {
      world.feedTurn(turnCandidates(world.turn, choice));
    } else {
      const { normal, disruptive } = sessionEvents(world.session, choice);
      world.applySession(pick(choice, normal, disruptive, 30));
    }
    world.checkQuiescent();
  }
  return world;
}

export const turnWalk = (variant: number, choices: readonly number[]) =>
  walk((s: TurnState, e) => turnMachine.transition(s, e), newTurn(variant), turnCandidates, choices);

export const toolCallWalk = (kind: 'tool' | 'ask', readOnly: boolean, choices: readonly number[]) =>
  walk((s: ToolCallState, e) => toolCallMachine.transition(s, e), newToolCall(kind, readOnly), toolCallCandidates, choices);

export const goalWalk = (variant: number, choices: readonly number[]) =>
  walk((s: GoalState, e) => goalMachine.transition(s, e), newGoal(variant), goalCandidates, choices);

export const streamWalk = (choices: readonly number[]) => walk((s: StreamState, e) => streamMachine.transition(s, e), newStream(), streamCandidates, choices);
