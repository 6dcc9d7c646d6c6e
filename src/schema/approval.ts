import { builder } from '../builder.js';

export const ApprovalRef = builder.prismaObject('Approval', {
  fields: (t) => ({
    id: t.exposeID('id'),
    versionId: t.exposeID('versionId', { nullable: true }),
    approverUserId: t.exposeID('approverUserId', { nullable: true }),
    approverRole: t.exposeString('approverRole'),
    decision: t.exposeString('decision', { description: 'approved or rejected' }),
    decidedAt: t.expose('decidedAt', { type: 'DateTime' }),
    comment: t.exposeString('comment'),
  }),
});
