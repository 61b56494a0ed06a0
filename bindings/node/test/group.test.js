'use strict';
// Role groups (client.joinGroup, GroupMember) on real brokers:
// $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1, both
// required (`make test` sets them); argument checks need no broker. Every
// wait is bounded (within()/until(): bounds, not timing checks).
//
// Per cluster, one group of 16 shards, three members: a and b in this
// process, c a child process (examples/group/member.js) that can be killed:
//   balanced 5/5/6, every shard held once, and what a's and b's events
//   say (assigned minus revoked) is what held() answers; b leaves: only b's
//   shards move (a and c keep theirs), 8/8 after, b's iteration ends; c is
//   SIGKILLed: a takes its shards after their leases ran out and keeps its
//   own; a blind successor (a client on another coordination topic, which
//   a's view never reads) mints one of a's shards: a's next write under
//   that shard's leadership is refused (FENCED by the broker, or
//   LEASE_EXPIRED when a renewal raced the mint and ended the term first),
//   the member reports the shard revoked, and the command topic holds a's
//   record from before and none from after.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const k = require('..');
const { Client, GroupMember, KrabkaError, ErrorCode } = k;

const repo = path.resolve(__dirname, '..', '..', '..');
const SHARDS = 16;
const WAIT = 90_000;
const unique = (what) => `node-group-${what}-${process.pid}-${Date.now().toString(36)}`;
const conf = (bootstrap, id, extra = {}) => ({
  'bootstrap.servers': bootstrap,
  'client.id': id,
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
  ...extra,
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function bootstrapOf(env) {
  const b = process.env[env];
  assert.ok(b, `${env} is not set: the group tests need the brokers of \`make test\` (tests/kafka/with-clusters.sh)`);
  return b;
}

async function until(pred, what, state = () => '') {
  const end = Date.now() + WAIT;
  while (!pred()) {
    if (Date.now() > end) assert.fail(`${what}: not within ${WAIT} ms ${JSON.stringify(state())}`);
    await sleep(100);
  }
}

test('joinGroup checks its arguments, naming each', async () => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'request.timeout.ms': 2000, 'krabka.lease.ms': 3000, 'krabka.renew.interval.ms': 1000 });
  try {
    assert.throws(() => c.joinGroup(1, 4, 'm'), { name: 'TypeError', message: /group/ });
    assert.throws(() => c.joinGroup('g', '4', 'm'), { name: 'TypeError', message: /shards/ });
    assert.throws(() => c.joinGroup('g', 1.5, 'm'), { name: 'RangeError', message: /shards/ });
    assert.throws(() => c.joinGroup('g', 2 ** 40, 'm'), { name: 'RangeError', message: /shards/ });
    assert.throws(() => c.joinGroup('g', 4, null), { name: 'TypeError', message: /member/ });
    assert.throws(() => c.joinGroup('g', 4, 'm', { weight: '2' }), { name: 'TypeError', message: /weight/ });
    assert.throws(() => c.joinGroup('g', 4, 'm', { eligible: 1 }), { name: 'TypeError', message: /eligible/ });
    assert.throws(() => c.joinGroup('g', 4, 'm', { bogus: 1 }), { name: 'TypeError', message: /bogus/ });
    assert.throws(() => c.joinSemaphore('s', '2', 'm'), { name: 'TypeError', message: /slots/ });
    for (const n of [0, -1, k.GROUP_MAX_SHARDS + 1]) {
      assert.throws(() => c.joinGroup('g', n, 'm'), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_ARG && e.message.includes(`count ${n} out of range`));
      assert.throws(() => c.joinSemaphore('s', n, 'm'), (e) => e instanceof KrabkaError && e.message.includes(`slots count ${n}`));
    }
    for (const w of [0, -3]) {
      assert.throws(() => c.joinGroup('g', 4, 'm', { weight: w }), (e) => e instanceof KrabkaError && e.message.includes(`weight ${w}`));
    }
    assert.throws(() => c.joinGroup(Buffer.from([0x67, 0xff]), 4, 'm'), (e) => e instanceof KrabkaError && /UTF-8/.test(e.message));
    assert.throws(() => c.joinGroup('g'.repeat(245), 4, 'm'), (e) => e instanceof KrabkaError && /too long/.test(e.message));
    const m = c.joinGroup(unique('misuse'), 4, 'm', { eligible: false });
    assert.ok(m instanceof GroupMember);
    assert.throws(() => m.setEligible('yes'), { name: 'TypeError', message: /eligible/ });
    assert.throws(() => m.setWeight(null), { name: 'TypeError', message: /weight/ });
    assert.throws(() => m.setWeight(0), (e) => e instanceof KrabkaError && /weight 0/.test(e.message));
    assert.throws(() => m.shardRole(4), { name: 'RangeError', message: /shard 4/ });
    assert.match(m.shardRole(3), /\/shard\/3$/);
    assert.deepEqual(m.held(), []);
    await m.close();
    assert.deepEqual(await m.next(), { done: true, value: undefined });
    assert.throws(() => m.setWeight(2), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
  } finally {
    await c.close();
  }
});

/** A GroupMember of this process and what its events said. */
function track(member) {
  const t = { m: member, owned: new Set(), lead: new Map(), revoked: new Map(), errors: [] };
  member.on('assigned', (e) => {
    if (t.owned.has(e.shard)) t.errors.push(`assigned ${e.shard} twice`);
    if (!e.leadership || e.leadership.token.compare(e.token) !== 0) t.errors.push(`assigned ${e.shard}: not the event's term`);
    t.owned.add(e.shard);
    t.lead.set(e.shard, e.leadership);
  });
  member.on('revoked', (e) => {
    if (!t.owned.has(e.shard)) t.errors.push(`revoked ${e.shard} it did not hold`);
    if (!e.error) t.errors.push(`revoked ${e.shard} without a reason`);
    t.owned.delete(e.shard);
    if (!t.revoked.has(e.shard)) t.revoked.set(e.shard, []);
    t.revoked.get(e.shard).push(e.error);
  });
  t.held = () => new Set(member.held());
  t.agrees = () => {
    const h = t.held();
    return h.size === t.owned.size && [...h].every((s) => t.owned.has(s));
  };
  return t;
}

/** examples/group/member.js in a process of its own. */
function child(bootstrap, group, name) {
  const p = spawn(process.execPath, [path.join(repo, 'examples', 'group', 'member.js'), bootstrap, group, String(SHARDS), name], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: process.env,
  });
  const c = { p, owned: new Set(), lines: [] };
  readline.createInterface({ input: p.stdout }).on('line', (line) => {
    let ev;
    try {
      ev = JSON.parse(line);
    } catch {
      return;
    }
    c.lines.push(ev);
    if (ev.held) c.owned = new Set(ev.held);
  });
  c.held = () => new Set(c.owned);
  c.exited = new Promise((r) => p.on('exit', r));
  return c;
}

function partitionOk(sets) {
  const all = new Set();
  let total = 0;
  for (const s of sets) {
    total += s.size;
    for (const x of s) all.add(x);
  }
  return total === SHARDS && all.size === SHARDS;
}

const subset = (a, b) => [...a].every((x) => b.has(x));
const sizes = (...sets) => sets.map((s) => s.size).sort((x, y) => x - y);

for (const [label, env] of [['tv2', 'KRABKA_BOOTSTRAP'], ['tv1', 'KRABKA_BOOTSTRAP_TV1']]) {
  test(`a group of 16 shards on ${label}: balance, leave, kill, the broker fences a revoked shard`, async () => {
    const bootstrap = bootstrapOf(env);
    const group = unique(label);
    const topic = unique('cmd');
    execFileSync('go', ['run', './tests/kafka/cmd/ktopic', bootstrap, topic, '1'], { cwd: repo, stdio: 'inherit' });
    const ca = new Client(conf(bootstrap, 'a'));
    const cb = new Client(conf(bootstrap, 'b'));
    let intruder = null;
    let c = null;
    const a = track(ca.joinGroup(group, SHARDS, 'a'));
    const b = track(cb.joinGroup(group, SHARDS, 'b'));
    try {
      c = child(bootstrap, group, 'c');
      await until(() => partitionOk([a.held(), b.held(), c.held()]) && sizes(a.held(), b.held(), c.held()).join() === '5,5,6' && a.agrees() && b.agrees(),
        'balance 5/5/6', () => [[...a.held()], [...b.held()], [...c.held()]]);

      // b leaves: only its shards move
      b.revoked.clear();
      const hadB = new Set(b.owned);
      const beforeA = a.held();
      const beforeC = c.held();
      const rest = [];
      const drained = (async () => {
        for await (const e of b.m) rest.push(e);
      })();
      await b.m.leave({ timeoutMs: 60000 });
      await drained; // the iteration ends after the member stopped
      assert.equal(b.m.error, null);
      assert.deepEqual([...b.revoked.keys()].sort(), [...hadB].sort());
      assert.equal(b.owned.size, 0);
      await b.m.close();
      await until(() => partitionOk([a.held(), c.held()]) && a.held().size === 8 && c.held().size === 8 && a.agrees(),
        '8/8 after b left', () => [[...a.held()], [...c.held()]]);
      assert.ok(subset(beforeA, a.held()), 'a lost shards when b left');
      assert.ok(subset(beforeC, c.held()), 'c lost shards when b left');

      // c is killed: a takes its shards after their deadlines
      const before = a.held();
      c.p.kill('SIGKILL');
      await c.exited;
      await until(() => a.held().size === SHARDS && a.agrees(), 'a holding all 16 after c was killed', () => [...a.held()]);
      assert.ok(subset(before, a.held()));

      // a blind successor mints one of a's shards: the broker refuses a's next write
      // (The intruder's client warms up first, creating its coordination
      // topic, so that its mint and a's next write are close together: a
      // renewal of a in between would end the leadership first.)
      intruder = new Client(conf(bootstrap, 'intruder', { 'krabka.topic': unique('blind') }));
      await (await intruder.acquire(unique('warm'), 'intruder', { timeoutMs: 60000 })).resign();
      const s = Math.min(...a.held());
      const lead = a.lead.get(s);
      await lead.produce(topic, 'a-before');
      const il = await intruder.acquire(a.m.shardRole(s), 'intruder', { timeoutMs: 60000 });
      assert.ok(il.token.compare(lead.token) > 0);
      // The broker refuses the write (FENCED); when a renewal of a raced
      // the mint first, that renewal ended the leadership (LEASE_EXPIRED:
      // REQUEST-TO-CORE.md 6) and the write is refused before it is sent.
      // Either way nothing of a's lands after the mint (read back below).
      const refused = [ErrorCode.FENCED, ErrorCode.LEASE_EXPIRED];
      let how = null;
      await assert.rejects(lead.produce(topic, 'a-after'), (e) => {
        how = e.codeName;
        return e instanceof KrabkaError && refused.includes(e.code);
      });
      console.log(`group ${label}: a's write under shard ${s} after the blind mint: ${how}`);
      await until(() => (a.revoked.get(s) || []).some((e) => e && refused.includes(e.code)), `shard ${s} revoked (FENCED or LEASE_EXPIRED)`);
      const out = execFileSync('go', ['run', './tests/kafka/cmd/kread', bootstrap, topic], { cwd: repo, encoding: 'utf8' });
      const values = out.split('\n').filter(Boolean).map((l) => JSON.parse(l).value);
      assert.ok(values.includes('a-before') && !values.includes('a-after'), JSON.stringify(values));
      assert.deepEqual(a.errors, []);
      assert.deepEqual(b.errors, []);
    } finally {
      await a.m.close().catch(() => {});
      await b.m.close().catch(() => {});
      if (c && c.p.exitCode === null && c.p.signalCode === null) {
        c.p.kill('SIGKILL');
        await c.exited;
      }
      for (const cl of [ca, cb, intruder]) if (cl) await cl.close().catch(() => {});
    }
  });
}
