import { builder } from '../builder.js';
import './enums.js';
import './agent-context.js';
import './approval.js';
import './metric-relationship.js';
import './metric-version.js';
import './metric.js';
import './metric-query.js';
import './metric-lookup.js';
import './trust.js';
import './revision.js';
import './lineage.js';
import './change-event.js';
import { refuseInvalidTextArguments } from './text-arguments.js';

export const schema = refuseInvalidTextArguments(builder.toSchema({ sortSchema: true }));
