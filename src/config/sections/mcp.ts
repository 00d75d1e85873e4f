// `[mcp]`: the Model Context Protocol endpoint and its OAuth 2.1 authorization server.
import * as v from 'valibot';
import { keyPath, nonEmpty } from './common.js';
import { section } from './section.js';

/** `[mcp.oauth]`: OAuth 2.1 for `/mcp` (authorization code with PKCE, dynamic client registration); see docs/mcp.md. */
export const McpOAuthSchema = v.object({
  enabled: v.optional(v.boolean(), false),
  /** The authorization server's identifier and the base of its endpoints; default: server.public_url, else each request's own origin. */
  issuer_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'), v.regex(/^https?:\/\/[^?#]*$/, 'an http(s) URL without query or fragment'))),
  /** Lifetime of an access token (a signed JWT); the refresh token lives on until it is used or revoked. */
  token_ttl_secs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(86_400)), 3600),
  /** SQLite file of registered clients and refresh-token sessions; default: mcp-oauth.sqlite under [cache] dir. */
  store_path: v.optional(nonEmpty),
  /** What the operator types on the consent page to grant access; `${VAR}` keeps it out of the file. Required when enabled. */
  consent_secret: v.optional(v.pipe(v.string(), v.minLength(8, 'at least 8 characters'))),
  /** Wrong consent secrets accepted per minute, over all processes, before the page answers 429. */
  consent_attempts_per_minute: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 5),
});

/** `[mcp]`: the Model Context Protocol endpoint `/mcp` and its tools; see docs/mcp.md. */
export const McpSchema = v.pipe(
  v.object({
    enabled: v.optional(v.boolean(), false),
    /** A static bearer token `/mcp` requires (`${VAR}` allowed); unset and OAuth off: `/mcp` is open like the other routes. */
    auth_token: v.optional(v.pipe(v.string(), v.minLength(16, 'at least 16 characters'))),
    oauth: v.optional(McpOAuthSchema, {}),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { auth_token, oauth } = dataset.value;
    if (auth_token !== undefined && oauth.enabled) {
      addIssue({ message: 'a static token and [mcp.oauth] enabled cannot both be set; choose one way to authenticate /mcp', path: keyPath(dataset.value, 'auth_token') });
    }
    if (oauth.enabled && oauth.consent_secret === undefined) {
      addIssue({ message: "required when [mcp.oauth] is enabled (the operator's answer on the consent page)", path: [...keyPath(dataset.value, 'oauth'), ...keyPath(oauth, 'consent_secret')] });
    }
  }),
);

// The endpoint and its OAuth server (store, signing key, routes on the admin listener) are set up at start.
export const mcp = section(v.optional(McpSchema, {}), 'all');
