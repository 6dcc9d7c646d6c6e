/**
 * What an imported metric means, from what its source says (docs/importers.md#meaning):
 * the source's description is both the registry's description and the
 * business definition's statement of what the metric counts (`included`);
 * the tool's usage instructions are its caveats. Members the source says
 * nothing for are left out, so a metric without a description keeps the
 * empty definition the contract reports as `business_definition_status: empty`.
 */
import { nonBlank, text } from './read.js';
import type { RegistryMetricInput } from './registry-document-input.js';

export function importedMeaning(
  description: unknown,
  caveats: string | undefined,
): Pick<RegistryMetricInput, 'description' | 'business_definition'> {
  const included = nonBlank(description);
  const definition = { ...(included ? { included } : {}), ...(caveats ? { caveats } : {}) };
  return {
    description: text(description) ?? '',
    ...(Object.keys(definition).length > 0 ? { business_definition: definition } : {}),
  };
}
