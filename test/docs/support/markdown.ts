/** The ```ts (or ```typescript) blocks of a Markdown text, in order. */
export function tsBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  const fence = /^```(ts|typescript)\s*\n([\s\S]*?)^```\s*$/gm;
  for (let m = fence.exec(markdown); m; m = fence.exec(markdown)) blocks.push(m[2]!);
  return blocks;
}
