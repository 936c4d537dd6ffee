// Types of scripts/debian-tools.mjs for the TypeScript that imports it (the dashboard and Prometheus tests).
export type ToolName = 'chromium' | 'prometheus' | 'promtool';
export declare const TOOLS: Record<ToolName, { bin: string; env: string; pkg: string }>;
/** The tool's path (override, else PATH), or null. */
export declare function findTool(name: ToolName): string | null;
/** Why `name` is not available, in one line, or null when it is. */
export declare function missingTool(name: ToolName): string | null;
/** Install the packages of the missing tools when this process can (root with apt-get); returns what is still missing. */
export declare function ensureDebianTools(opts?: { log?: (line: string) => void }): ToolName[];
