import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Why the management plane refused a request (the label of `doyen_http_refused_total`). */
export type RefusalReason = 'host' | 'cross-site' | 'origin' | 'read-only' | 'unauthorized' | 'content-type';

export interface Refusal {
  readonly status: 401 | 403 | 415;
  readonly reason: RefusalReason;
  readonly error: string;
}

/** Who may change the node through the management port. */
export interface ManagementPolicy {
  /** The bearer token state-changing requests must carry; undefined: the plane is read-only. */
  readonly token: string | undefined;
  /** Whether a browser page of this origin may talk to the port. */
  allowsOrigin(origin: string): boolean;
  /**
   * Whether a request naming this `Host` is for us. On a loopback binding only the loopback
   * names (and the allowed origins' hosts) are: a DNS-rebound page names the attacker's host.
   */
  allowsHost(host: string | undefined): boolean;
}

/** A request for another host on a loopback-only server: a DNS-rebound page reading it. */
export function hostRefusalOf(headers: IncomingHttpHeaders, policy: ManagementPolicy): Refusal | undefined {
  return policy.allowsHost(headers.host)
    ? undefined
    : { status: 403, reason: 'host', error: 'this server does not answer for that host' };
}

/** GET and HEAD read; every other method changes something (or may, in a route added later). */
export function changesState(method: string | undefined): boolean {
  return method !== 'GET' && method !== 'HEAD';
}

/**
 * Decides whether a state-changing request may proceed: a pure function of its headers.
 * Cross-site first (a web page learns nothing about the token), then the token, then the
 * content type — `application/json` needs a CORS preflight, which this server never grants,
 * so a form or a `no-cors` fetch from any page cannot reach a handler even with a stolen cookie.
 */
export function refusalOf(headers: IncomingHttpHeaders, policy: ManagementPolicy): Refusal | undefined {
  const crossSite = crossSiteRefusalOf(headers, policy);
  if (crossSite) return crossSite;
  if (policy.token === undefined)
    return {
      status: 403,
      reason: 'read-only',
      error:
        'the management plane is read-only: state-changing routes need a management token (start the node with DOYEN_HTTP_TOKEN or --http-token-file)',
    };
  if (!bearerMatches(headers.authorization, policy.token))
    return { status: 401, reason: 'unauthorized', error: 'send Authorization: Bearer <management token>' };
  if (mediaType(headers['content-type']) !== 'application/json')
    return {
      status: 415,
      reason: 'content-type',
      error: 'state-changing requests need Content-Type: application/json',
    };
  return undefined;
}

/**
 * A request a web page of another site (or of an origin not allowed) made: refused before a
 * state change, and before anything a page could hold without reading it (an event stream: a
 * page that cannot read the stream could still hold the server's places).
 */
export function crossSiteRefusalOf(
  headers: IncomingHttpHeaders,
  policy: ManagementPolicy,
): Refusal | undefined {
  if (headers['sec-fetch-site'] === 'cross-site')
    return { status: 403, reason: 'cross-site', error: 'cross-site requests are refused' };
  const origin = headers.origin;
  if (origin !== undefined && !policy.allowsOrigin(origin))
    return { status: 403, reason: 'origin', error: 'requests from this origin are refused' };
  return undefined;
}

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Constant-time: both sides are hashed first, so neither length nor content leaks through timing. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

/** The origins a browser uses for a server on `port` reached through loopback (and `host`, when it is one address). */
export function ownOrigins(scheme: 'http' | 'https', host: string, port: number): string[] {
  const hosts = ['127.0.0.1', 'localhost', '[::1]'];
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  if (!wildcard) hosts.push(host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);
  const origins = hosts.flatMap((h) => {
    try {
      return [new URL(`${scheme}://${h}:${port}`).origin];
    } catch {
      return [];
    }
  });
  return [...new Set(origins)];
}

/** 127.0.0.0/8, ::1, localhost: only this machine reaches a server bound there. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * A policy from a token and the allowed origins (already `scheme://host[:port]`). `checkHost`:
 * refuse requests naming another host (on by default for loopback bindings; a server bound to
 * a routable address is reached by names this process cannot know).
 */
export function managementPolicy(
  token: string | undefined,
  origins: readonly string[],
  checkHost = false,
): ManagementPolicy {
  const allowed = new Set(origins.map((o) => o.toLowerCase()));
  const hosts = new Set(origins.map((o) => new URL(o).host.toLowerCase()));
  return {
    token: token === undefined || token === '' ? undefined : token,
    allowsOrigin: (origin) => allowed.has(origin.toLowerCase()),
    allowsHost: (host) => !checkHost || host === undefined || hosts.has(host.toLowerCase()),
  };
}
