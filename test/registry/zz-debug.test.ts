import { it } from 'vitest';
import { pino } from 'pino';
import { startTestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, putRegistry } from './support.js';

it('debug', async () => {
  const t = await startTestApp({ logger: pino({ level: 'error' }) });
  const org = await newTeamOrg(t.database.prisma);
  const pad = (n: number) => String(n).padStart(4, '0');
  const metrics = Array.from({ length: 10_000 }, (_, i) =>
      docMetric(`metric_${pad(i)}`, {
        name: `Metric ${pad(i)}`,
        description: `Description of metric ${i}, long enough to be realistic for a registry entry.`,
        lifecycle_status: i % 3 === 0 ? 'RELEASED' : 'DRAFT',
        domain: `Domain ${i % 10}`,
        aliases: [`m${i}`],
        grains: ['day', 'month'],
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
        ...(i > 0 ? { relationships: [{ kind: 'related_to', target: `metric_${pad(i - 1)}` }] } : {}),
      }),
    );
  const started = Date.now();
  const res = await putRegistry(t, doc(org.slug, metrics), { token: org.token });
  console.log(res.statusCode, res.body.slice(0, 300), Date.now() - started);
  await t.close();
}, 300000);
