// The stand-in seen by a plain `@anthropic-ai/sdk` client, outside Temporal. Point the
// SDK at it the way any program would, through the environment:
//   npm run model:standin -- --scenario test/fixtures/scenarios/demo.yaml --port 4010 &
//   ANTHROPIC_BASE_URL=http://127.0.0.1:4010 ANTHROPIC_API_KEY=demo npx tsx scripts/standin-sdk-check.ts
import Anthropic from '@anthropic-ai/sdk';

const model = 'claude-sonnet-4-6';

async function main(): Promise<void> {
  if (!process.env.ANTHROPIC_BASE_URL) {
    throw new Error('Set ANTHROPIC_BASE_URL to the stand-in (npm run model:standin prints it).');
  }
  const client = new Anthropic(); // reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL

  process.stdout.write('streamed: ');
  const stream = client.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'hello there' }] });
  stream.on('text', (delta) => process.stdout.write(delta));
  const streamed = await stream.finalMessage();
  console.log(`\n  stop_reason=${streamed.stop_reason} usage=${JSON.stringify(streamed.usage)} request_id=${stream.request_id}`);

  const tools: Anthropic.Tool[] = [
    { name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
  ];
  const first = await client.messages.create({
    model,
    max_tokens: 256,
    tools,
    messages: [{ role: 'user', content: 'what is the weather in Paris?' }],
  });
  const toolUse = first.content.find((block) => block.type === 'tool_use');
  console.log(`non-streamed: stop_reason=${first.stop_reason} tool_use=${JSON.stringify(toolUse)}`);
  if (!toolUse) throw new Error('expected a tool_use block');

  const second = await client.messages.create({
    model,
    max_tokens: 256,
    tools,
    messages: [
      { role: 'user', content: 'what is the weather in Paris?' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18C, sunny' }] },
    ],
  });
  console.log(`after the tool: ${second.content.map((block) => (block.type === 'text' ? block.text : block.type)).join(' ')}`);

  const unmatched = await client.messages
    .create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'something no rule expects' }] })
    .catch((error: unknown) => error);
  if (unmatched instanceof Anthropic.APIError) {
    console.log(`unmatched request: ${unmatched.status} ${unmatched.type} request_id=${unmatched.requestID}\n  ${unmatched.apiMessage}`);
  } else {
    throw new Error('an unmatched request should fail');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
