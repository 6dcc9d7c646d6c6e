/**
 * What /readyz and the Prometheus metrics show of the read replicas
 * (src/db/replicas.ts): each one's lag and whether it takes reads.
 */
import { Gauge } from 'prom-client';
import type { ReplicaSet } from '../db/replicas.js';
import type { Metrics } from './metrics.js';

export interface ReplicaReadiness {
  replica: string;
  reads: boolean;
  /** null: unknown (not answering) */
  lag_ms: number | null;
  /** why it takes no reads */
  reason?: string;
}

export function replicaStatus(replicas: ReplicaSet): ReplicaReadiness[] {
  return replicas.replicas.map((replica) => ({
    replica: replica.name,
    reads: replica.reads,
    lag_ms: replica.lagMs === null ? null : Math.round(replica.lagMs),
    ...(replica.reason === null ? {} : { reason: replica.reason }),
  }));
}

/** Gauges read off the replica set at each scrape (once per registry: instances may share one). */
export function observeReplicas(metrics: Metrics, replicas: ReplicaSet): void {
  const registers = [metrics.registry];
  if (metrics.registry.getSingleMetric('db_replica_lag_seconds')) return;
  new Gauge({
    name: 'db_replica_lag_seconds',
    help: 'How far each read replica is behind the primary (-1: not answering)',
    labelNames: ['replica'] as const,
    registers,
    collect() {
      for (const replica of replicas.replicas) {
        this.set({ replica: replica.name }, replica.lagMs === null ? -1 : replica.lagMs / 1000);
      }
    },
  });
  new Gauge({
    name: 'db_replica_reads',
    help: `Whether each read replica takes reads (1) or not (0: more than ${replicas.maxLagMs} ms behind, not answering, or failing)`,
    labelNames: ['replica'] as const,
    registers,
    collect() {
      for (const replica of replicas.replicas) this.set({ replica: replica.name }, replica.reads ? 1 : 0);
    },
  });
  new Gauge({
    name: 'db_replica_failed_reads',
    help: 'Reads that failed on each read replica and ran on the primary instead, since start',
    labelNames: ['replica'] as const,
    registers,
    collect() {
      for (const replica of replicas.replicas) this.set({ replica: replica.name }, replica.failedReads);
    },
  });
}
