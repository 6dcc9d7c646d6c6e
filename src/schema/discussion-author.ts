/** `DiscussionAuthor`: who wrote, resolved, raised, pinned or decided something in a discussion. */
import { builder } from '../builder.js';
import type { DiscussionAuthor } from '../discussions/read.js';

const AuthorKindEnum = builder.enumType('DiscussionAuthorKind', {
  description: 'user: a member of the organization; service_token: a bot (a service token with discussions:write).',
  values: ['user', 'service_token'] as const,
});

export const DiscussionAuthorRef = builder.objectRef<DiscussionAuthor>('DiscussionAuthor').implement({
  description: "A member (by display name) or a bot (by its service token's name).",
  fields: (t) => ({
    kind: t.expose('kind', { type: AuthorKindEnum }),
    id: t.exposeID('id', { description: "The user's or the service token's id." }),
    displayName: t.exposeString('displayName'),
  }),
});
