// The planner's and critic's tools: the JSON schema the model sees comes from the zod
// schema that parses its answer, and a planned task reaches the machine with its
// acceptance check in the instructions.
import { describe, expect, it } from 'vitest';
import { planProblems } from '../../machines/index';
import { submitPlanSchema, submitPlanTool, submitReviewTool, taskPrompt, toTaskInputs } from '../../workflows/planning';

describe('goal planning tools', () => {
  it('offers submit_plan and submit_review as JSON schemas without $schema', () => {
    expect(submitPlanTool.name).toBe('submit_plan');
    expect(submitPlanTool.input_schema).not.toHaveProperty('$schema');
    expect(submitPlanTool.input_schema).toMatchObject({ type: 'object', required: ['tasks'] });
    const item = (submitPlanTool.input_schema as { properties: { tasks: { items: { required: string[]; properties: Record<string, unknown> } } } }).properties.tasks.items;
    expect(item.required).toEqual(['id', 'title', 'instructions']);
    expect(Object.keys(item.properties)).toEqual(['id', 'title', 'instructions', 'dependencies', 'priority', 'role', 'acceptance']);
    expect(submitReviewTool.input_schema).toMatchObject({ required: ['verdict', 'findings'], properties: { verdict: { enum: ['pass', 'follow_up', 'replan'] } } });
  });

  it('turns a submitted plan into the machine\'s task inputs, acceptance check included', () => {
    const parsed = submitPlanSchema.parse({
      tasks: [
        { id: 'a', title: 'A', instructions: 'do a', acceptance: 'a.txt exists', role: 'coder' },
        { id: 'b', title: 'B', instructions: 'do b', dependencies: ['a'], priority: 3 },
      ],
    });
    const tasks = toTaskInputs(parsed.tasks);
    expect(tasks).toEqual([
      { id: 'a', title: 'A', instructions: 'do a\n\nAcceptance check: a.txt exists', role: 'coder' },
      { id: 'b', title: 'B', instructions: 'do b', dependencies: ['a'], priority: 3 },
    ]);
    expect(planProblems(tasks)).toEqual([]);
    expect(taskPrompt('the goal', { taskId: 'a', ...tasks[0]! })).toContain('Your task [a]: A');
  });
});
