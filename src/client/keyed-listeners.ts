/**
 * Listeners grouped by key (an account id, a signature), so emitting to one key costs one map
 * lookup however many keys have listeners. Used by the server's status hub and the client's
 * status stream.
 */
export class KeyedListeners<K, V> {
  private readonly byKey = new Map<K, Set<(value: V) => void>>();

  /** `onError` gets what a listener throws; the remaining listeners still run. */
  constructor(private readonly onError: (error: unknown) => void) {}

  /** Add `listener` under `key`; returns the function that removes it. */
  add(key: K, listener: (value: V) => void): () => void {
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.byKey.get(key) === set) this.byKey.delete(key);
    };
  }

  /** Listeners under `key`. */
  count(key: K): number {
    return this.byKey.get(key)?.size ?? 0;
  }

  /** Call every listener under `key` with `value`. */
  emit(key: K, value: V): void {
    const set = this.byKey.get(key);
    if (!set) return;
    for (const listener of set) {
      try {
        listener(value);
      } catch (e) {
        this.onError(e);
      }
    }
  }
}
