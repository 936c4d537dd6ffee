// Shared by the scripts that find a tool on disk (debian-tools.mjs, agave-validator.mjs).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether `path` is a file this process may execute. */
export function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first executable `bin` on $PATH, or null. */
export function onPath(bin) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir && executable(join(dir, bin))) return join(dir, bin);
  return null;
}
