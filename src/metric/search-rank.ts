/**
 * The ranking of a search, as SQL over `metric_search` (the narrow copy of
 * the metrics that prisma/migrations/20261123000000_search_documents,
 * 20261125000000_search_tiers and 20261203000100_search_name_fit keep): which
 * metrics a query finds and in what order. src/metric/search-page.ts takes a
 * page of it; the bench's floor sends the same statement.
 *
 * Tiers, best first:
 *
 * 0. the query (its letters and digits) is the metric's name, key or an
 *    alias, or else one of its acronyms;
 * 1. its name words (name, key parts, aliases, acronyms) hold every word of
 *    the query, in any order, the names that fit the query best first (see
 *    below); then, for a query that is words only, the names whose words
 *    begin with the query's words of three characters or more ("handl tim":
 *    Average Handle Time), through a correction or not;
 * 2. they do once the query's unknown words are corrected;
 * 3. its text (name words, concept, tags, description) holds every word;
 * 4. it does once corrected;
 * 5. partial coverage, when tiers 0 to 4 hold fewer metrics than the page:
 *    the metrics that hold some of the query's significant words (stop and
 *    question words left out, a word no metric has corrected), when they
 *    hold none at all (two significant words or more), else those that hold
 *    all of them but one (three or more); by how much of the query they
 *    cover: each word counts 2 among the name words, else 1, half when
 *    through a correction, times how telling it is (idf among the
 *    candidates).
 *
 * Within a tier: canonical first (released and approved, then validated and
 * candidate, then draft, then deprecated), then the exact forms before the
 * acronyms (tier 0); in tier 1, the names that fit the query best (for a
 * query that is words only):
 *
 * - a name that holds the query's words as a phrase, in the query's order
 *   ("order value": Average Order Value before Value per Order), before one
 *   that holds them apart;
 * - then the higher share of the name's words that are the query's, the
 *   full-text parser's stop words ("to", "of", "by", ...) left out and the
 *   others ("per" included) counted ("time handle": Handle Time, 2 of 2,
 *   before Handle Time to Resolution, 2 of 3);
 * - then the names that start with the query before the others, then the
 *   names whose words only begin with the query's words.
 *
 * The fit comes before the name prefix: "putaway time" finds Average Putaway
 * Time (2 of 3) before Putaway Time per Pallet Location (2 of 5), though the
 * second starts with the query. It is measured on the name alone
 * (`name_vector`, not the key or aliases), and in tier 1 only. Then, in every
 * tier, a full-text rank normalized by the document's length (`ts_rank`
 * flag 1), so that a word repeated in a long description does not win, then
 * name and id. A metric whose parent (the metric that supersedes it, else
 * the one it is a variant of) is in the same tier comes right after it.
 *
 * The page's rows also say which words were corrected (`corrected`, from
 * `search_query`) when some match came through a correction, so that the
 * response can say so.
 *
 * A query in websearch syntax (a quoted phrase, `or`, a `-` before a word)
 * is taken as written: tiers 0, 1 and 3 only, and no fit nor name prefix in
 * tier 1. Everything a tier needs of a metric is in its search row (forms,
 * acronyms, canonical order, parent, the name's words: `name_vector`);
 * the query side of corrections and partial coverage is one call of
 * `search_query`, whose statements are planned once per connection, and only
 * for a query that is not taken as written.
 *
 * Written as SQL (Kysely's `sql` template) rather than with the query
 * builder: it reads `metric_search`, which the migrations keep and the Prisma
 * schema does not model (so it has no generated type), and it is made of
 * MATERIALIZED CTEs, full-text operators and arrays of tsqueries that the
 * builder would only wrap as raw fragments anyway. The filter is the list's
 * own (src/metric/list.ts).
 */
import { type RawBuilder, sql } from 'kysely';
import { type EffectiveFilter, filterKey, orgFilter } from './list.js';

/** A query in websearch syntax (a quoted phrase, `or`, a `-` before a word) is taken as written: no corrections. */
const STRUCTURED_QUERY = /"|(^|\s)-\S|\sor\s/i;

/**
 * The query as the full-text parser should read it: punctuation inside a word
 * ("net-revenue", "net/revenue") separates words, as it does in the metrics'
 * text. Left to the parser, "net-revenue" is a phrase of the compound and its
 * parts, and "net/revenue" a file path: neither matches "Net Revenue".
 */
const fullTextQuery = (text: string) =>
  text.replace(/[^\p{L}\p{N}\s"-]+/gu, ' ').replace(/([\p{L}\p{N}])-+(?=[\p{L}\p{N}])/gu, '$1 ');

/**
 * Words that say nothing of the metric meant ("how many people use ..."),
 * left out of partial coverage besides the full-text parser's own stop words
 * (which match nothing anyway).
 */
const QUESTION_WORDS = new Set(
  (
    'how many much what which who whom whose when where why is are was were be been do does did can could should ' +
    'would will we our us you your i me my they their them it its this that these those there here every each all ' +
    'any some get gets give tell show find know metric metrics measure measured number kpi'
  ).split(' '),
);

/** A row of a search's page: `total` counts every match. */
export interface RankedRow {
  id: string;
  name: string;
  total: number;
  /** when some match came through a correction: the corrected words and their corrections, `[from, to, from, to, ...]` */
  corrected: string[] | null;
  rank: number;
}

/** A search as SQL: a page of it, and the count of all its matches. */
export interface RankedSearch {
  /** the page's rows (id, name, total) in order of `rank`; `total` counts every match */
  page: RawBuilder<RankedRow>;
  /** `SELECT count(*)::int AS total` of every match, and `corrected` as on the page's rows */
  count: RawBuilder<{ total: number; corrected: string[] | null }>;
}

/** A family's sort keys (those of its head), then the member's own: a head before its children. */
const FAMILY_ORDER = `g_tier, g_cover DESC, g_canon, g_place, g_score DESC, g_name, g_id,
  child, canon, place, score DESC, name, id`;
/** A match's own sort keys. */
const OWN_ORDER = 'tier, cover DESC, canon, place, score DESC, name, id';

/** The values of a search statement; its shape is the rest (see {@link ShapeCache} in src/db/kysely.ts). */
export type SearchArgs = EffectiveFilter & {
  orgId: string;
  /** the query as the full-text parser reads it */
  fullText: string;
  /** its letters and digits, run together: a name form or acronym */
  compact: string;
  /** a LIKE pattern: the names that start with the query */
  namePrefix: string;
  /** its words, separated by spaces: what a name's fit is measured against (tier 1) */
  phrase: string;
  words: string[];
  significant: string[];
  take: number;
  skip: number;
  /** skip + take */
  end: number;
};

/** A search: the key of its statements' shape, their values, and how to build them from the values. */
export interface SearchPlan {
  shape: string;
  args: SearchArgs;
  build(p: SearchArgs): RankedSearch;
}

/**
 * The ranking of `text` (normalized: trimmed, lowercased) over the
 * organization's metrics that `filter` keeps. `take` is the page size:
 * partial coverage fills a page that the other tiers leave short. The text
 * of its statements depends on the query's form only (taken as written or
 * not, how many significant words) and on which filters are present; the
 * words themselves are parameters.
 */
export function rankedSearch(
  orgId: string,
  text: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
): SearchPlan {
  const structured = STRUCTURED_QUERY.test(text);
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  const significant = words.filter((word) => !QUESTION_WORDS.has(word));
  const asWrittenOnly = structured || words.length === 0;
  const args: SearchArgs = {
    ...filter,
    orgId,
    fullText: fullTextQuery(text),
    compact: words.join(''),
    namePrefix: `${escapeLike(text)}%`,
    phrase: words.join(' '),
    words,
    significant,
    take: page.take,
    skip: page.skip,
    end: page.skip + page.take,
  };
  const shape = `${structured ? 's' : 'w'}|${asWrittenOnly ? '-' : significant.length}|${filterKey(filter)}`;
  return { shape, args, build: (p) => rankingSql(p, filter, structured, asWrittenOnly, significant.length) };
}

function rankingSql(
  p: SearchArgs,
  filter: EffectiveFilter,
  structured: boolean,
  asWrittenOnly: boolean,
  significantCount: number,
): RankedSearch {
  const org = orgFilter(p.orgId, filter, p);
  // The query side, computed once per search (in a generic plan, an expression of the parameters would
  // be computed again on every row): the query, the query restricted to name words (every lexeme
  // weighted A), and for a query that is words only, the same with every lexeme of three characters or
  // more a prefix (`'tim':*A`): the names whose words begin with the query's words; and for the fit of
  // a name, the query's words as a phrase (`'order' <-> 'valu'`), all of them (`'order' & 'valu'`), as
  // lexemes, and how many lexemes.
  const prefixName = structured
    ? sql``
    : sql`, regexp_replace(n.name_tsq::text, '''([^'']{3,})'':A', '''\\1'':*A', 'g')::tsquery AS prefix_name,
      phraseto_tsquery('english', ${p.phrase}) AS phrase, plainto_tsquery('english', ${p.phrase}) AS every_word,
      x.lexemes, cardinality(x.lexemes)::float8 AS lexeme_count`;
  const lexemes = structured
    ? sql``
    : sql`, (SELECT tsvector_to_array(to_tsvector('english', ${p.phrase})) AS lexemes) x`;
  const tsq = sql`
    SELECT n.* ${prefixName} FROM (
      SELECT t.tsq, regexp_replace(t.tsq::text, '''((?:[^'']|'''')*)''', '''\\1'':A', 'g')::tsquery AS name_tsq
      FROM (SELECT websearch_to_tsquery('english', ${p.fullText}) AS tsq) t) n ${lexemes}`;
  // How well a name that holds every word of the query fits it (tier 1), for a query that is words
  // only. Its place is 11 less a quarter of its fit, so that within tier 1 and a canonical rank the
  // names that fit best come first. The fit:
  // - 2 when the name alone (`name_vector`) holds the query's words as a phrase in the query's order
  //   ("order value": Average Order Value, not Value per Order),
  // - plus the share of the name's words that are the query's, the parser's stop words left out
  //   ("time handle": Handle Time, 2 of 2, before Handle Time to Resolution, 2 of 3).
  // Then the names that start with the query before the others: a millionth less, below any
  // difference of two shares of names of 256 characters or fewer. When the name holds every word of
  // the query (the usual case: one or two `@@` on a short tsvector) the share is their number over
  // the name's, else it is counted word by word (`ts_delete`: a query word held by the key or an
  // alias only). The constants are float8: numeric arithmetic on every row costs more. A query in
  // websearch syntax is taken as written: 11, no fit and no prefix.
  const nameFit = structured
    ? sql`11`
    : sql`11::float8 - (CASE WHEN m.name_vector @@ q.phrase THEN 2 + q.lexeme_count / greatest(length(m.name_vector), 1)
        WHEN m.name_vector @@ q.every_word THEN q.lexeme_count / greatest(length(m.name_vector), 1)
        ELSE (length(m.name_vector) - length(ts_delete(m.name_vector, q.lexemes)))::float8
          / greatest(length(m.name_vector), 1) END) / 4
      - CASE WHEN m.name_lower LIKE ${p.namePrefix} THEN 0.000001::float8 ELSE 0 END`;
  // The names whose words begin with the query's words rank with the names that hold them (tier 1),
  // after them within a canonical rank: above the metrics that hold the words in their text only.
  const byPrefix = structured ? sql`` : sql`WHEN m.search_vector @@ q.prefix_name THEN 15`;
  // The place in the ranking: its tens are the tier, the rest a distinction within it (a fraction in
  // tier 1, see `nameFit`). A metric whose name, key, alias or acronym the query is holds every word
  // of the query among its name words. `fixed`: the match came through a correction.
  const asWritten = sql`
    SELECT m.id, m.name, m.parent_id, m.is_parent, m.canon, 0::float8 AS cover,
      (CASE WHEN m.search_vector @@ q.name_tsq THEN (
          CASE WHEN ${p.compact} = ANY(m.forms) THEN 0 WHEN ${p.compact} = ANY(m.acronyms) THEN 1 ELSE ${nameFit} END)
        ${byPrefix} ELSE 30 END)::float8 AS place,
      ts_rank(m.search_vector, q.tsq) / m.rank_norm AS score, false AS fixed
    FROM q JOIN metric_search m ON m.search_vector @@ q.tsq WHERE ${org}`;
  if (asWrittenOnly) {
    return inFamilies(sql`q AS MATERIALIZED (${tsq})`, asWritten, sql`NULL::text[]`, p);
  }

  const hits = sql`
    ${asWritten}
    UNION ALL
    SELECT m.id, m.name, m.parent_id, m.is_parent, m.canon, 0,
      CASE ${byPrefix} WHEN m.search_vector @@ q.corrected_name THEN 20 ELSE 40 END,
      ts_rank(m.search_vector, q.corrected) / m.rank_norm, true
    FROM q JOIN metric_search m ON m.search_vector @@ q.corrected
    WHERE ${org} AND NOT (m.search_vector @@ q.tsq)`;
  // Partial coverage: each significant word a metric holds counts 2 among its name words, else 1
  // (half when it is a correction of a word no metric has), times how telling the word is among
  // the candidates (idf: ln(1 + candidates / those holding it)).
  // Written out for each significant word (a word past the end of q.parts, a stop word, matches nothing)
  // rather than a subquery on every candidate: its mark, how many candidates hold it, its weight.
  const each = (term: (k: number) => string, separator: string, none = '0') =>
    sql.raw(Array.from({ length: significantCount }, (_, k) => term(k + 1)).join(separator) || none);
  const marks = each(
    (k) => `CASE WHEN m.search_vector @@ q.parts[${k}] THEN (CASE WHEN m.search_vector @@ q.part_names[${k}] THEN 2
      ELSE 1 END) * (CASE WHEN q.part_fixed[${k}] THEN 0.5 ELSE 1 END) ELSE 0 END`,
    ', ',
  );
  const weights = each(
    (k) => `ln(1 + count(*)::float8 / greatest(1, count(*) FILTER (WHERE p.marks[${k}] > 0)))`,
    ', ',
  );
  const cover = each((k) => `p.marks[${k}] * idf.weights[${k}]`, ' + ');
  // A candidate covers the query through a correction when it holds a part that is one.
  const fixed = each((k) => `(p.marks[${k}] > 0 AND coalesce(q.part_fixed[${k}], false))`, ' OR ', 'false');
  const partial = sql`
    part AS MATERIALIZED (
      SELECT m.id, m.name, m.parent_id, m.is_parent, m.canon, ts_rank(m.search_vector, q.any_part) / m.rank_norm AS score,
        ARRAY[${marks}]::float8[] AS marks
      FROM q JOIN metric_search m ON m.search_vector @@ (
        CASE WHEN NOT EXISTS (SELECT FROM hit) THEN q.any_part
          WHEN (SELECT count(*) FROM (SELECT FROM hit LIMIT ${p.take}) h) < ${p.take} THEN q.most_parts END)
      WHERE ${org} AND NOT (m.search_vector @@ q.tsq) AND NOT coalesce(m.search_vector @@ q.corrected, false)),
    idf AS (SELECT ARRAY[${weights}] AS weights FROM part p)`;
  const covered = sql`
    SELECT p.id, p.name, p.parent_id, p.is_parent, p.canon, ${cover}, 50, p.score, ${fixed}
    FROM q, part p, idf`;
  return inFamilies(
    sql`
      q AS MATERIALIZED (
        SELECT w.*, s.* FROM (${tsq}) w, search_query(${p.orgId}::uuid, ${p.words}::text[], ${p.significant}::text[]) s),
      hit AS MATERIALIZED (${hits}),
      ${partial}`,
    sql`SELECT * FROM hit UNION ALL ${covered}`,
    sql`CASE WHEN bool_or(h.fixed) THEN (SELECT q.fixes FROM q) END`,
    p,
  );
}

/**
 * A page of the matches in families: a metric whose parent matched in the
 * same tier (`attached`) comes right after it, its parent's place being the
 * family's; every other match heads a family of its own. The first
 * skip + take rows are in the first skip + take families, so only those are
 * ranked with their children; the rest of the matches are only counted.
 * `ctes` are the common table expressions `matches` reads; `corrected`, an
 * aggregate over the matches `h`, the corrected words when some match came
 * through a correction.
 */
function inFamilies(
  ctes: RawBuilder<unknown>,
  matches: RawBuilder<unknown>,
  corrected: RawBuilder<unknown>,
  p: SearchArgs,
): RankedSearch {
  const head = (alias: string) =>
    sql.raw(
      ['tier', 'cover', 'canon', 'place', 'score', 'name', 'id'].map((k) => `${alias}.${k} AS g_${k}`).join(', '),
    );
  const ranked = sql<RankedRow>`
    WITH ${ctes},
    every AS MATERIALIZED (SELECT h.*, floor(h.place / 10)::int AS tier FROM (${matches}) h),
    attached AS MATERIALIZED (
      SELECT c.* FROM every c JOIN every p ON p.id = c.parent_id AND p.tier = c.tier
      WHERE c.parent_id IS NOT NULL AND p.is_parent AND p.parent_id IS DISTINCT FROM c.id),
    head AS MATERIALIZED (
      SELECT h.* FROM every h WHERE NOT EXISTS (SELECT 1 FROM attached a WHERE a.id = h.id)
      ORDER BY ${sql.raw(OWN_ORDER)} LIMIT ${p.end}),
    family AS (
      SELECT h.*, false AS child, ${head('h')} FROM head h
      UNION ALL
      SELECT a.*, true, ${head('h')} FROM head h JOIN attached a ON a.parent_id = h.id),
    tally AS (SELECT count(*)::int AS total, ${corrected} AS corrected FROM every h)
    SELECT f.id, f.name, tally.total, tally.corrected, f.rank
    FROM (SELECT id, name, row_number() OVER (ORDER BY ${sql.raw(FAMILY_ORDER)}) AS rank FROM family) f, tally
    WHERE f.rank > ${p.skip} AND f.rank <= ${p.end}`;
  return {
    page: ranked,
    count: sql<{ total: number; corrected: string[] | null }>`
      WITH ${ctes} SELECT count(*)::int AS total, ${corrected} AS corrected FROM (${matches}) h`,
  };
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
