/** Reading the Prometheus text of `/metrics` in tests. */
import { RENDERED_AT } from '../src/telemetry/metrics.js';
import { waitFor } from './localnet.js';

/**
 * The sum of metric `name` over the label sets that match `labels`, in Prometheus text `text`;
 * 0 when no line matches, or with `required` an error (a gauge the test expects to be there).
 */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}, required = false): number {
  let sum = 0;
  let matched = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (!Object.entries(labels).every(([k, v]) => have[k] === v)) continue;
    sum += Number(m[3]);
    matched++;
  }
  if (required && matched === 0) throw new Error(`no ${name}${Object.keys(labels).length > 0 ? JSON.stringify(labels) : ''} in /metrics`);
  return sum;
}

/**
 * `baseUrl`'s `/metrics` text rendered after this call began: a scrape may be served a render up
 * to a second old per thread (`src/telemetry/rendered-text.ts`), so it scrapes until the text's
 * render time (its last comment line) is at or after the call's start.
 */
export async function freshMetricsText(baseUrl: string, headers: Record<string, string> = {}): Promise<string> {
  const since = Date.now();
  return waitFor('a /metrics render newer than the request', async () => {
    const text = await (await fetch(`${baseUrl}/metrics`, { headers })).text();
    return renderedAt(text) >= since ? text : undefined;
  });
}

/** When a `/metrics` text was rendered (ms since the epoch), from its last comment line. */
export function renderedAt(text: string): number {
  const i = text.lastIndexOf(RENDERED_AT);
  return i === -1 ? NaN : Number(text.slice(i + RENDERED_AT.length).trim());
}

/**
 * One sample of `baseUrl`'s `/metrics` (rendered after the call): metric `name` summed over label
 * sets matching `labels` (`required`: an error when it is absent, see `metricSum`).
 */
export async function fetchMetric(baseUrl: string, name: string, labels: Record<string, string> = {}, required = false): Promise<number> {
  return metricSum(await freshMetricsText(baseUrl), name, labels, required);
}
