/**
 * registry:export: the organization's registry as a registry document (YAML
 * by default, JSON for a FILE ending in .json) or an OSI document (JSON), on
 * standard output or into a file, so that a team can start its repository
 * from what the service holds (docs/registry.md#exporting-the-registry).
 */
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { AdminError } from '../admin/admin-error.js';
import { resolveOrganization } from '../admin/organization.js';
import { EXPORT_FORMATS, ExportTooLarge, exportRegistry, NoSuchExportPart } from '../registry/export.js';
import { osiDocument } from '../registry/export-osi.js';
import { type Command, requiredString, UsageError } from './support.js';

export const EXPORT_COMMANDS: Record<string, Command> = {
  'registry:export': {
    usage: 'registry:export --org ORG [--source S] [--part N] [--format registry|osi] [--out FILE]',
    summary:
      "print the organization's registry as a registry document (YAML; JSON when --out ends in .json) or an OSI " +
      'document (--format osi, JSON) that registry:apply (or registry:import --from osi) applies back with nothing ' +
      'to change; --source keeps the metrics that source created; --part N the N-th 20,000 metrics by key, a file of ' +
      'registry:apply with several files (a registry past what one document lists)',
    options: {
      org: { type: 'string' },
      source: { type: 'string' },
      part: { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string' },
    },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const format = values.format ?? 'registry';
      if (!EXPORT_FORMATS.includes(format as never)) {
        throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')} (got: ${String(format)})`);
      }
      const source = values.source === undefined ? undefined : requiredString(values, 'source');
      const part = values.part === undefined ? undefined : requiredString(values, 'part');
      if (part !== undefined && (!/^\d{1,5}$/.test(part) || Number(part) < 1)) {
        throw new UsageError(`--part must be a whole number from 1 (got: ${part})`);
      }
      if (part !== undefined && format !== 'registry') throw new UsageError('--part goes with --format registry');
      const client = await prisma();
      const organization = await resolveOrganization(client, requiredString(values, 'org'));
      let exported: Awaited<ReturnType<typeof exportRegistry>>;
      try {
        exported = await exportRegistry(client, organization.id, {
          ...(source === undefined ? {} : { source }),
          ...(part === undefined ? {} : { part: Number(part) }),
        });
      } catch (error) {
        if (error instanceof ExportTooLarge) throw new AdminError(`${error.message} (--part 1 to ${error.parts})`);
        if (error instanceof NoSuchExportPart) throw new AdminError(error.message);
        throw error;
      }
      const out = typeof values.out === 'string' ? values.out : undefined;
      const text =
        format === 'osi'
          ? JSON.stringify(osiDocument(exported.metrics), null, 2)
          : out?.endsWith('.json')
            ? JSON.stringify(exported, null, 2)
            : stringify(exported, { lineWidth: 0 }).trimEnd();
      if (out === undefined) {
        deps.out(text);
        return 0;
      }
      try {
        await writeFile(out, `${text}\n`, 'utf8');
      } catch (error) {
        throw new AdminError(`cannot write ${out}: ${(error as Error).message}`);
      }
      deps.out(`Exported ${exported.metrics.length} metrics of organization ${organization.slug} to ${out}`);
      return 0;
    },
  },
};
