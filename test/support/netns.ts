/**
 * Real network partitions for CLI nodes: every node runs in its own network namespace (its own
 * "host"), all wired through veth pairs to a Linux bridge in one more namespace. Partitions are
 * firewall rules (nftables, or iptables when nft is missing) inside each host namespace, so a
 * cut is directional per group and heals without touching links. Needs root, iproute2 and
 * nftables (or iptables); `netnsSkipMessage()` names what is missing.
 *
 * Nothing here touches the machine's own interfaces: veth pairs are created inside the bridge
 * namespace with their peer moved straight into the host namespace. Names carry the pid of the
 * test process (and a tag, for several topologies in one process) so that parallel runs do not
 * collide.
 *
 * `ip netns exec` execs the node in place (no fork), so a NetnsNode's pid is the node's own:
 * SIGSTOP / SIGCONT (`pauseFor`) freeze the node itself.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NodeProcess } from '../../packages/testkit/src/node-process.js';
import { compiledCli, secretEnv } from './cli-process.js';
import { dnsmasqArgs } from './dnsmasq.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TABLE = 'dyn_partition';
/** The `doyen` bin the nodes run: the compiled one, or DOYEN_NETNS_CLI (a bin bundled elsewhere). */
const cli = () => process.env.DOYEN_NETNS_CLI || compiledCli();

function sh(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, {
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: 10_000,
  });
}

function works(cmd: string, args: string[]): boolean {
  try {
    sh(cmd, args);
    return true;
  } catch {
    return false;
  }
}

type Firewall = 'nft' | 'iptables';

let firewallTool: Firewall | undefined;

function firewall(): Firewall | undefined {
  firewallTool ??= works('nft', ['--version'])
    ? 'nft'
    : works('iptables', ['--version'])
      ? 'iptables'
      : undefined;
  return firewallTool;
}

const hasCurl = () => works('curl', ['--version']);

/** Namespaces of earlier runs that died without tearing down (their pid is gone). */
function removeStaleNamespaces(): void {
  let list = '';
  try {
    list = sh('ip', ['netns', 'list']);
  } catch {
    return;
  }
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const m = /^dyn-(?:br|h\d+)(?:-[a-z0-9]+)?-(\d+)$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || isAlive(pid)) continue;
    deleteNamespace(name);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills what still runs inside one of our namespaces, then deletes it. */
function deleteNamespace(ns: string): void {
  try {
    for (const pid of sh('ip', ['netns', 'pids', ns]).split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
  } catch {
    // no such namespace
  }
  try {
    sh('ip', ['netns', 'delete', ns]);
  } catch {
    // already gone
  }
}

/** Runs a command to completion; rejects with its stderr on a non-zero exit. */
function run(cmd: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { encoding: 'utf8', timeout: 10_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout),
    );
    child.stdin?.end(input ?? '');
  });
}

let missing: string[] | undefined;

/**
 * What these tests lack here, by name (empty when they can run): Linux, root, `ip` (iproute2)
 * able to create and delete a namespace, `nft` (Debian's nftables; iptables also does). Cached.
 */
export function netnsMissing(): readonly string[] {
  if (missing !== undefined) return missing;
  const lack: string[] = [];
  if (process.platform !== 'linux') lack.push('linux');
  if (process.getuid?.() !== 0) lack.push('root');
  if (!works('ip', ['-V'])) lack.push('ip (iproute2)');
  if (firewall() === undefined) lack.push('nft (nftables; or iptables)');
  if (lack.length === 0) {
    const probe = `dyn-probe-${process.pid}`;
    try {
      sh('ip', ['netns', 'add', probe]);
      sh('ip', ['-n', probe, 'link', 'set', 'lo', 'up']);
    } catch (error) {
      lack.push(`ip netns (${String((error as Error).message).split('\n')[0]})`);
    }
    works('ip', ['netns', 'delete', probe]);
  }
  missing = lack;
  if (lack.length === 0) removeStaleNamespaces();
  return missing;
}

/** True when root, `ip netns` and a firewall tool are all here. */
export function canUseNetns(): boolean {
  return netnsMissing().length === 0;
}

/** The skip notice, naming exactly what is missing. */
export function netnsSkipMessage(): string {
  return `network-namespace tests skipped: missing ${netnsMissing().join(', ')}`;
}

/**
 * Runs the compiled CLI once (it prints its usage and exits) so its files are in the page cache
 * before several nodes start at once on a loaded machine.
 */
export function warmUpCli(): Promise<void> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli(), '--help'], { cwd: ROOT, timeout: 120_000 }, () => resolve());
  });
}

export interface NetnsHost {
  readonly name: string;
  readonly index: number;
  readonly ns: string;
  readonly ip: string;
}

/** A `doyen node` in a host's namespace. */
export type NetnsNode = NodeProcess & { readonly host: NetnsHost };

/** The ports every CLI node of a topology uses (each host has its own address). */
export const NETNS_CLUSTER_PORT = 2552;
export const NETNS_HTTP_PORT = 8558;

/**
 * SIGSTOPs the node for `ms` (no heartbeats, no timers, no HTTP: a long GC or a frozen VM), then
 * SIGCONTs it. Resolves with the wall-clock ms of both signals.
 */
export async function pauseFor(
  node: NetnsNode,
  ms: number,
): Promise<{ stoppedAt: number; continuedAt: number }> {
  const stoppedAt = Date.now();
  node.pause();
  await new Promise((r) => setTimeout(r, ms));
  node.resume();
  return { stoppedAt, continuedAt: Date.now() };
}

export interface Topology {
  readonly subnet: string;
  readonly bridgeNs: string;
  readonly hosts: readonly NetnsHost[];
  host(name: string): NetnsHost;
  /**
   * Drops all IPv4 traffic between the two groups (host names), inbound and outbound on every
   * host of both groups. Replaces an earlier partition of the same hosts.
   */
  partition(groupA: readonly string[], groupB: readonly string[]): Promise<void>;
  /**
   * Drops the IPv4 packets from every host of `from` to every host of `to`, and only those: the
   * other direction still flows (a one-way partition). Replaces earlier rules of these hosts.
   */
  dropOneWay(from: readonly string[], to: readonly string[]): Promise<void>;
  /** Removes every partition rule. */
  heal(): Promise<void>;
  /** Starts `doyen node ...` inside a host's namespace; `env` adds to its environment (secrets go there, not in `args`). */
  spawnNode(name: string, args: readonly string[], env?: Readonly<Record<string, string>>): NetnsNode;
  /**
   * `doyen node` as a member at the host's address (NETNS_CLUSTER_PORT, management at
   * NETNS_HTTP_PORT on the same address), named after the host, with this run's secret and
   * token in its environment; `seeds` are host names (none: no `--seeds`, for discovery);
   * `extra` are more flags.
   */
  spawnMember(name: string, cluster: string, seeds: readonly string[], extra?: readonly string[]): NetnsNode;
  /** GET from inside a host's namespace; undefined when it does not answer (or is not JSON). */
  getJson(name: string, url: string, timeoutMs?: number): Promise<any>;
  /** Any method from inside a host's namespace; undefined on failure, a non-2xx status or non-JSON. */
  requestJson(
    name: string,
    url: string,
    options?: {
      method?: string;
      timeoutMs?: number;
      headers?: Readonly<Record<string, string>>;
      /** A request body (sent as is; set its content-type in `headers`). */
      body?: string;
    },
  ): Promise<any>;
  /**
   * Starts Debian's dnsmasq in the bridge namespace, at `<subnet>.254` port 53, answering for
   * `*.test` from the hosts files in `hostsDir` (read again whenever one changes; unknown names
   * get NXDOMAIN). Resolves with its address once it answers. Needs `dnsmasqMissing()` empty.
   */
  startDnsServer(hostsDir: string): Promise<string>;
  /** SIGKILLs every node process started through this topology and waits for them. */
  killNodes(): Promise<void>;
  /** Kills every process and deletes every namespace; safe to call twice. */
  teardown(): Promise<void>;
}

/**
 * A bridge namespace `dyn-br-<pid>` and one namespace `dyn-h<i>-<pid>` per name, each with
 * address 10.201.<k>.<i>/24 (k from the pid) on a veth whose peer is a bridge port. With a
 * `tag` (lower-case letters and digits) the names are `dyn-br-<tag>-<pid>`, `dyn-h<i>-<tag>-<pid>`:
 * several topologies in one process (their addresses may repeat: each has its own bridge).
 */
export function createTopology(names: readonly string[], { tag }: { tag?: string } = {}): Topology {
  const pid = process.pid;
  if (tag !== undefined && !/^[a-z0-9]+$/.test(tag))
    throw new Error(`topology tag ${tag}: lower-case letters and digits only`);
  const suffix = tag === undefined ? `${pid}` : `${tag}-${pid}`;
  const k = (pid % 250) + 1;
  const subnet = `10.201.${k}.0/24`;
  const bridgeNs = `dyn-br-${suffix}`;
  const hosts: NetnsHost[] = names.map((name, i) => ({
    name,
    index: i + 1,
    ns: `dyn-h${i + 1}-${suffix}`,
    ip: `10.201.${k}.${i + 1}`,
  }));
  const namespaces = [bridgeNs, ...hosts.map((h) => h.ns)];
  const nodes: NetnsNode[] = [];
  const pending = new Set<ChildProcess>();
  let tornDown = false;

  const teardownSync = () => {
    if (tornDown) return;
    tornDown = true;
    for (const child of pending) {
      try {
        child.kill('SIGKILL');
      } catch {
        // gone
      }
    }
    for (const n of nodes) {
      n.kill9();
    }
    dnsServer?.kill('SIGKILL');
    for (const ns of namespaces) deleteNamespace(ns);
  };
  process.once('exit', teardownSync);

  const ipIn = (ns: string, ...args: string[]) => sh('ip', ['-n', ns, ...args]);
  try {
    for (const ns of namespaces) deleteNamespace(ns); // leftovers of a pid reused
    sh('ip', ['netns', 'add', bridgeNs]);
    ipIn(bridgeNs, 'link', 'set', 'lo', 'up');
    ipIn(bridgeNs, 'link', 'add', 'br0', 'type', 'bridge');
    ipIn(bridgeNs, 'link', 'set', 'br0', 'up');
    for (const h of hosts) {
      sh('ip', ['netns', 'add', h.ns]);
      ipIn(h.ns, 'link', 'set', 'lo', 'up');
      const port = `v${h.index}`;
      ipIn(bridgeNs, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.ns);
      ipIn(bridgeNs, 'link', 'set', port, 'master', 'br0');
      ipIn(bridgeNs, 'link', 'set', port, 'up');
      ipIn(h.ns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0');
      ipIn(h.ns, 'link', 'set', 'eth0', 'up');
    }
  } catch (error) {
    teardownSync();
    process.removeListener('exit', teardownSync);
    throw error;
  }

  const byName = new Map(hosts.map((h) => [h.name, h]));
  const host = (name: string): NetnsHost => {
    const h = byName.get(name);
    if (!h) throw new Error(`no host ${name}`);
    return h;
  };

  const inNs = (h: NetnsHost, args: string[], input?: string) =>
    run('ip', ['netns', 'exec', h.ns, ...args], input);

  const block = (h: NetnsHost, others: readonly NetnsHost[]) => drop(h, others, others);

  // One atomic nft transaction per host: (re)create our table with the blocked addresses, packets
  // from `inbound` dropped on the way in, packets to `outbound` on the way out.
  const drop = async (h: NetnsHost, inbound: readonly NetnsHost[], outbound: readonly NetnsHost[]) => {
    if (firewall() === 'nft') {
      const set = (name: string, of: readonly NetnsHost[]) =>
        `  set ${name} { type ipv4_addr;${of.length > 0 ? ` elements = { ${of.map((o) => o.ip).join(', ')} }` : ''} }`;
      const script = [
        `table inet ${TABLE} {}`,
        `delete table inet ${TABLE}`,
        `table inet ${TABLE} {`,
        set('from', inbound),
        set('to', outbound),
        '  chain input { type filter hook input priority -10; policy accept; ip saddr @from drop; }',
        '  chain output { type filter hook output priority -10; policy accept; ip daddr @to drop; }',
        '}',
      ].join('\n');
      await inNs(h, ['nft', '-f', '-'], `${script}\n`);
    } else {
      await unblock(h);
      for (const o of inbound) await inNs(h, ['iptables', '-w', '-A', 'INPUT', '-s', o.ip, '-j', 'DROP']);
      for (const o of outbound) await inNs(h, ['iptables', '-w', '-A', 'OUTPUT', '-d', o.ip, '-j', 'DROP']);
    }
  };

  const unblock = async (h: NetnsHost) => {
    if (firewall() === 'nft') {
      await inNs(h, ['nft', '-f', '-'], `table inet ${TABLE} {}\ndelete table inet ${TABLE}\n`);
    } else {
      // our own fresh namespace: INPUT and OUTPUT hold nothing but partition rules
      await inNs(h, ['iptables', '-w', '-F', 'INPUT']);
      await inNs(h, ['iptables', '-w', '-F', 'OUTPUT']);
    }
  };

  const useCurl = hasCurl();

  const requestJson = (
    name: string,
    url: string,
    {
      method = 'GET',
      timeoutMs = 2000,
      headers,
      body,
    }: {
      method?: string;
      timeoutMs?: number;
      headers?: Readonly<Record<string, string>>;
      body?: string;
    } = {},
  ): Promise<any> => {
    const h = host(name);
    // headers (a bearer token) go through the environment, never on a command line
    const cmd =
      useCurl && !headers && body === undefined
        ? ['netns', 'exec', h.ns, 'curl', '-s', '-f', '-X', method, '-m', String(timeoutMs / 1000), url]
        : [
            'netns',
            'exec',
            h.ns,
            process.execPath,
            '-e',
            `fetch(process.argv[1],{method:process.argv[2],headers:JSON.parse(process.env.NETNS_HEADERS||'{}'),body:process.env.NETNS_BODY,signal:AbortSignal.timeout(${timeoutMs})})` +
              '.then(r=>r.ok?r.text():Promise.reject()).then(t=>process.stdout.write(t),()=>process.exit(1))',
            url,
            method,
          ];
    return new Promise((resolve) => {
      const env = {
        ...process.env,
        ...(headers ? { NETNS_HEADERS: JSON.stringify(headers) } : {}),
        ...(body !== undefined ? { NETNS_BODY: body } : {}),
      };
      const child = execFile(
        'ip',
        cmd,
        { timeout: timeoutMs + 3000, encoding: 'utf8', env },
        (error, stdout) => {
          pending.delete(child);
          if (error) return resolve(undefined);
          try {
            resolve(JSON.parse(stdout));
          } catch {
            resolve(undefined);
          }
        },
      );
      pending.add(child);
    });
  };

  /** SIGKILLs the nodes still running; waits for them (bounded, so a hook cannot hang). */
  const killAll = async () => {
    const waiting = nodes.map((n) => n.exited);
    for (const n of nodes) n.kill9();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(waiting), new Promise((r) => (timer = setTimeout(r, 5000)))]);
    clearTimeout(timer);
  };

  let dnsServer: ChildProcess | undefined;

  return {
    subnet,
    bridgeNs,
    hosts,
    host,
    async startDnsServer(hostsDir) {
      const ip = `10.201.${k}.254`;
      ipIn(bridgeNs, 'addr', 'add', `${ip}/24`, 'dev', 'br0');
      // dnsmasq drops to nobody: it must be able to read the directory and its files
      chmodSync(hostsDir, 0o755);
      dnsServer = spawn(
        'ip',
        ['netns', 'exec', bridgeNs, 'dnsmasq', ...dnsmasqArgs({ listen: ip, port: 53, hostsDir })],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      pending.add(dnsServer);
      let errors = '';
      dnsServer.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
      // answering: a query for a name no file holds gets NXDOMAIN (exit 1 from the resolver below)
      const deadline = Date.now() + 10_000;
      for (;;) {
        const answer = await run('ip', [
          'netns',
          'exec',
          hosts[0]!.ns,
          process.execPath,
          '-e',
          `const r=new (require('node:dns').promises.Resolver)();r.setServers([process.argv[1]]);` +
            `r.resolve4('probe.test').then(()=>console.log('ok'),e=>console.log(e.code))`,
          ip,
        ]).catch((e: Error) => e.message);
        if (/ENOTFOUND|ok/.test(answer)) return ip;
        if (Date.now() > deadline || dnsServer.exitCode !== null)
          throw new Error(`dnsmasq did not answer at ${ip}: ${answer} ${errors}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async partition(groupA, groupB) {
      const a = groupA.map(host);
      const b = groupB.map(host);
      const overlap = a.filter((h) => b.includes(h));
      if (overlap.length > 0) throw new Error(`${overlap[0]!.name} is on both sides`);
      // all hosts at once, so the cut is as simultaneous as a real one
      await Promise.all([...a.map((h) => block(h, b)), ...b.map((h) => block(h, a))]);
    },
    async dropOneWay(from, to) {
      const a = from.map(host);
      const b = to.map(host);
      const overlap = a.filter((h) => b.includes(h));
      if (overlap.length > 0) throw new Error(`${overlap[0]!.name} is on both sides`);
      // the senders drop on the way out, the receivers on the way in: nothing of it gets through
      await Promise.all([...a.map((h) => drop(h, [], b)), ...b.map((h) => drop(h, a, []))]);
    },
    async heal() {
      await Promise.all(hosts.map(unblock));
    },
    spawnNode(name, args, env = {}) {
      const h = host(name);
      const node = Object.assign(
        NodeProcess.spawn({
          command: 'ip',
          args: ['netns', 'exec', h.ns, process.execPath, cli(), ...args],
          cwd: ROOT,
          env: { DOYEN_LOG_LEVEL: 'info', ...env },
        }),
        { host: h },
      );
      nodes.push(node);
      return node;
    },
    spawnMember(name, cluster, seeds, extra = []) {
      const ip = host(name).ip;
      return this.spawnNode(
        name,
        [
          'node',
          '--cluster',
          cluster,
          '--host',
          ip,
          '--port',
          String(NETNS_CLUSTER_PORT),
          ...(seeds.length > 0
            ? ['--seeds', seeds.map((s) => `${host(s).ip}:${NETNS_CLUSTER_PORT}`).join(',')]
            : []),
          '--http-port',
          String(NETNS_HTTP_PORT),
          '--http-host',
          ip,
          '--name',
          name,
          ...extra,
        ],
        secretEnv(),
      );
    },
    getJson: (name, url, timeoutMs = 2000) => requestJson(name, url, { timeoutMs }),
    requestJson,
    async killNodes() {
      await killAll();
      nodes.length = 0;
    },
    async teardown() {
      if (tornDown) return;
      await killAll();
      teardownSync();
      process.removeListener('exit', teardownSync);
    },
  };
}
