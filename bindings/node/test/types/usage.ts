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
  Verifier,
  MAX_METADATA_BYTES,
  type Verdict,
  type Leadership,
  type Status,
  type LeadershipStateName,
  type LogLevelName,
  type WatchEventKindName,
  type DataCategory,
  type ErrorCodeName,
  type Elector,
  type GroupMember,
  type GroupEvent,
  type ElectorSet,
  type RoleEvent,
  type TermEventKindName,
  type ElectorStateName,
  type GroupEventKindName,
  type Term,
  type TermStop,
  type StopReasonName,
  type ElectOptions,
  type Input,
  type InputRecord,
  type Offset,
} from 'krabka-coord';

async function elect(client: Client): Promise<void> {
  const ac = new AbortController();
  const opts: ElectOptions = { signal: ac.signal, recampaign: true, eligible: true };
  const elector: Elector = client.elect('controller', 'node-1', opts);
  elector.on('leader', (l) => console.log(l.holder, l.token.toString(), l.deadline + 1n));
  elector.on('stopped', (t: Term, s: TermStop) => console.log(t.number, s.reason));
  elector.on('atRisk', (t, deadline: bigint) => console.log(t.number, deadline));
  const h: { healthy: boolean; reason: string | null } = elector.healthy();
  console.log(h.healthy, h.reason, elector.current?.number, elector.eligible, elector.closed);
  for await (const term of elector) {
    const n: number = term.number;
    const deadline: bigint = term.deadline;
    term.on('atRisk', (d: bigint) => console.log('at risk', d, term.atRisk));
    const signal: AbortSignal = term.signal;
    while (!signal.aborted) await term.leadership.produce('commands', `command ${n}`, { signal });
    const { reason, error } = await term.stopped;
    const r: StopReasonName = reason;
    console.log(r === 'LOST_AT_RISK', error?.codeName, term.stop?.reason, term.active, term.token.toString(), deadline);
    await elector.setEligible(false, { timeoutMs: 5000 });
    await elector.setEligible(true);
    break;
  }
  await elector.close();
}
void elect;

async function main(): Promise<void> {
  const client = new Client({ 'bootstrap.servers': 'localhost:9092', 'krabka.lease.ms': 3000, 'enable.x': true });
  const leadership: Leadership = await client.acquire('controller', 'node-1', { timeoutMs: 10_000 });
  const token: FencingToken = leadership.token;
  const id: bigint = token.producerId;
  const epoch: number = token.producerEpoch;
  console.log(id, epoch, token.supersedes(FencingToken.NO_EPOCH), token.compare(FencingToken.parse('1:2')));
  if (leadership.renewDue()) await leadership.renew();
  client.on('log', (l) => {
    const level: LogLevelName = l.level;
    if (level === 'WARNING') console.log(l.message);
  });
  const stats = client.stats();
  const won: number = stats.acquisitions + (stats.roles['controller']?.lease_remaining_ms ?? 0);
  leadership.ended.then((e) => console.log(e.state === 'FENCED', e.reason, e.error?.code, won));
  for await (const ev of await client.watch('controller', { renewals: true })) {
    const h: string | null = ev.holder;
    const kind: WatchEventKindName = ev.kind;
    console.log(kind === 'HOLDER_CHANGED', h, ev.token.toString(), ev.prevToken, ev.roster.length, ev.offset, ev.atMs);
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
  // Record headers: metadata, named successor, headers, the verifier.
  const meta: Leadership = await client.acquire('router', 'node-1', {
    metadata: Buffer.from('10.0.0.1:8080'),
    memberMetadata: new Uint8Array([1, 2]),
    timeoutMs: 5000,
  });
  const m: Buffer | null = meta.metadata;
  await meta.setMetadata(Buffer.from('10.0.0.2:8080'), { timeoutMs: 1000 });
  await meta.setMetadata(null);
  await meta.produce('commands', 'go', { headers: { trace: 'abc', raw: Buffer.from([0]) } });
  await meta.produce('commands', 'go', { headers: [['trace', 'a'], ['trace', 'b']] });
  await meta.produceBatch([{ topic: 'commands', value: 'x', headers: new Map([['k', 'v']]) }]);
  const input: Input = await meta.consume(['requests'], { timeoutMs: 5000 });
  const recs: InputRecord[] = await input.poll({ max: 100, timeoutMs: 1000 });
  const pos: Offset[] = input.position();
  const from: Offset[] = input.committed();
  const first: bigint | undefined = recs[0]?.offset;
  await meta.produceBatch(
    recs.map((r) => ({ topic: 'commands', value: r.value, partition: r.partition })),
    { offsets: pos },
  );
  await meta.produce('commands', 'go', { offsets: [{ topic: 'requests', partition: 0, offset: 5 }] });
  await meta.produceBatch([], { offsets: from });
  for await (const r of input) console.log(r.topic, r.partition, r.key, r.headers, first);
  input.close();
  const s2: Status = await client.describe('router');
  const sm: Buffer | null = s2.metadata;
  const rm: (Buffer | null)[] = s2.roster.map((e) => e.metadata);
  console.log(m, sm, rm, MAX_METADATA_BYTES);
  await meta.resign({ successor: 'node-2', timeoutMs: 1000 });
  const v = new Verifier();
  const verdict: Verdict = v.judge('router', Buffer.from('1:2'), new FencingToken(1n, 2));
  const again: Verdict = v.judge('router', null, { producerId: 1, producerEpoch: 2 });
  const hi: FencingToken | null = v.highest('router');
  console.log(verdict === 'OK', again === 'UNSTAMPED', hi?.toString(), v.closed);
  v.close();
  for await (const ev of await client.watch('router')) {
    const em: Buffer | null = ev.metadata;
    console.log(em);
    break;
  }

  const member: GroupMember = client.joinGroup('dispatch', 16, 'node-1', { weight: 2, eligible: true });
  member.on('assigned', (e: GroupEvent) => {
    const gk: GroupEventKindName = e.kind;
    if (e.leadership) void e.leadership.produce(`commands-${e.shard}`, 'x');
    console.log(gk, e.role, e.token.toString(), e.deadline + 1n);
  });
  member.on('stopped', (err) => console.log(err?.codeName));
  for await (const e of member) {
    console.log(e.kind === 'REVOKED' ? e.error?.codeName : e.shard);
    break;
  }
  const held: number[] = member.held();
  member.setWeight(3);
  member.setEligible(false);
  console.log(held, member.shardRole(0), member.shards);
  // @ts-expect-error: group kinds are UPPER_SNAKE too
  const gkLower: GroupEventKindName = 'assigned';
  console.log(gkLower);
  await member.leave({ timeoutMs: 30000 });
  await member.close();
  const sem: GroupMember = client.joinSemaphore('locks', 3, 'node-1');
  await sem.close();

  const set: ElectorSet = client.electorSet('node-1', { recampaign: true });
  set.add('tenant-1');
  set.add(Buffer.from('tenant-2'));
  set.on('event', (e: RoleEvent) => console.log(e.role, e.kind, e.term));
  for await (const e of set) {
    const tk: TermEventKindName = e.kind;
    const why: StopReasonName = e.reason;
    if (e.leadership) void e.leadership.produce(`commands-${e.role}`, 'x');
    console.log(tk, why, e.token.toString(), e.holder, e.deadline + 1n, e.error?.codeName);
    break;
  }
  const es: ElectorStateName = set.state('tenant-1');
  console.log(es, set.size, set.heldCount, set.member, set.closed);
  await set.remove('tenant-2', { timeoutMs: 30000 });
  // @ts-expect-error: a role is a Name
  set.add(3);
  await set.close();

  await leadership.resign();
  console.log(leadership.state === 'RESIGNED');
  const st: LeadershipStateName = leadership.state;
  // @ts-expect-error: states are UPPER_SNAKE, as in C
  const lower: LeadershipStateName = 'active';
  // @ts-expect-error: so are watch kinds
  const kindLower: WatchEventKindName = 'holder_changed';
  // @ts-expect-error: and verdicts
  const verdictLower: Verdict = 'ok';
  console.log(st, lower, kindLower, verdictLower);
  await client.close();

  const p: number = rolePartition('controller', 16);
  const h: number = murmur2(Buffer.from('x'));
  const bytes = encodeLease({ member: 'node-1', token: new FencingToken(4242n, 7), grantedAt: 1n, deadline: 2 });
  const lease = decodeLease(bytes);
  console.log(p, h, lease.token.toString(), isTombstone(null), validateRole('r').length);
  try {
    decodeLease(Buffer.alloc(0));
  } catch (e) {
    if (e instanceof DecodeError) {
      const cat: DataCategory = e.category;
      console.log(cat === 'truncated');
    }
    if (e instanceof KrabkaError) {
      const n: ErrorCodeName | string = e.codeName;
      console.log(n, ErrorCode.TRUNCATED === 10);
    }
  }
}

void main;
