'use strict';
// Live tests on a real single-node Kafka at $KRABKA_BOOTSTRAP (set by `make
// test`; during development: tests/kafka/cluster.sh start, then export
// KRABKA_BOOTSTRAP=<the printed address>). Two members, short leases,
// unique role names: a failover in which the cluster fences the old leader.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const k = require('..');
const { Client, FencedError, LeaseExpiredError, KrabkaError, ErrorCode } = k;

const primary = process.env.KRABKA_BOOTSTRAP;
// The suite runs on the tv2 cluster ($KRABKA_BOOTSTRAP, required) and, when
// `make test` also started it, on a cluster formatted with
// transaction.version=1 ($KRABKA_BOOTSTRAP_TV1).
const clusters = [['tv2', primary]];
if (process.env.KRABKA_BOOTSTRAP_TV1) clusters.push(['tv1', process.env.KRABKA_BOOTSTRAP_TV1]);
const repo = path.resolve(__dirname, '..', '..', '..');
const unique = (what) => `node-${what}-${process.pid}-${Date.now().toString(36)}`;

const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};

function requireBroker() {
  assert.ok(
    primary,
    'KRABKA_BOOTSTRAP is not set: the live tests need a running single-node Kafka. Run them under `make test`, ' +
      'or start one with `tests/kafka/cluster.sh start` and export KRABKA_BOOTSTRAP=<address it prints>.',
  );
}

// The C API has no admin calls and the test brokers do not auto-create
// topics: a small Go helper creates the data topic for guarded writes.
let mktopic = null;
function createTopic(bootstrap, topic) {
  if (!mktopic) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-'));
    mktopic = path.join(dir, 'mktopic');
    execFileSync(process.env.GO || 'go', ['build', '-o', mktopic, './tests/kafka/cmd/ktopic'], { cwd: repo, stdio: 'inherit' });
  }
  execFileSync(mktopic, [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

for (const [label, bootstrap] of clusters) {
  const client = (id, extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, ...SHORT, ...extra });

  test(`[${label}] failover: the standby takes over once the holder stops renewing; the old leader can no longer write`, { timeout: 120_000 }, async () => {
    requireBroker();
    const role = unique('failover');
    const topic = unique('guarded');
    createTopic(bootstrap, topic);
    const c1 = client('node-live-1');
    const c2 = client('node-live-2');
    try {
      const l1 = await c1.acquire(role, 'node-1', { timeoutMs: 60_000 });
      const t1 = l1.token;
      assert.equal(l1.state, 'ACTIVE');
      assert.equal(l1.active, true);
      assert.equal(l1.role, role);
      assert.equal(l1.member, 'node-1');
      assert.ok(t1.supersedes(k.FencingToken.NO_EPOCH), `minted token ${t1} must rank above NO_EPOCH`);
      assert.equal(l1.lease.member, 'node-1');
      assert.ok(l1.lease.deadline > l1.lease.grantedAt);
      assert.equal(typeof l1.renewDue(), 'boolean');

      const w1 = await l1.produce(topic, 'command-1', { key: 'k', partition: 0 });
      assert.equal(w1.partition, 0);
      assert.equal(typeof w1.offset, 'bigint');
      assert.ok(w1.offset >= 0n);

      const s1 = await c1.describe(role, { timeoutMs: 30_000 });
      assert.equal(s1.holder, 'node-1');
      assert.equal(s1.current, true);
      assert.equal(s1.token.compare(t1), 0);
      assert.ok(Number.isInteger(s1.partition) && s1.partition >= 0);
      assert.deepEqual(s1.roster.map((e) => e.member), ['node-1']);

      // node-1 stops renewing (a hung leader). node-2 waits in acquire (on
      // the library's threads, completed through the event queue) while the
      // JS thread keeps running.
      let ticks = 0;
      const timer = setInterval(() => ticks++, 20);
      const started = Date.now();
      let l2;
      try {
        l2 = await c2.acquire(role, 'node-2', { timeoutMs: 60_000 });
      } finally {
        clearInterval(timer);
      }
      const waited = Date.now() - started;
      assert.ok(ticks >= 10, `the event loop must keep running while acquire waits (${ticks} ticks in ${waited} ms)`);

      const t2 = l2.token;
      assert.ok(t2.supersedes(t1), `new token ${t2} must supersede ${t1}`);

      // node-1 learns that it was superseded from its client's view of the
      // log (it may already be 'FENCED'), or from the broker's answer to its
      // late guarded write: either way the write rejects with FencedError.
      assert.ok(['ACTIVE', 'FENCED'].includes(l1.state), `node-1 is ${l1.state}`);
      await assert.rejects(l1.produce(topic, 'stale-command'), (e) => {
        assert.ok(e instanceof FencedError, `expected FencedError, got ${e && e.name}: ${e && e.message}`);
        assert.equal(e.code, ErrorCode.FENCED);
        assert.equal(e.fatal, true);
        return true;
      });
      assert.equal(l1.state, 'FENCED');

      const w2 = await l2.produce(topic, Buffer.from('command-2'), { partition: 0 });
      assert.ok(w2.offset > w1.offset);
      const batch = await l2.produceBatch([
        { topic, value: 'b1', partition: 0 },
        { topic, value: null, key: 'tomb', partition: 0 },
      ]);
      assert.equal(batch.length, 2);
      assert.ok(batch[1].offset > batch[0].offset);

      const s2 = await c2.describe(role, { timeoutMs: 30_000 });
      assert.equal(s2.holder, 'node-2');
      assert.equal(s2.current, true);
      assert.equal(s2.token.compare(t2), 0);

      await l2.resign({ timeoutMs: 30_000 });
      assert.equal(l2.state, 'RESIGNED');
      await l1.close();
      await l2.close();
      await l2.close(); // idempotent
      assert.throws(() => l2.token, (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_HANDLE);
      await assert.rejects(l2.renew(), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_HANDLE);
    } finally {
      await Promise.all([c1.close(), c2.close()]);
    }
  });

  test(`[${label}] takeover while the old leadership still believes it is live: its produce rejects with FencedError`, { timeout: 120_000 }, async () => {
    requireBroker();
    // A zombie: node-1's first incarnation keeps a live lease (renewed in the
    // background) while node-1 restarts on another client and acquires again.
    // The fresh acquire mints a new epoch at once, and only the cluster can
    // stop the zombie: the broker rejects its transactional write.
    const role = unique('fence');
    const topic = unique('fenced');
    createTopic(bootstrap, topic);
    const zombieClient = client('node-zombie', { 'krabka.renew.background': true });
    const restarted = client('node-restarted');
    const standby = client('node-standby');
    try {
      const zombie = await zombieClient.acquire(role, 'node-1', { timeoutMs: 60_000 });
      const t1 = zombie.token;
      // A second member waits as standby; it holds no lease and cannot fence.
      const standbyTry = await standby.tryAcquire(role, 'node-2', { timeoutMs: 30_000 });
      assert.equal(standbyTry.leadership, null);

      const fresh = await restarted.acquire(role, 'node-1', { timeoutMs: 60_000 });
      const t2 = fresh.token;
      assert.ok(t2.supersedes(t1), `new token ${t2} must supersede ${t1}`);
      assert.ok(zombie.lease.deadline > BigInt(Date.now()), 'the zombie still believes its lease is live');

      await assert.rejects(zombie.produce(topic, 'stale-command', { partition: 0 }), (e) => {
        assert.ok(e instanceof FencedError, `expected FencedError, got ${e && e.name}: ${e && e.message}`);
        assert.equal(e.code, ErrorCode.FENCED);
        assert.equal(e.codeName, 'FENCED');
        assert.equal(e.name, 'FencedError');
        assert.equal(e.fatal, true);
        assert.equal(e.retriable, false);
        return true;
      });
      assert.equal(zombie.state, 'FENCED');
      assert.equal(zombie.active, false);
      await assert.rejects(zombie.renew(), (e) => e instanceof KrabkaError && e.fatal);
      const w = await fresh.produce(topic, 'command', { partition: 0 });
      assert.equal(typeof w.offset, 'bigint');
      const s = await standby.describe(role, { timeoutMs: 30_000 });
      assert.equal(s.holder, 'node-1');
      assert.equal(s.token.compare(t2), 0);
      assert.equal(s.current, true);
      await fresh.resign();
    } finally {
      await Promise.all([zombieClient.close(), restarted.close(), standby.close()]);
    }
  });

  test(`[${label}] many pending produce Promises on one leadership: all resolve, each writer's commands in its order`, { timeout: 120_000 }, async () => {
    requireBroker();
    // The library commits concurrent guarded writes together; from Node
    // every pending produce() is in flight on the event queue.
    const topic = unique('group');
    createTopic(bootstrap, topic);
    const c = client('node-group', { 'request.timeout.ms': 30_000 });
    try {
      const lead = await c.acquire(unique('group'), 'node-1', { timeoutMs: 60_000 });
      const writers = 64;
      const each = 5;
      const writer = async (w) => {
        const out = [];
        for (let i = 0; i < each; i++) out.push(await lead.produce(topic, `writer ${w} command ${i}`, { partition: 0 }));
        return out;
      };
      const results = await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
      const seen = new Set();
      results.forEach((res, w) => {
        assert.equal(res.length, each);
        for (let i = 0; i < res.length; i++) {
          assert.equal(res[i].partition, 0);
          assert.ok(!seen.has(res[i].offset), `two commands at offset ${res[i].offset}`);
          seen.add(res[i].offset);
          if (i > 0) assert.ok(res[i].offset > res[i - 1].offset, `writer ${w}: ${res[i].offset} after ${res[i - 1].offset}`);
        }
      });
      assert.equal(lead.state, 'ACTIVE');
      await lead.resign();
    } finally {
      await c.close();
    }
  });

  test(`[${label}] tryAcquire against a live holder resolves { leadership: null, retryAt }`, { timeout: 120_000 }, async () => {
    requireBroker();
    const role = unique('try');
    const c1 = client('node-try-1', { 'krabka.renew.background': true });
    const c2 = client('node-try-2');
    try {
      const first = await c1.tryAcquire(role, 'node-1', { timeoutMs: 30_000 });
      assert.ok(first.leadership, 'the only member wins at once');
      assert.equal(first.retryAt, null);
      const second = await c2.tryAcquire(role, 'node-2', { timeoutMs: 30_000 });
      assert.equal(second.leadership, null);
      assert.equal(typeof second.retryAt, 'bigint');
      assert.ok(second.retryAt > BigInt(Date.now() - 1000), `retryAt ${second.retryAt} is an epoch-ms instant`);

      // A bounded acquire behind a renewing holder times out (retriable).
      await assert.rejects(c2.acquire(role, 'node-2', { timeoutMs: 1500 }), (e) => e instanceof KrabkaError && e.code === ErrorCode.TIMEOUT && e.retriable);
      await first.leadership.resign();
    } finally {
      await Promise.all([c1.close(), c2.close()]);
    }
  });

  test(`[${label}] closing the client ends its leadership (state closed) and rejects a pending acquire`, { timeout: 120_000 }, async () => {
    requireBroker();
    const role = unique('close');
    const c1 = client('node-close-1', { 'krabka.renew.background': true });
    const c2 = client('node-close-2');
    try {
      const l1 = await c1.acquire(role, 'node-1', { timeoutMs: 60_000 });
      // No limit: waits behind node-1. The rejection check is attached at once.
      const pending = assert.rejects(c2.acquire(role, 'node-2'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
      await new Promise((r) => setTimeout(r, 500));
      await c2.close();
      await pending;
      await c1.close();
      assert.equal(l1.state, 'CLOSED');
      await assert.rejects(l1.produce('any-topic', 'x'), (e) => e instanceof KrabkaError && e.fatal);
      await l1.close();
    } finally {
      await Promise.all([c1.close(), c2.close()]);
    }
  });

  test(`[${label}] leave and close with leave remove members; the holder stays registered`, { timeout: 120_000 }, async () => {
    requireBroker();
    const role = unique('leave');
    const holder = client('node-leave-h');
    const waiter = client('node-leave-w');
    const gone = client('node-leave-g');
    try {
      const l = await holder.acquire(role, 'holder', { timeoutMs: 60_000 });
      assert.equal((await waiter.tryAcquire(role, 'waiter', { timeoutMs: 30_000 })).leadership, null);
      assert.equal((await gone.tryAcquire(role, 'gone', { timeoutMs: 30_000 })).leadership, null);
      let st = await holder.describe(role);
      assert.deepEqual(st.roster.map((e) => e.member), ['holder', 'waiter', 'gone']);
      assert.equal(st.removed, 0);
      await holder.leave(role, 'gone');
      st = await holder.describe(role);
      assert.deepEqual(st.roster.map((e) => e.member), ['holder', 'waiter']);
      assert.equal(st.removed, 1);
      await waiter.close(); // krabka.leave.on.close: 'waiter' leaves
      st = await holder.describe(role);
      assert.deepEqual(st.roster.map((e) => e.member), ['holder']);
      assert.equal(st.removed, 2);
      assert.equal(st.holder, 'holder');
      assert.equal(l.state, 'ACTIVE');
      await assert.rejects(holder.leave(role, ''), (e) => e instanceof Error && /empty_member/.test(`${e.category || ''} ${e.message}`));
    } finally {
      await Promise.all([holder.close(), waiter.close(), gone.close()]);
    }
  });
}
