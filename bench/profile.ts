/** Self time of a V8 .cpuprofile (node --cpu-prof), by frame and by package. */
import { readFileSync } from 'node:fs';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  frames: { frame: string; selfMs: number; percent: number }[];
  packages: { package: string; selfMs: number; percent: number }[];
}

/** `node_modules/@prisma/client/...` -> `@prisma/client`; `src/...` stays a path; node internals -> `node:`. */
function packageOf(url: string): string {
  if (!url) return '(native/V8)';
  if (url.startsWith('node:')) return 'node internals';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  const src = url.indexOf('/src/');
  return src >= 0
    ? url
        .slice(src + 1)
        .split('/')
        .slice(0, 2)
        .join('/')
    : url;
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const src = url.indexOf('/src/');
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, '');
}

export function summarizeProfile(path: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const frames = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  for (const [id, micros] of self) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    total += micros;
    const name = frame.functionName || '(anonymous)';
    const key = frame.url ? `${name} ${shortUrl(frame.url)}:${frame.lineNumber + 1}` : name;
    frames.set(key, (frames.get(key) ?? 0) + micros);
    const pkg =
      name === '(idle)' ? '(idle)' : name === '(garbage collector)' ? '(garbage collector)' : packageOf(frame.url);
    packages.set(pkg, (packages.get(pkg) ?? 0) + micros);
  }
  const rank = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, top);
  return {
    totalMs: total / 1000,
    frames: rank(frames).map(([frame, us]) => ({ frame, selfMs: us / 1000, percent: (100 * us) / total })),
    packages: rank(packages).map(([pkg, us]) => ({ package: pkg, selfMs: us / 1000, percent: (100 * us) / total })),
  };
}
