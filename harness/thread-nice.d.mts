// Types of harness/thread-nice.mjs for the TypeScript tests that import it.
/** The niceness in a `/proc/.../stat` file (field 19, after the parenthesised thread name). */
export declare function niceIn(statPath: string): number;
/** The calling thread's niceness. */
export declare function ownNice(): number;
/** The niceness of every thread of this process, or of those named `comm`. */
export declare function threadNices(comm?: string): number[];
