// Thread niceness read from /proc, for the tests of what a thread's priority setting does (plain
// JavaScript: the fixtures that run in a process or worker of their own import it too).
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The niceness in a `/proc/.../stat` file: field 19, counted after the parenthesised thread name
 * (which may itself hold spaces or parentheses, hence the last ") ").
 */
export function niceIn(statPath) {
  const stat = readFileSync(statPath, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]);
}

/** The calling thread's niceness. */
export function ownNice() {
  return niceIn('/proc/thread-self/stat');
}

/** The niceness of every thread of this process, or of those named `comm`. */
export function threadNices(comm) {
  return readdirSync('/proc/self/task')
    .filter((t) => comm === undefined || readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim() === comm)
    .map((t) => niceIn(`/proc/self/task/${t}/stat`));
}
