import type { ServerResponse } from 'node:http';
import type { Cluster, ClusterEvent } from '@doyen/cluster';
import { memberKey } from '@doyen/cluster';
import { type ActorSystem, RateLimitedLog } from '@doyen/core';
import { EventStreamSlots } from './event-stream-slots.js';
import { BadRequestBodyError, readJsonBody, sendJson } from './http-json.js';
import type { ManagedNode, Route } from './management-route.js';
import {
  clusterMembersView,
  clusterMemberView,
  domainEventOf,
  findMemberByAddress,
  initialStateEvents,
  nodeUri,
  selectedEventTypes,
} from './members-api.js';

/** Event streams one management server serves at once; a newcomer closes an older one (event-stream-slots.ts). */
export const MAX_EVENT_STREAMS = 16;
/** Event streams one client address holds at once: half, so one address never holds them all. */
export const MAX_EVENT_STREAMS_PER_CLIENT = 8;
/** The event stream's paths (Akka's and ours): held open, so refused cross-site like a change. */
export const EVENT_STREAM_PATHS: readonly string[] = ['/cluster/events', '/cluster/domain-events'];
/** A stream whose client reads slower than this backlog (bytes) is closed. */
const MAX_STREAM_BACKLOG = 1024 * 1024;
/** How often a stream checks for a new incarnation, and every how many checks it sends a keep-alive. */
const STREAM_TICK_MS = 1000;
const KEEP_ALIVE_TICKS = 15;

/**
 * Akka Management's cluster routes: `GET /cluster/members`, `GET|PUT|DELETE
 * /cluster/members/{address}` and the event stream `GET /cluster/events` (also at Akka's
 * `/cluster/domain-events`). PUT and DELETE change state, so they reach this route only after
 * the management guard (token, same-site, JSON); `operation` comes as a JSON body
 * (`{"operation": "Down"}`), not as Akka's form field, for that reason.
 */
export function membersRoute(node: ManagedNode, leaveSelf: () => void): Route {
  const streams = new EventStreamSlots<ServerResponse>(MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_CLIENT);
  let evictionLog: { system: ActorSystem; log: RateLimitedLog } | undefined;
  const logEviction = (reason: string, newcomer: string) => {
    const system = node.cluster.system;
    if (evictionLog?.system !== system)
      evictionLog = { system, log: new RateLimitedLog(system.logger, Date.now) };
    system.metrics.inc(
      'doyen_http_event_streams_evicted_total',
      'Event streams closed to serve a newer one',
      {
        reason,
      },
    );
    evictionLog.log.warn(
      `http.events-evicted:${reason}`,
      { event: 'http.events-evicted', reason, newcomer },
      `event stream closed to serve a newer one (${reason})`,
    );
  };
  return async (request, response, url) => {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = request.method ?? 'GET';
    const cluster = node.cluster;
    if (path === '/cluster/members') {
      if (method !== 'GET') {
        sendJson(response, 405, {
          message: `${method} not allowed on /cluster/members: a doyen node joins through its seeds or discovery`,
        });
        return true;
      }
      sendJson(response, 200, clusterMembersView(cluster, node.coordinator));
      return true;
    }
    if (EVENT_STREAM_PATHS.includes(path)) {
      if (method !== 'GET') {
        sendJson(response, 405, { message: `${method} not allowed on ${path}` });
        return true;
      }
      const selected = selectedEventTypes(url.searchParams.getAll('type'));
      if (!selected.ok) {
        sendJson(response, 400, {
          message: `unknown event type ${JSON.stringify(selected.unknown.slice(0, 100))}`,
        });
        return true;
      }
      const client = request.socket.remoteAddress ?? 'unknown';
      for (const old of streams.admit(client, response)) {
        logEviction(old.reason, client);
        old.stream.end(`: closed to serve a newer stream (${old.reason})\n\n`);
      }
      streamEvents(node, response, selected.types, () => streams.release(response));
      return true;
    }
    const one = /^\/cluster\/members\/([^/]+)$/.exec(path);
    if (!one) return false;
    let raw: string;
    try {
      raw = decodeURIComponent(one[1]!);
    } catch {
      sendJson(response, 400, { message: 'the address is not valid percent-encoding' });
      return true;
    }
    const member = findMemberByAddress(cluster, raw);
    const shown = JSON.stringify(raw.slice(0, 200));
    if (method === 'GET') {
      if (!member) sendJson(response, 404, { message: `Member [${shown}] not found` });
      else sendJson(response, 200, clusterMemberView(cluster, member));
      return true;
    }
    if (method !== 'PUT' && method !== 'DELETE') {
      sendJson(response, 405, { message: `${method} not allowed on /cluster/members/{address}` });
      return true;
    }
    let operation = 'leave';
    if (method === 'PUT') {
      try {
        const body = await readJsonBody(request);
        const given = (body as { operation?: unknown } | null)?.operation;
        if (typeof given !== 'string') throw new BadRequestBodyError('send {"operation": "Down" | "Leave"}');
        operation = given.toLowerCase();
      } catch (error) {
        if (!(error instanceof BadRequestBodyError)) throw error;
        sendJson(response, error.status, { message: error.message });
        return true;
      }
      if (operation !== 'down' && operation !== 'leave') {
        sendJson(response, 400, {
          message: `Operation [${JSON.stringify(operation.slice(0, 50))}] not supported`,
        });
        return true;
      }
    }
    if (!member) {
      sendJson(response, 404, { message: `Member [${shown}] not found` });
      return true;
    }
    const uri = nodeUri(cluster.system.cluster, member.address);
    if (operation === 'down') {
      cluster.down(memberKey(member));
      sendJson(response, 200, { message: `Downing ${uri}` });
      return true;
    }
    if (memberKey(member) !== cluster.self.key) {
      // A leave is the member's own act (leaves are never forwarded on the wire: nobody can make another node leave).
      sendJson(response, 400, {
        message: `a doyen node leaves only itself: send this to ${uri}'s own management port (or down it)`,
      });
      return true;
    }
    leaveSelf();
    sendJson(response, 200, { message: `Leaving ${uri}` });
    return true;
  };
}

/**
 * Server-sent events of the node's cluster events in Akka's shape, starting with the current
 * state as events. Follows the node into a new incarnation (after a downing or a merge) with
 * that incarnation's state; ends when the client goes or reads too slowly.
 */
function streamEvents(
  node: ManagedNode,
  response: ServerResponse,
  types: ReadonlySet<string>,
  onEnd: () => void,
): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
  let cluster: Cluster = node.cluster;
  let unsubscribe = () => {};
  const send = (event: ClusterEvent) => {
    const view = domainEventOf(cluster.system.cluster, event);
    if (!types.has(view.type)) return;
    response.write(`event: ${view.type}\ndata: ${JSON.stringify(view.data)}\n\n`);
    if (response.writableLength > MAX_STREAM_BACKLOG) {
      cluster.system.logger.warn(
        { event: 'http.events-slow-client', backlog: response.writableLength },
        'event stream closed: the client reads too slowly',
      );
      response.destroy();
    }
  };
  const follow = (next: Cluster) => {
    unsubscribe();
    cluster = next;
    unsubscribe = next.subscribe(send);
    for (const e of initialStateEvents(next)) send(e);
  };
  follow(cluster);
  let ticks = 0;
  const timer = setInterval(() => {
    if (node.cluster !== cluster) follow(node.cluster);
    if (++ticks % KEEP_ALIVE_TICKS === 0) response.write(': keep-alive\n\n');
  }, STREAM_TICK_MS);
  timer.unref();
  response.once('close', () => {
    clearInterval(timer);
    unsubscribe();
    onEnd();
  });
}
