/**
 * Whether a metric's business definition says anything. Its members are
 * strings that default to "", so an undefined definition would read as five
 * blank strings, indistinguishable from data; the contract states it instead
 * (docs/contract-behaviour.md).
 */
export const BUSINESS_DEFINITION_STATUSES = ['defined', 'empty'] as const;
export type BusinessDefinitionStatus = (typeof BUSINESS_DEFINITION_STATUSES)[number];

/** The columns of the definition's members, in the contract's order. */
export const BUSINESS_DEFINITION_COLUMNS = [
  'bdIncluded',
  'bdExcluded',
  'bdTimeWindow',
  'bdCaveats',
  'bdLegacyDescription',
] as const;

/** `empty` when every member is blank (whitespace is no definition), else `defined`. */
export function businessDefinitionStatus(members: readonly string[]): BusinessDefinitionStatus {
  return members.some((member) => member.trim() !== '') ? 'defined' : 'empty';
}
