-- How well a name fits a query (src/metric/search-rank.ts, tier 1): among the names that hold every
-- word of the query, one that holds them as a phrase in the query's order ("order value": Average
-- Order Value) ranks above one that holds them apart (Value per Order), and one whose words are
-- mostly the query's ("time handle": Handle Time) above one that holds them among more words
-- (Handle Time to Resolution).
--
-- `name_vector` is the name alone as the full-text parser reads it, split as the search splits a
-- query (every run of anything but letters and digits a space): its lexemes and their positions,
-- the parser's stop words left out but counted in positions, so that a phrase query ("value per
-- order": 'valu' <2> 'order') matches the name and nothing but the name. `search_vector` cannot
-- say so: its name words run the name, key and aliases together, so a phrase could span the end
-- of one and the start of the next. Its length is the number of distinct words a fit is a share of.
--
-- A stored generated column, like `name_lower`: every write of the row (the search triggers'
-- INSERT ... ON CONFLICT DO UPDATE of `name`) keeps it, and the triggers need no change.
-- Adding it rewrites `metric_search` once.
ALTER TABLE "metric_search"
  ADD COLUMN "name_vector" tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, search_split("name"))) STORED;
