/**
 * `LabeledHistogram` as prom-client's registry renders it and as the ingress threads' values are
 * added up: cumulative buckets with `le`, sum and count per label set, and two registries summed.
 */
import { AggregatorRegistry, Registry, type Metric } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { LabeledHistogram } from '../../src/telemetry/histogram.js';
import { metricSum } from '../../harness/metrics.js';

function histogram(): { h: LabeledHistogram; registry: Registry } {
  const h = new LabeledHistogram('t_seconds', 'test', ['route', 'code'], [0.1, 1]);
  const registry = new Registry();
  registry.registerMetric(h as unknown as Metric);
  return { h, registry };
}

describe('LabeledHistogram', () => {
  it('renders cumulative buckets, sum and count per label set', async () => {
    const { h, registry } = histogram();
    for (const v of [0.05, 0.1, 0.5, 3]) h.labels('/a', '200').observe(v);
    h.labels('/b', '429').observe(0.2);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE t_seconds histogram');
    const a = { route: '/a', code: '200' };
    expect(metricSum(text, 't_seconds_bucket', { ...a, le: '0.1' })).toBe(2); // a bound is inclusive
    expect(metricSum(text, 't_seconds_bucket', { ...a, le: '1' })).toBe(3);
    expect(metricSum(text, 't_seconds_bucket', { ...a, le: '+Inf' })).toBe(4);
    expect(metricSum(text, 't_seconds_count', a)).toBe(4);
    expect(metricSum(text, 't_seconds_sum', a)).toBeCloseTo(3.65, 10);
    expect(metricSum(text, 't_seconds_bucket', { route: '/b', code: '429', le: '0.1' })).toBe(0);
    expect(metricSum(text, 't_seconds_count', { route: '/b', code: '429' })).toBe(1);
  });

  it("adds up across registries as prom-client's aggregation of ingress threads does", async () => {
    const one = histogram();
    const two = histogram();
    one.h.labels('/a', '200').observe(0.05);
    two.h.labels('/a', '200').observe(0.5);
    two.h.labels('/a', '200').observe(0.05);
    const merged = AggregatorRegistry.aggregate([await one.registry.getMetricsAsJSON(), await two.registry.getMetricsAsJSON()] as Parameters<typeof AggregatorRegistry.aggregate>[0]);
    const text = await merged.metrics();
    expect(metricSum(text, 't_seconds_bucket', { le: '0.1' })).toBe(2);
    expect(metricSum(text, 't_seconds_bucket', { le: '+Inf' })).toBe(3);
    expect(metricSum(text, 't_seconds_count')).toBe(3);
  });
});
