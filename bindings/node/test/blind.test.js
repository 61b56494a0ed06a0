'use strict';
// A blind deposed holder: the BROKER refuses its writes, through the
// library's own write path (produce, produceBatch, renew, resign).
//
// How the successor mints unseen: client A follows coordination topic T1
// (krabka.topic) and client B follows another coordination topic T2. The
// role name is the same, and the role (no krabka.role.prefix here) is the
// transactional.id, so B's acquire runs InitProducerId for the very
// transactional.id A writes through and mints a newer epoch of it at the one
// transaction coordinator, while B's lease and registration land on T2,
// which A's view never reads. Why: in the other Node tests the successor
// writes its lease to the topic the deposed holder follows, and the
// library's live view ends the holder (FENCED, "the log shows a lease of
// ...") before it writes anything; here the view learns nothing, A still
// believes it holds (state 'ACTIVE'), and only the broker's answer to its
// transactional write, PRODUCER_FENCED (90) or INVALID_PRODUCER_EPOCH (47),
// can stop it. That answer must reach the caller as the library's FENCED
// error naming the broker's code, and none of A's late writes may be in the
// command topic C afterwards.
//
// On a cluster formatted with transaction.version 2 ($KRABKA_BOOTSTRAP) and
// 1 ($KRABKA_BOOTSTRAP_TV1); both fail, never skip, when their variable is
// missing. A fresh A/B pair per operation: once A's write was refused its
// leadership has ended, and a second operation would be answered locally.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, FencedError, ErrorCode } = require('..');

const repo = path.resolve(__dirname, '..', '..', '..');
const CLUSTERS = [
  ['tv2', 'KRABKA_BOOTSTRAP'],
  ['tv1', 'KRABKA_BOOTSTRAP_TV1'],
];
const OPS = ['produce', 'produceBatch', 'renew', 'resign'];

// How the library words a FENCED it decides locally: the live view's
// (core/coord/leadership.go, watchView) and a second acquire of the role by
// the same client (core/coord/client.go). The refusal here must be neither.
const VIEW_WORDING = /the log shows a lease of/;
const SAME_CLIENT_WORDING = /was acquired again by this client/;
const BROKER_CODE = /\b(PRODUCER_FENCED|INVALID_PRODUCER_EPOCH)\b/;

// Long leases: A never renews on its own (krabka.renew.background is off by
// default) and must still be inside its lease when it writes, so nothing but
// the broker can end it.
const LEASES = {
  'krabka.lease.ms': 60000,
  'krabka.renew.interval.ms': 20000,
  'krabka.poll.interval.ms': 200,
  'krabka.topic.partitions': 1,
};

// ktopic (create a topic) and kread (read a topic's committed records with
// their producer id and epoch), built once.
let tools = null;
function tool(name) {
  if (!tools) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-blind-'));
    tools = {};
    for (const t of ['ktopic', 'kread']) {
      tools[t] = path.join(dir, t);
      execFileSync(process.env.GO || 'go', ['build', '-o', tools[t], `./tests/kafka/cmd/${t}`], { cwd: repo, stdio: 'inherit' });
    }
  }
  return tools[name];
}

function readTopic(bootstrap, topic) {
  const out = execFileSync(tool('kread'), [bootstrap, topic], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

// A's operation, writing (for the writes) values old-after-<op>...
function deposedOp(a, op, topic) {
  switch (op) {
    case 'produce':
      return { values: [`old-after-${op}`], call: a.produce(topic, `old-after-${op}`, { partition: 0, timeoutMs: 30_000 }) };
    case 'produceBatch': {
      const values = [`old-after-${op}-1`, `old-after-${op}-2`];
      return { values, call: a.produceBatch(values.map((value) => ({ topic, value, partition: 0 })), { timeoutMs: 30_000 }) };
    }
    case 'renew':
      return { values: [], call: a.renew({ timeoutMs: 30_000 }) };
    case 'resign':
      return { values: [], call: a.resign({ timeoutMs: 30_000 }) };
  }
  throw new Error(`unknown op ${op}`);
}

const tokenText = (r) => `${r.producer_id}:${r.producer_epoch}`;

for (const [label, variable] of CLUSTERS) {
  test(`[${label}] the broker refuses a deposed holder's produce, produceBatch, renew and resign`, { timeout: 300_000 }, async (t) => {
    const bootstrap = process.env[variable];
    assert.ok(bootstrap, `${variable} is not set: this test needs a running Kafka (${label}); run it under \`make test\` or export the address of one`);
    const run = `${process.pid}-${Date.now().toString(36)}`;
    const commands = `node-blind-cmd-${label}-${run}`;
    execFileSync(tool('ktopic'), [bootstrap, commands, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
    const client = (id, coordTopic) =>
      new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, 'krabka.topic': coordTopic, ...LEASES });
    const t1 = `node-blind-t1-${label}-${run}`;
    const t2 = `node-blind-t2-${label}-${run}`;

    const expected = { old: [], refused: [], fresh: new Map() }; // fresh: value -> B's token text at the write
    const oldTokens = new Map(); // value -> A's token text

    for (const op of OPS) {
      await t.test(op, async () => {
        const role = `node-blind-${label}-${op}-${run}`;
        const A = client(`blind-old-${op}`, t1);
        const B = client(`blind-new-${op}`, t2);
        try {
          const a = await A.acquire(role, 'old', { timeoutMs: 60_000 });
          await a.produce(commands, `old-before-${op}`, { partition: 0, timeoutMs: 30_000 });
          expected.old.push(`old-before-${op}`);
          oldTokens.set(`old-before-${op}`, String(a.token));

          const b = await B.acquire(role, 'new', { timeoutMs: 60_000 });
          assert.equal(b.token.producerId, a.token.producerId, 'one transactional.id, so one producer id');
          assert.ok(b.token.supersedes(a.token), `B's token ${b.token} supersedes A's ${a.token}`);
          await b.produce(commands, `new-${op}-1`, { partition: 0, timeoutMs: 30_000 });
          expected.fresh.set(`new-${op}-1`, String(b.token));

          // A's view follows T1, where nothing happened: a few poll
          // intervals later A still believes it holds.
          await new Promise((r) => setTimeout(r, 1000));
          assert.equal(a.state, 'ACTIVE', `A must still believe it holds before its ${op}`);

          const { values, call } = deposedOp(a, op, commands);
          expected.refused.push(...values);
          const err = await call.then(
            (r) => assert.fail(`A's ${op} was accepted: ${JSON.stringify(r, (k, v) => (typeof v === 'bigint' ? String(v) : v))}`),
            (e) => e,
          );
          assert.ok(err instanceof FencedError, `A's ${op}: expected a FencedError, got ${err && err.stack}`);
          assert.equal(err.code, ErrorCode.FENCED);
          assert.equal(err.codeName, 'FENCED');
          assert.match(err.message, BROKER_CODE, `A's ${op} must be refused by the broker: ${err.message}`);
          assert.doesNotMatch(err.message, VIEW_WORDING, `A's ${op} was answered by the view: ${err.message}`);
          assert.doesNotMatch(err.message, SAME_CLIENT_WORDING, err.message);
          // Every refusal, a resign's included, ends A fenced with the
          // broker's error.
          const end = await a.ended;
          assert.equal(end.state, 'FENCED', `A's state after the refused ${op}`);
          assert.equal(a.state, 'FENCED');
          assert.ok(end.error instanceof FencedError, `the end's error: ${end.error && end.error.stack}`);
          assert.match(end.reason, BROKER_CODE, `the end's reason names the broker's code: ${end.reason}`);

          await b.produce(commands, `new-${op}-2`, { partition: 0, timeoutMs: 30_000 });
          expected.fresh.set(`new-${op}-2`, String(b.token));
          assert.equal(b.state, 'ACTIVE');
          await b.resign({ timeoutMs: 30_000 });
        } finally {
          await Promise.all([A.close(), B.close()]);
        }
      });
    }

    const records = readTopic(bootstrap, commands);
    const byValue = new Map();
    for (const r of records) {
      assert.ok(!byValue.has(r.value), `value ${r.value} written twice: ${JSON.stringify(records)}`);
      byValue.set(r.value, r);
    }
    const listing = records.map((r) => `${r.offset} ${r.value} ${tokenText(r)}`).join('\n');
    for (const v of expected.refused) assert.ok(!byValue.has(v), `the refused write ${v} is in ${commands}:\n${listing}`);
    assert.equal(
      records.filter((r) => r.value.startsWith('old-after-')).length,
      0,
      `no write of A after B took over may be committed:\n${listing}`,
    );
    for (const v of expected.old) {
      assert.ok(byValue.has(v), `A's write ${v} before B took over is missing:\n${listing}`);
      assert.equal(tokenText(byValue.get(v)), oldTokens.get(v), `${v} carries A's token`);
    }
    for (const [v, token] of expected.fresh) {
      assert.ok(byValue.has(v), `B's write ${v} is missing:\n${listing}`);
      assert.equal(tokenText(byValue.get(v)), token, `${v} carries B's token`);
    }
    assert.equal(records.length, expected.old.length + expected.fresh.size, `exactly A's earlier and B's writes:\n${listing}`);
  });
}

// leadership.confirm() asks the transaction coordinator, not the view: true
// for the live term (after a renewal and a write too), false for the blind
// holder once B minted while A still reads ACTIVE (confirm ends nothing),
// true for B; once the broker refused A, it rejects with FencedError.
for (const [label, variable] of CLUSTERS) {
  test(`[${label}] confirm is true for the live term and false after a blind successor's mint`, { timeout: 300_000 }, async () => {
    const bootstrap = process.env[variable];
    assert.ok(bootstrap, `${variable} is not set: this test needs a running Kafka (${label}); run it under \`make test\` or export the address of one`);
    const run = `${process.pid}-${Date.now().toString(36)}`;
    const commands = `node-blind-confirm-cmd-${label}-${run}`;
    execFileSync(tool('ktopic'), [bootstrap, commands, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
    const client = (id, coordTopic) =>
      new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, 'krabka.topic': coordTopic, ...LEASES });
    const role = `node-blind-confirm-${label}-${run}`;
    const A = client('blind-confirm-old', `node-blind-confirm-t1-${label}-${run}`);
    const B = client('blind-confirm-new', `node-blind-confirm-t2-${label}-${run}`);
    try {
      const a = await A.acquire(role, 'old', { timeoutMs: 60_000 });
      assert.equal(await a.confirm({ timeoutMs: 30_000 }), true, 'the live term');
      await a.renew({ timeoutMs: 30_000 });
      await a.produce(commands, 'old-confirmed', { partition: 0, timeoutMs: 30_000 });
      assert.equal(await a.confirm({ timeoutMs: 30_000 }), true, 'the live term after a renewal and a write');

      const b = await B.acquire(role, 'new', { timeoutMs: 60_000 });
      assert.ok(b.token.supersedes(a.token), `B's token ${b.token} supersedes A's ${a.token}`);
      assert.equal(await a.confirm({ timeoutMs: 30_000 }), false, 'the blind holder');
      assert.equal(a.state, 'ACTIVE', 'a false confirm ends nothing');
      assert.equal(await b.confirm({ timeoutMs: 30_000 }), true, 'the successor');

      const err = await a.produce(commands, 'old-after-confirm', { partition: 0, timeoutMs: 30_000 }).then(
        () => assert.fail("A's write after B's mint was accepted"),
        (e) => e,
      );
      assert.ok(err instanceof FencedError && BROKER_CODE.test(err.message), `A's write: ${err && err.stack}`);
      const again = await a.confirm({ timeoutMs: 30_000 }).then(
        (v) => assert.fail(`confirm of a fenced leadership resolved ${v}`),
        (e) => e,
      );
      assert.ok(again instanceof FencedError, `confirm of a fenced leadership: ${again && again.stack}`);
      await b.resign({ timeoutMs: 30_000 });
    } finally {
      await Promise.all([A.close(), B.close()]);
    }
    const values = readTopic(bootstrap, commands).map((r) => r.value);
    assert.deepEqual(values, ['old-confirmed'], 'only the live term\'s write is in the log');
  });
}
