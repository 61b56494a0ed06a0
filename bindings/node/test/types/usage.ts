// Compiled with `tsc --noEmit` by test/typings.test.js: a usage sample that
// must type-check against index.d.ts.
import {
  Client,
  FencingToken,
  FencedError,
  KrabkaError,
  DecodeError,
  ErrorCode,
  rolePartition,
  murmur2,
  encodeLease,
  decodeLease,
  isTombstone,
  validateRole,
  type Leadership,
  type Status,
} from 'krabka-coord';

async function main(): Promise<void> {
  const client = new Client({ 'bootstrap.servers': 'localhost:9092', 'krabka.lease.ms': 3000, 'enable.x': true });
  const leadership: Leadership = await client.acquire('controller', 'node-1', { timeoutMs: 10_000 });
  const token: FencingToken = leadership.token;
  const id: bigint = token.producerId;
  const epoch: number = token.producerEpoch;
  console.log(id, epoch, token.supersedes(FencingToken.NO_EPOCH), token.compare(FencingToken.parse('1:2')));
  if (leadership.renewDue()) await leadership.renew();
  client.on('log', (l) => console.log(l.level, l.message));
  const stats = client.stats();
  const won: number = stats.acquisitions + (stats.roles['controller']?.lease_remaining_ms ?? 0);
  leadership.ended.then((e) => console.log(e.state, e.reason, e.error?.code, won));
  for await (const ev of await client.watch('controller', { renewals: true })) {
    const h: string | null = ev.holder;
    console.log(ev.kind, h, ev.token.toString(), ev.prevToken, ev.roster.length, ev.offset, ev.atMs);
    break;
  }
  try {
    const r = await leadership.produce('commands', Buffer.from('go'), { key: 'k', partition: 0 });
    const offset: bigint = r.offset;
    console.log(offset, r.partition);
  } catch (e) {
    if (e instanceof FencedError) console.log('fenced', e.code === ErrorCode.FENCED, e.fatal);
    else if (e instanceof KrabkaError) console.log(e.codeName, e.retriable);
  }
  const { leadership: maybe, retryAt } = await client.tryAcquire(Buffer.from('controller'), 'node-2');
  if (maybe === null && retryAt !== null) console.log(Number(retryAt) - Date.now());
  const s: Status = await client.describe('controller');
  console.log(s.holder, s.current, s.roster.map((e) => e.rank), s.lease?.deadline);
  await leadership.resign();
  console.log(leadership.state === 'resigned');
  await client.close();

  const p: number = rolePartition('controller', 16);
  const h: number = murmur2(Buffer.from('x'));
  const bytes = encodeLease({ member: 'node-1', token: new FencingToken(4242n, 7), grantedAt: 1n, deadline: 2 });
  const lease = decodeLease(bytes);
  console.log(p, h, lease.token.toString(), isTombstone(null), validateRole('r').length);
  try {
    decodeLease(Buffer.alloc(0));
  } catch (e) {
    if (e instanceof DecodeError) console.log(e.category);
  }
}

void main;
