/**
 * An export (src/registry/export.ts) as an Apache Ossie 0.2.0.dev0 document:
 * one semantic model per project, its datasets the tables the metrics'
 * source_refs name, each metric named by its key with its SQL as the
 * ANSI_SQL expression. What OSI has no field for travels in the
 * METRIC_GOVERNANCE extension the OSI importer reads (src/importers/osi.ts):
 * every field of the registry document but the key, so that importing the
 * export back plans nothing.
 */
import { GOVERNANCE_VENDOR } from '../importers/osi.js';
import type { ExportedMetric } from './export.js';

export const OSI_EXPORT_VERSION = '0.2.0.dev0';

interface OsiDataset {
  name: string;
  source: string;
  description?: string;
}

/** A dataset name for a table: the source_ref's own `dataset`, else the table's last part. */
function datasetName(ref: Record<string, unknown>): string {
  if (typeof ref.dataset === 'string' && ref.dataset !== '') return ref.dataset;
  if (typeof ref.semantic_model === 'string' && ref.semantic_model !== '') return ref.semantic_model;
  const table = String(ref.table);
  return table.split('.').pop()?.replace(/"/g, '') || table;
}

/** The tables a project's metrics read, one dataset each, names made unique. */
function datasetsOf(project: string, metrics: readonly ExportedMetric[]): OsiDataset[] {
  const byTable = new Map<string, OsiDataset>();
  const names = new Set<string>();
  for (const metric of metrics) {
    const refs = Array.isArray(metric.source_refs) ? (metric.source_refs as Record<string, unknown>[]) : [];
    for (const ref of refs) {
      const table = String(ref.table);
      if (byTable.has(table)) continue;
      let name = datasetName(ref);
      for (let n = 2; names.has(name); n++) name = `${datasetName(ref)}_${n}`;
      names.add(name);
      byTable.set(table, { name, source: table });
    }
  }
  // OSI requires a dataset in every semantic model; the registry may know no table for a project's metrics.
  if (byTable.size === 0)
    return [{ name: project, source: project, description: 'The registry names no table for these metrics.' }];
  return [...byTable.values()];
}

function osiMetric(metric: ExportedMetric): Record<string, unknown> {
  const { key, ...governance } = metric;
  const caveats = (metric.business_definition as { caveats?: string } | undefined)?.caveats ?? '';
  const aliases = (metric.aliases as string[] | undefined) ?? [];
  const examples = (metric.consumer_contexts as { ai_examples?: unknown } | null | undefined)?.ai_examples;
  const aiExamples = Array.isArray(examples) ? examples.filter((example) => typeof example === 'string') : [];
  return {
    name: key,
    expression: { dialects: [{ dialect: 'ANSI_SQL', expression: String(metric.sql_expression) }] },
    ...(metric.description === '' ? {} : { description: metric.description }),
    // What OSI readers other than this service see; the governance below is what this service reads back.
    ...(caveats !== '' || aliases.length > 0 || aiExamples.length > 0
      ? {
          ai_context: {
            ...(caveats === '' ? {} : { instructions: caveats }),
            synonyms: aliases,
            ...(aiExamples.length > 0 ? { examples: aiExamples } : {}),
          },
        }
      : {}),
    custom_extensions: [{ vendor_name: GOVERNANCE_VENDOR, data: JSON.stringify({ governance }) }],
  };
}

/** The exported metrics as an OSI document, one semantic model per project (in the order first met). */
export function osiDocument(metrics: readonly ExportedMetric[]): Record<string, unknown> {
  const byProject = new Map<string, ExportedMetric[]>();
  for (const metric of metrics) {
    const list = byProject.get(metric.project);
    if (list) list.push(metric);
    else byProject.set(metric.project, [metric]);
  }
  return {
    version: OSI_EXPORT_VERSION,
    semantic_model: [...byProject].map(([project, list]) => ({
      name: project,
      datasets: datasetsOf(project, list),
      metrics: list.map(osiMetric),
    })),
  };
}
