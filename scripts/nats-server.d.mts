// Types of scripts/nats-server.mjs for the TypeScript that imports it (tests, bench, CLI).
export declare const NATS_SERVER_VERSION: string;
export declare const NATS_SERVER_CACHE: string;
/** The cached binary's path if present, without building; the env override wins. */
export declare function natsServerPath(): string | null;
/** The binary's path, building the pinned version into the cache first when it is missing. */
export declare function ensureNatsServer(opts?: { log?: (line: string) => void }): string;
