/**
 * The `/metrics` text, rendered at most once per {@link METRICS_MAX_AGE_MS}.
 *
 * A render is not cheap: with ingress threads, every thread's registry is serialised, posted to
 * the main thread and aggregated there, then the process metrics are collected — about 1 ms of CPU
 * per scrape (996 µs measured; `/ping` 24 µs), so a client scraping in a loop kept a core busy
 * and slowed paying sends. Cached, a scrape within the window is a string written from the thread
 * that received it: no message, no render. Scrapes that find the text stale while a render is
 * under way share that render. The price: a scrape may show values up to
 * {@link METRICS_MAX_AGE_MS} old (twice that with ingress threads: each thread caches the main
 * thread's render), well under any scrape interval (Prometheus's default is 15 s).
 */

/** Longest a rendered `/metrics` text is served again. */
export const METRICS_MAX_AGE_MS = 1000;

export class RenderedText {
  private text: string | null = null;
  private renderedAt = 0;
  private rendering: Promise<string> | null = null;

  constructor(private readonly render: () => Promise<string>) {}

  /** The text: the last render if younger than the bound, else the render under way or a new one. */
  get(): Promise<string> {
    if (this.text !== null && performance.now() - this.renderedAt < METRICS_MAX_AGE_MS) return Promise.resolve(this.text);
    return (this.rendering ??= this.render().then(
      (text) => {
        this.text = text;
        this.renderedAt = performance.now();
        this.rendering = null;
        return text;
      },
      (e: unknown) => {
        this.rendering = null;
        throw e;
      },
    ));
  }
}
