/**
 * The discussion routes' bodies and answers as zod schemas
 * (src/http/discussion-routes.ts, src/rest/operations/discussions.graphql),
 * turned into components with the others (src/openapi/schemas.ts,
 * src/openapi/requests.ts). The limits are the ones the writes enforce
 * (src/discussions/limits.ts); the OpenAPI tests check real answers against
 * these schemas.
 */
import { z } from 'zod';
import {
  CHALLENGE_DECISIONS,
  DISCUSSION_INTENTS,
  MAX_BODY_CHARACTERS,
  MAX_MESSAGE_PAGE_SIZE,
  MAX_REASON_CHARACTERS,
  MAX_TITLE_CHARACTERS,
} from '../discussions/limits.js';

const uuid = () => z.guid();
const timestamp = () => z.iso.datetime().describe('ISO 8601 UTC timestamp');
const openResolved = z.enum(['open', 'resolved']);

export const DiscussionAuthor = z
  .object({
    kind: z.enum(['user', 'service_token']),
    id: uuid().describe("the user's or the service token's id"),
    display_name: z.string().describe("a member's display name, or a bot's service token name"),
  })
  .describe('Who wrote, resolved, raised, pinned or decided something: a member, or a bot.');

const author = () => DiscussionAuthor.nullable();

export const DiscussionMessage = z.object({
  id: uuid(),
  thread_id: uuid(),
  metric_id: uuid(),
  intent: z.string().describe("the thread's intent"),
  author: author(),
  body: z.string().nullable().describe('Markdown, as written; null once the message is deleted'),
  created_at: timestamp(),
  edited_at: timestamp().nullable().describe('the last edit of its body; null: never'),
  deleted_at: timestamp().nullable(),
  pinned_at: timestamp()
    .nullable()
    .describe("pinned as a note for agents (the contract's agent_context_notes) since then; null: not pinned"),
  pinned_by: author(),
});

export const DiscussionPagination = z.object({
  page: z.int().min(1),
  page_size: z.int().min(1).max(MAX_MESSAGE_PAGE_SIZE),
  total: z.int().min(0),
  total_pages: z.int().min(0),
});

export const DiscussionThread = z.object({
  id: uuid(),
  metric_id: uuid(),
  intent: z
    .string()
    .describe(`${DISCUSSION_INTENTS.join(', ')} (a thread loaded from a fixture may carry another word)`),
  title: z.string(),
  resolution_status: openResolved,
  author: author().describe('who opened it; null for a thread loaded without an author'),
  created_at: timestamp(),
  resolved_at: timestamp().nullable(),
  resolved_by: author(),
  message_count: z.int().min(0).describe('its messages, deleted ones included'),
});

export const DiscussionThreadWithMessages = DiscussionThread.extend({
  messages: z
    .object({ items: z.array(DiscussionMessage), pagination: DiscussionPagination })
    .describe('a page of its messages, oldest first, deleted ones in their place'),
});

export const Challenge = z.object({
  id: uuid(),
  metric_id: uuid(),
  status: openResolved.describe('resolved once decided'),
  reason: z.string().describe('Markdown, as written'),
  raised_by: author(),
  created_at: timestamp(),
  decision: z.enum(CHALLENGE_DECISIONS).nullable(),
  decision_reason: z.string().nullable(),
  decided_by: author(),
  decided_at: timestamp().nullable(),
});

export const DiscussionThreadResponse = z.object({ data: DiscussionThreadWithMessages });
export const DiscussionThreadStatusResponse = z.object({ data: DiscussionThread });
export const DiscussionThreadListResponse = z.object({
  data: z.array(DiscussionThreadWithMessages).describe('newest first'),
  pagination: DiscussionPagination,
});
export const DiscussionMessageResponse = z.object({ data: DiscussionMessage });
export const ChallengeResponse = z.object({ data: Challenge });
export const ChallengeListResponse = z.object({
  data: z.array(Challenge).describe('newest first'),
  pagination: DiscussionPagination,
});

const markdown = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .describe(
      `Markdown, stored and served as written; at most ${max} characters (Unicode code points), not blank, no ` +
        'control characters but tab and line breaks',
    );

export const OpenThreadRequest = z.strictObject({
  intent: z.enum(DISCUSSION_INTENTS).describe('an open objection cautions the metric’s trust verdict'),
  title: z
    .string()
    .min(1)
    .max(MAX_TITLE_CHARACTERS)
    .describe(`one line, at most ${MAX_TITLE_CHARACTERS} characters, not blank; stored trimmed`),
  body: markdown(MAX_BODY_CHARACTERS).describe('the first message'),
});
export const DiscussionMessageRequest = z.strictObject({ body: markdown(MAX_BODY_CHARACTERS) });
export const ChallengeRequest = z.strictObject({ reason: markdown(MAX_REASON_CHARACTERS) });
export const ChallengeDecisionRequest = z.strictObject({
  decision: z.enum(CHALLENGE_DECISIONS),
  reason: markdown(MAX_REASON_CHARACTERS),
});
export const EmptyRequest = z.strictObject({}).describe('`{}`: the action takes no input');

export const discussionResponseSchemas = {
  DiscussionAuthor,
  DiscussionMessage,
  DiscussionThread,
  Challenge,
  DiscussionThreadResponse,
  DiscussionThreadStatusResponse,
  DiscussionThreadListResponse,
  DiscussionMessageResponse,
  ChallengeResponse,
  ChallengeListResponse,
} as const;

export const discussionRequestSchemas = {
  OpenThreadRequest,
  DiscussionMessageRequest,
  ChallengeRequest,
  ChallengeDecisionRequest,
  EmptyRequest,
} as const;
