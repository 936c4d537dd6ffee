/** Reading the Prometheus text of `/metrics` in tests. */

/** The sum of metric `name` over the label sets that match `labels`, in Prometheus text `text`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** One sample of `baseUrl`'s `/metrics`: metric `name` summed over label sets matching `labels`. */
export async function fetchMetric(baseUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricSum(await (await fetch(`${baseUrl}/metrics`)).text(), name, labels);
}
