/**
 * What the A/B benches that load two source trees side by side in one process share
 * (`first-send-ab.ts`, `rebroadcast-round.ts`): importing a module of a given tree by its path,
 * and the parts each of them takes from both trees.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** `import()` of a module of the tree at `dir` (a path inside it, e.g. `src/delivery/trace.ts`). */
export function treeImport(dir: string): <T>(path: string) => Promise<T> {
  return <T>(path: string) => import(pathToFileURL(join(dir, path)).href) as Promise<T>;
}

/** The parts of a tree every A/B bench uses: a record to send, the default options, the addon's client. */
export interface TreeCommon {
  statusRecord: typeof import('../../harness/records.js').statusRecord;
  DEFAULT_SEND_OPTIONS: typeof import('../../src/delivery/delivery.js').DEFAULT_SEND_OPTIONS;
  QuicClient: typeof import('../../native/index.js').QuicClient;
}

export async function treeCommon(dir: string): Promise<TreeCommon> {
  const from = treeImport(dir);
  const { statusRecord } = await from<typeof import('../../harness/records.js')>('harness/records.ts');
  const { DEFAULT_SEND_OPTIONS } = await from<typeof import('../../src/delivery/delivery.js')>('src/delivery/delivery.ts');
  const { QuicClient } = await from<typeof import('../../native/index.js')>('native/index.js');
  return { statusRecord, DEFAULT_SEND_OPTIONS, QuicClient };
}

/** One tree as a bench holds it: its label, the common parts, and a client of its own addon. */
export interface TreeBase extends Pick<TreeCommon, 'statusRecord' | 'DEFAULT_SEND_OPTIONS'> {
  name: string;
  client: import('../../native/index.js').QuicClient;
}
