// Types of scripts/agave-validator.mjs for the TypeScript that imports it (tests, bench).
export declare const AGAVE_VERSION: string;
export declare const AGAVE_CACHE: string;
export declare const AGAVE_CACHE_BIN: string;
/** The validator binary's path ($LANDFALL_AGAVE_VALIDATOR, ../shared/bin, the cache, PATH), or null. */
export declare function findAgaveValidator(): string | null;
/** One line saying why the Agave tests do not run here (null when a validator was found). */
export declare function agaveMissingReason(): string | null;
/** The binary's path, building the pinned version into the cache first when none is found (about an hour). */
export declare function ensureAgaveValidator(opts?: { log?: (line: string) => void }): string;
