/** The summaries configuration from the validated environment (src/env.ts). */
import type { Env } from '../env.js';
import type { SummaryConfig } from './generator.js';

export function summaryConfigFromEnv(
  env: Pick<
    Env,
    | 'SUMMARY_PROVIDER'
    | 'SUMMARY_OPENAI_BASE_URL'
    | 'SUMMARY_OPENAI_API_KEY'
    | 'SUMMARY_MODEL'
    | 'SUMMARY_TIMEOUT_MS'
    | 'SUMMARY_DAILY_CAP'
    | 'SUMMARY_MAX_CONCURRENT'
  >,
): SummaryConfig {
  const provider: SummaryConfig['provider'] =
    env.SUMMARY_PROVIDER === 'openai'
      ? {
          kind: 'openai',
          // env.ts requires both when the provider is openai.
          baseUrl: env.SUMMARY_OPENAI_BASE_URL ?? '',
          apiKey: env.SUMMARY_OPENAI_API_KEY ?? null,
          model: env.SUMMARY_MODEL ?? '',
        }
      : { kind: 'extractive' };
  return {
    provider,
    timeoutMs: env.SUMMARY_TIMEOUT_MS,
    defaultDailyCap: env.SUMMARY_DAILY_CAP,
    maxConcurrent: env.SUMMARY_MAX_CONCURRENT,
  };
}
