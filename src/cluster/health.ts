/**
 * What `/health` says of the cluster (issue 13, additive `cluster` object) — a type only, so the
 * HTTP modules and the ingress threads can carry it without loading anything of `src/cluster/`.
 */
export interface ClusterHealth {
  node: string;
  nats: 'up' | 'down';
  /** `degraded`: NATS unreachable, the node serves from its local state and catches up later. */
  mode: 'clustered' | 'degraded';
  /** Live node names (this one included). */
  nodes: string[];
  /** `local-share`: budgets fall back to rate ÷ known nodes (NATS unreachable or no demand seen). */
  budget: 'shared' | 'local-share';
  /** Status events not yet acknowledged by JetStream (the outbox). */
  replication_backlog: number;
  /**
   * While degraded: why NATS refused or failed this node last (authorization, TLS, permissions,
   * unreachable), when there is such a reason.
   */
  nats_error?: string;
}
