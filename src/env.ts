/**
 * The only reader of process.env. Every variable of the service interface is
 * validated here at start-up; a bad value prints every problem and exits 1.
 */
import { z } from 'zod';

const booleanString = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const positiveInt = z.coerce.number().int().positive();

export const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL')
      .optional(),
    DATA_DIR: z.string().min(1).default('./.data'),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .optional(),
    RATE_LIMIT_PER_MINUTE: positiveInt.default(60),
    THROTTLE_PER_MINUTE: positiveInt.default(600),
    THROTTLE_FAILURE_COST: positiveInt.default(10),
    PUBLIC_APP_URL: z.url().default('http://localhost:3000'),
    SUMMARY_PROVIDER: z.enum(['extractive', 'openai']).default('extractive'),
    SUMMARY_OPENAI_BASE_URL: z.url().optional(),
    SUMMARY_OPENAI_API_KEY: z.string().optional(),
    SUMMARY_MODEL: z.string().optional(),
    SUMMARY_TIMEOUT_MS: positiveInt.default(10000),
    SUMMARY_DAILY_CAP: z.coerce.number().int().min(0).default(500),
    TRUST_PROXY: booleanString.default(false),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(0),
    SERVER_TIMING: booleanString.optional().transform((value) => value === true),
    /** unset: the demo rule of src/demo.ts; 1 loads the demo registry into an empty embedded database, 0 never */
    DEMO: booleanString.optional(),
  })
  .superRefine((env, ctx) => {
    if (env.SUMMARY_PROVIDER === 'openai') {
      for (const name of ['SUMMARY_OPENAI_BASE_URL', 'SUMMARY_MODEL'] as const) {
        if (!env[name])
          ctx.addIssue({ code: 'custom', path: [name], message: 'required when SUMMARY_PROVIDER=openai' });
      }
    }
  });

export type Env = z.infer<typeof envSchema>;

/** Parses an environment; throws with one line per problem. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  // An empty variable means "unset", as in most shells' `VAR= cmd`.
  const defined = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''));
  const result = envSchema.safeParse(defined);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.') || '(env)'}: ${issue.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

function loadEnv(): Env {
  try {
    return parseEnv(process.env);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

export const env: Env = loadEnv();
