/** `MetricPage.searchHints`: what a search says it did (src/metric/search-page.ts). */
import { builder } from '../builder.js';
import type { SearchHints } from '../metric/list-page.js';

const SearchCorrectionRef = builder.objectRef<SearchHints['corrected'][number]>('SearchCorrection').implement({
  description: 'A word of the query read as another word of the organization’s metrics.',
  fields: (t) => ({
    from: t.exposeString('from', { description: 'The word as searched (lowercase).' }),
    to: t.exposeString('to', { description: 'The word it most likely meant; the search also matched close words.' }),
  }),
});

export const SearchHintsRef = builder.objectRef<SearchHints>('SearchHints').implement({
  description: 'What a search did besides matching the query as written.',
  fields: (t) => ({
    corrected: t.field({
      type: [SearchCorrectionRef],
      resolve: (hints) => hints.corrected,
      description: 'The words corrected, when some result came through a correction; else empty.',
    }),
    didYouMean: t.exposeStringList('didYouMean', {
      description:
        'When the search found nothing: up to 5 names or keys of the organization’s metrics close to the query; else empty.',
    }),
  }),
});
