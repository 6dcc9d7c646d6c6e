/**
 * The upload scenario (`--upload-metrics N`): a registry of `n` metrics, more
 * than one document may list, sent to a running service over HTTP in parts
 * (docs/registry.md, "Uploads in parts") and applied whole, as CI would send
 * it: a first upload, a no-op one and one changing 100 metrics, each timed
 * (parts sent, then the apply) with the service's peak RSS.
 */

import { organizationWithToken } from './apply.js';
import { benchRegistryDocument } from './apply-doc.js';
import { type Started, withPeakRss } from './processes.js';

export interface UploadStep {
  /** the whole step: the upload opened, its parts sent, it applied */
  seconds: number;
  /** of which sending the parts */
  partsSeconds: number;
  /** of which the apply */
  applySeconds: number;
  peakRssMb: number;
  totals: Record<string, number>;
}

export interface UploadScenario {
  metrics: number;
  partMetrics: number;
  first: UploadStep;
  noop: UploadStep;
  changed100: UploadStep;
}

async function call(service: Started, token: string, method: string, path: string, body?: string): Promise<unknown> {
  const response = await fetch(`${service.base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** One upload of the document in parts of `partMetrics`, then its apply. */
async function upload(
  service: Started,
  token: string,
  document: ReturnType<typeof benchRegistryDocument>,
  partMetrics: number,
): Promise<UploadStep> {
  const started = performance.now();
  let partsDone = started;
  const { result, peakMb } = await withPeakRss(service.pid, async () => {
    const opened = (await call(service, token, 'POST', '/api/registry/uploads')) as { data: { upload_id: string } };
    const id = opened.data.upload_id;
    for (let from = 0, part = 1; from < document.metrics.length; from += partMetrics, part++) {
      const body = JSON.stringify({ ...document, metrics: document.metrics.slice(from, from + partMetrics) });
      await call(service, token, 'PUT', `/api/registry/uploads/${id}/parts/${part}`, body);
    }
    partsDone = performance.now();
    const applied = (await call(service, token, 'POST', `/api/registry/uploads/${id}/apply`)) as {
      data: { totals: Record<string, number> };
    };
    return applied.data.totals;
  });
  const ended = performance.now();
  return {
    seconds: (ended - started) / 1000,
    partsSeconds: (partsDone - started) / 1000,
    applySeconds: (ended - partsDone) / 1000,
    peakRssMb: peakMb,
    totals: result,
  };
}

export async function runUploadScenario(
  service: Started,
  databaseUrl: string,
  options: { metrics: number; partMetrics: number; log: (line: string) => void },
): Promise<UploadScenario> {
  const { metrics: n, partMetrics, log } = options;
  const token = await organizationWithToken(databaseUrl, 'bench-upload');
  const document = (changed = 0, revision = 0) => benchRegistryDocument('bench-upload', n, { changed, revision });
  const describe = (step: UploadStep) =>
    `${step.seconds.toFixed(1)} s (parts ${step.partsSeconds.toFixed(1)} s, apply ${step.applySeconds.toFixed(1)} s), peak RSS ${step.peakRssMb} MB`;
  const first = await upload(service, token, document(), partMetrics);
  log(`upload: first of ${n} in parts of ${partMetrics}: ${describe(first)}`);
  const noop = await upload(service, token, document(), partMetrics);
  log(`upload: no-op: ${describe(noop)}`);
  const changed100 = await upload(service, token, document(100, 1), partMetrics);
  log(`upload: 100 changed: ${describe(changed100)}`);
  return { metrics: n, partMetrics, first, noop, changed100 };
}
