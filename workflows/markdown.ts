// The Temporal Web UI renders a workflow's summary and details as Markdown, so Keel's own
// text must be escaped there: `mcp__fs__read` would show as "mcp**fs**read" and
// `node --test` as "node –test". Identifiers go in code spans; free text is escaped.

/** Text as a Markdown code span (a fence longer than any run of backticks inside it). */
export function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') || text === '' ? ' ' : '';
  return `${fence}${pad}${text.replace(/\n/g, ' ')}${pad}${fence}`;
}

/** Free text with every Markdown-significant character backslash-escaped (CommonMark). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~&]/g, (c) => `\\${c}`);
}
