// ask_user: only a definition. The workflow turns the call into the session's
// awaiting_input state and the human's answer into the tool result; no activity runs.
import { z } from 'zod';

export const askUserInput = z
  .object({
    question: z.string().min(1).describe('The question, complete enough to answer without other context.'),
    options: z.array(z.string().min(1)).max(10).optional().describe('Suggested answers, if the choice is between a few.'),
  })
  .strict();
export type AskUserInput = z.infer<typeof askUserInput>;

export const ASK_USER_DESCRIPTION =
  'Ask the human a question and wait for the answer. Use it when you cannot proceed without a ' +
  'decision or information only they have; do not use it for things you can find out with the other tools.';
