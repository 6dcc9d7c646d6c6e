/**
 * Headers of the HTML pages (GraphiQL, /docs): a Content-Security-Policy that
 * lets them load and call nothing but this service, and no framing.
 */

/** The directives every page shares; `extra` adds to or replaces them by name. */
export function contentSecurityPolicy(extra: Record<string, string> = {}): string {
  const directives: Record<string, string> = {
    'default-src': "'self'",
    'script-src': "'self'",
    // Both pages' frameworks add <style> elements and style attributes at run time.
    'style-src': "'self' 'unsafe-inline'",
    'img-src': "'self' data:",
    'font-src': "'self' data:",
    'connect-src': "'self'",
    'worker-src': "'self'",
    'object-src': "'none'",
    'base-uri': "'none'",
    'form-action': "'self'",
    'frame-ancestors': "'none'",
    ...extra,
  };
  return Object.entries(directives)
    .map(([name, value]) => `${name} ${value}`)
    .join('; ');
}

/** The headers of an HTML page: its CSP, no framing, no referrer sent elsewhere. */
export function pageHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy(extra),
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
  };
}
