import { builder } from '../builder.js';
import { LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';

export const LifecycleStatusEnum = builder.enumType(LifecycleStatus, {
  name: 'LifecycleStatus',
  description: 'Canonical lifecycle of a metric definition.',
});

export const MetricScopeEnum = builder.enumType(MetricScope, { name: 'MetricScope' });
