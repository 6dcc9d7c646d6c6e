/** Canonical lifecycle values and the legacy `status` vocabulary (contract section 3). */
import { LifecycleStatus } from '../generated/prisma/enums.js';

/** The schema's enum, in its order. */
export const LIFECYCLE_STATUSES: readonly LifecycleStatus[] = Object.values(LifecycleStatus);

export const LEGACY_STATUS_MATCHES = {
  draft: ['DRAFT'],
  review: ['VALIDATED', 'CANDIDATE'],
  approved: ['APPROVED', 'RELEASED'],
  deprecated: ['DEPRECATED'],
} as const satisfies Record<string, readonly LifecycleStatus[]>;

export type LegacyStatus = keyof typeof LEGACY_STATUS_MATCHES;

export const LEGACY_STATUSES = ['draft', 'review', 'approved', 'deprecated'] as const satisfies readonly LegacyStatus[];

export function legacyStatus(lifecycle: LifecycleStatus): LegacyStatus {
  switch (lifecycle) {
    case 'DRAFT':
      return 'draft';
    case 'VALIDATED':
    case 'CANDIDATE':
      return 'review';
    case 'APPROVED':
    case 'RELEASED':
      return 'approved';
    case 'DEPRECATED':
      return 'deprecated';
  }
}

export function isLegacyStatus(value: string): value is LegacyStatus {
  return Object.hasOwn(LEGACY_STATUS_MATCHES, value);
}
