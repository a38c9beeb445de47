// A DNS server over UDP on 127.0.0.1 that answers A and AAAA queries from a table, or with a
// chosen error code per record type: the partial answers real servers give (dnsmasq with no
// upstream answers A and refuses AAAA) without needing dnsmasq or root.
import { createSocket } from 'node:dgram';
import { isIPv4 } from 'node:net';

/** DNS response codes a test may answer with (RFC 1035 §4.1.1). */
export const RCODE = { noError: 0, serverFailure: 2, nameError: 3, refused: 5 } as const;

const TYPE_A = 1;
const TYPE_AAAA = 28;

export interface FakeDnsOptions {
  /** Addresses per name (IPv4 ones answer A queries, IPv6 ones AAAA queries). */
  readonly records: Readonly<Record<string, readonly string[]>>;
  /** An error code for every A (or AAAA) query instead of an answer. */
  readonly refuse?: { readonly A?: number; readonly AAAA?: number };
}

export interface FakeDns {
  /** `127.0.0.1:port`, as a resolver's server. */
  readonly server: string;
  /** How many queries of each type were answered (to show the server was asked). */
  readonly queries: { A: number; AAAA: number };
  close(): Promise<void>;
}

export async function startFakeDns(options: FakeDnsOptions): Promise<FakeDns> {
  const socket = createSocket('udp4');
  const queries = { A: 0, AAAA: 0 };
  socket.on('message', (query, peer) => {
    const parsed = parseQuestion(query);
    if (!parsed) return;
    const { name, type, end } = parsed;
    if (type !== TYPE_A && type !== TYPE_AAAA) return;
    const kind = type === TYPE_A ? 'A' : 'AAAA';
    queries[kind]++;
    const rcode = options.refuse?.[kind];
    const addresses =
      rcode === undefined
        ? (options.records[name.toLowerCase()] ?? []).filter((a) => isIPv4(a) === (type === TYPE_A))
        : [];
    socket.send(response(query, end, type, rcode ?? RCODE.noError, addresses), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    queries,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

function parseQuestion(query: Buffer): { name: string; type: number; end: number } | undefined {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let i = 12;
  while (i < query.length && query[i] !== 0) {
    const length = query[i]!;
    labels.push(query.subarray(i + 1, i + 1 + length).toString('latin1'));
    i += 1 + length;
  }
  if (i + 5 > query.length) return undefined;
  return { name: labels.join('.'), type: query.readUInt16BE(i + 1), end: i + 5 };
}

function response(
  query: Buffer,
  questionEnd: number,
  type: number,
  rcode: number,
  addresses: string[],
): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0); // the query's id
  const recursionDesired = query.readUInt16BE(2) & 0x0100;
  header.writeUInt16BE(0x8000 | 0x0400 | recursionDesired | 0x0080 | rcode, 2); // QR, AA, RD, RA, rcode
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses.length, 6);
  const answers = addresses.map((address) => {
    const data = type === TYPE_A ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address);
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(type, 2);
    record.writeUInt16BE(1, 4); // class IN
    record.writeUInt32BE(0, 6); // TTL 0
    record.writeUInt16BE(data.length, 10);
    return Buffer.concat([record, data]);
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...answers]);
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const parts = (s: string | undefined) => (s ? s.split(':').map((h) => Number.parseInt(h, 16)) : []);
  const left = parts(head);
  const right = parts(tail);
  const groups = [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  const bytes = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) bytes.writeUInt16BE(g, i * 2);
  return bytes;
}
