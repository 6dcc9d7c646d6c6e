/**
 * `validation:import`: the evidence of a dbt run's tests
 * (target/run_results.json with target/manifest.json) recorded for the
 * metrics that read the tested models (docs/registry.md, "Validation
 * evidence from dbt"). Exit codes: 0 recorded (or nothing to record), 1
 * refused by the registry, 2 bad usage or files that are not dbt's.
 */
import { readFile } from 'node:fs/promises';
import { resolveOrganization } from '../admin/organization.js';
import { dbtEvidence } from '../importers/dbt-evidence.js';
import { type DbtValidationSummary, recordDbtEvidence } from '../registry/dbt-validations.js';
import { RegistryError } from '../registry/registry-error.js';
import { type Command, CommandRejected, printTable, requiredString, trustPolicy, UsageError } from './support.js';

const REJECTED = 'Files rejected, nothing was written:';

/** A file of dbt's, parsed; a missing or unparsable file is exit 2, naming it. */
async function readArtifact(file: string, option: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CommandRejected(REJECTED, [`--${option} ${file}: cannot read it (${(error as Error).message})`], 2);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CommandRejected(REJECTED, [`--${option} ${file}: not valid JSON (${(error as Error).message})`], 2);
  }
}

function printSummary(out: (line: string) => void, summary: DbtValidationSummary): void {
  out(`dbt run at ${summary.ran_at}: ${summary.recorded} recorded, ${summary.duplicates} already recorded`);
  const rows = summary.metrics.map((metric) => [
    metric.key,
    metric.status ?? '-',
    String(metric.tests.passed),
    String(metric.tests.warned),
    String(metric.tests.failed),
    String(metric.tests.errored),
    metric.outcome,
  ]);
  printTable(out, ['METRIC', 'STATUS', 'PASSED', 'WARNED', 'FAILED', 'ERRORED', 'OUTCOME'], rows);
  if (summary.unmatched.length > 0) out(`Not in the registry (skipped): ${summary.unmatched.join(', ')}`);
  const { counted, onNoMetric, skipped, notTests } = summary.results;
  out(
    `Results: ${counted} tests counted, ${onNoMetric} on models no metric reads, ${skipped} skipped (not counted), ${notTests} not tests`,
  );
}

export const EVIDENCE_COMMANDS: Record<string, Command> = {
  'validation:import': {
    usage: 'validation:import --from dbt --run-results FILE --manifest FILE --org ORG',
    summary:
      "record a dbt run's test results as validation evidence of the metrics reading the tested models; verdicts follow at once",
    options: {
      from: { type: 'string' },
      'run-results': { type: 'string' },
      manifest: { type: 'string' },
      org: { type: 'string' },
    },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const from = requiredString(values, 'from');
      if (from !== 'dbt') throw new UsageError(`--from must be dbt (got: ${from})`);
      const org = requiredString(values, 'org');
      const runResults = await readArtifact(requiredString(values, 'run-results'), 'run-results');
      const manifest = await readArtifact(requiredString(values, 'manifest'), 'manifest');
      let evidence: ReturnType<typeof dbtEvidence>;
      try {
        evidence = dbtEvidence(runResults, manifest);
      } catch (error) {
        if (error instanceof RegistryError) throw new CommandRejected(REJECTED, error.lines(), 2);
        throw error;
      }
      const client = await prisma();
      const organization = await resolveOrganization(client, org);
      try {
        printSummary(
          deps.out,
          await recordDbtEvidence(client, organization.id, evidence, { trust: trustPolicy(deps) }),
        );
      } catch (error) {
        if (error instanceof RegistryError) throw new CommandRejected(REJECTED, error.lines(), 2);
        throw error;
      }
    },
  },
};
