/**
 * Command-line options, parsed strictly: an unknown option is an error that names it and the
 * nearest option the command knows (`--prot` → `--port`), as unknown settings are (`config.ts`).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { unknownName } from '../config.js';
import { LandfallError } from '../errors.js';

/** `parseArgs` (strict), with an unknown option reported with the nearest known one. */
export function parseOptions<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ ...config, strict: true });
  } catch (e) {
    const unknown = /^Unknown option '([^']+)'/.exec((e as Error).message);
    if ((e as NodeJS.ErrnoException).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || unknown === null) throw e;
    const known = Object.keys(config.options ?? {}).map((o) => `--${o}`);
    throw new LandfallError('CONFIG_INVALID', unknownName('option', unknown[1]!, known));
  }
}
