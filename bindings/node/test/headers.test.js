'use strict';
// Record headers (docs/PROTOCOL.md section 11) through the Node binding, on
// the broker at $KRABKA_BOOTSTRAP: term and member metadata through
// acquire, tryAcquire, describe, the roster, setMetadata and a watch; the
// 4096-byte limit and wrong types refused before anything is written; a
// resign to a named successor (the rank-1 standby wins while the rank-0 one
// keeps waiting and stays registered); guarded writes with headers, read
// back with kread (user headers and krabka.token = the leadership's token);
// the Verifier's verdicts and misuse.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const k = require('..');
const { Client, Verifier, FencingToken, KrabkaError, ErrorCode, MAX_METADATA_BYTES } = k;

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const repo = path.resolve(__dirname, '..', '..', '..');
const unique = (what) => `node-hdr-${what}-${process.pid}-${Date.now().toString(36)}`;

// Long leases and a 60 s stagger: nobody renews or challenges by the clock
// during a test, so every record seen is one the test caused, and a rank-0
// standby cannot win a handoff that names another member.
const LONG = {
  'krabka.lease.ms': 60000,
  'krabka.renew.interval.ms': 20000,
  'krabka.challenge.stagger.ms': 60000,
  'krabka.poll.interval.ms': 100,
};

function requireBroker() {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: these tests need the single-node tv2 broker (make test sets it).');
}

const client = (id, extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, ...LONG, ...extra });

// ktopic (create a data topic) and kread (its committed records with
// headers and producer id/epoch), built once.
let tools = null;
function tool(name) {
  if (!tools) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-headers-'));
    tools = {};
    for (const t of ['ktopic', 'kread']) {
      tools[t] = path.join(dir, t);
      execFileSync(process.env.GO || 'go', ['build', '-o', tools[t], `./tests/kafka/cmd/${t}`], { cwd: repo, stdio: 'inherit' });
    }
  }
  return tools[name];
}
const createTopic = (topic) => execFileSync(tool('ktopic'), [bootstrap, topic, '1'], { stdio: ['ignore', 'ignore', 'inherit'] });
const readTopic = (topic) =>
  execFileSync(tool('kread'), [bootstrap, topic], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));

/** The next event of w that satisfies pred, within ms. */
async function until(w, pred, ms = 20_000) {
  const signal = AbortSignal.timeout(ms);
  for (;;) {
    const { done, value } = await w.next({ signal });
    assert.equal(done, false, 'the watch ended');
    if (pred(value)) return value;
  }
}

async function rosterOf(c, role) {
  return (await c.describe(role, { timeoutMs: 30_000 })).roster;
}

async function waitRegistered(c, role, member) {
  for (let i = 0; i < 400; i++) {
    if ((await rosterOf(c, role)).some((e) => e.member === member)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${member} never registered in ${role}`);
}

const isInvalidArg = (re) => (e) => {
  assert.ok(e instanceof KrabkaError, `expected KrabkaError, got ${e && e.name}: ${e && e.message}`);
  assert.equal(e.code, ErrorCode.INVALID_ARG, `${e.codeName}: ${e.message}`);
  assert.equal(e.codeName, 'INVALID_ARG');
  if (re) assert.match(e.message, re);
  return true;
};

// Binary metadata: NUL and 0xff bytes must come back unchanged.
const TERM1 = Buffer.from([0x61, 0x00, 0xff, 0x3a, 0x31]);
const MEMBER_A = Buffer.from('member-a\u0000\u00e9', 'utf8');
const MEMBER_B = new Uint8Array([0x62, 0x00, 0x01]);

test('the limit the binding checks is the C header KRABKA_MAX_METADATA_BYTES', () => {
  const h = fs.readFileSync(path.join(repo, 'include', 'krabka_coord.h'), 'utf8');
  const m = /#define KRABKA_MAX_METADATA_BYTES (\d+)/.exec(h);
  assert.ok(m, 'include/krabka_coord.h defines KRABKA_MAX_METADATA_BYTES');
  assert.equal(MAX_METADATA_BYTES, Number(m[1]));
});

test('metadata round trip: acquire, tryAcquire, describe, roster, setMetadata and a watch', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('meta');
  const ca = client('node-hdr-meta-a');
  const cb = client('node-hdr-meta-b');
  const cw = client('node-hdr-meta-w');
  try {
    const w = await cw.watch(role, { timeoutMs: 30_000 }); // no renewals flag
    const a = await ca.acquire(role, 'a', { metadata: TERM1, memberMetadata: MEMBER_A, timeoutMs: 30_000 });
    assert.ok(Buffer.isBuffer(a.metadata), 'leadership.metadata is a Buffer');
    assert.deepEqual(a.metadata, TERM1);
    assert.notEqual(a.metadata, a.metadata, 'each read is a copy of its own');

    const held = await until(w, (e) => e.kind === 'HOLDER_CHANGED' && e.holder === 'a');
    assert.ok(Buffer.isBuffer(held.metadata));
    assert.deepEqual(held.metadata, TERM1);
    assert.equal(held.token.compare(a.token), 0);

    // A standby through tryAcquire registers its own metadata.
    const tb = await cb.tryAcquire(role, 'b', { memberMetadata: MEMBER_B, timeoutMs: 30_000 });
    assert.equal(tb.leadership, null);
    const tc = await cb.tryAcquire(role, 'c', { timeoutMs: 30_000 }); // none
    assert.equal(tc.leadership, null);

    let st = await cw.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.holder, 'a');
    assert.deepEqual(st.metadata, TERM1);
    assert.deepEqual(
      st.roster.map((e) => [e.member, e.metadata]),
      [
        ['a', MEMBER_A],
        ['b', Buffer.from(MEMBER_B)],
        ['c', null],
      ],
    );
    assert.ok(st.roster.every((e) => e.metadata === null || Buffer.isBuffer(e.metadata)));

    // A change of the term's metadata is a renewal under the same token,
    // delivered to the watch without the renewals flag.
    const grantedBefore = a.lease.grantedAt;
    const t2 = Buffer.from('term-a:2');
    await a.setMetadata(t2, { timeoutMs: 30_000 });
    assert.deepEqual(a.metadata, t2);
    assert.ok(a.lease.grantedAt >= grantedBefore);
    const renewed = await until(w, (e) => e.kind === 'LEASE_RENEWED');
    assert.deepEqual(renewed.metadata, t2);
    assert.equal(renewed.holder, 'a');
    assert.equal(renewed.token.compare(a.token), 0);
    st = await cw.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual(st.metadata, t2);
    assert.equal(st.token.compare(a.token), 0);

    // Exactly the limit is accepted and survives the round trip.
    const full = Buffer.alloc(MAX_METADATA_BYTES, 0x5a);
    full[0] = 0;
    full[full.length - 1] = 0xff;
    await a.setMetadata(full, { timeoutMs: 30_000 });
    // Then two changes, and two next() calls pending at once: each event
    // comes with its own record's metadata, in order.
    const t4 = Buffer.from('term-a:4');
    await a.setMetadata(new Uint8Array(Buffer.from('term-a:3')), { timeoutMs: 30_000 });
    await a.setMetadata(t4, { timeoutMs: 30_000 });
    const evs = await Promise.all([w.next(), w.next(), w.next()]);
    assert.deepEqual(
      evs.map((r) => [r.value.kind, r.value.metadata && (r.value.metadata.equals(full) ? '4096 bytes' : r.value.metadata.toString('latin1'))]),
      [
        ['LEASE_RENEWED', '4096 bytes'],
        ['LEASE_RENEWED', 'term-a:3'],
        ['LEASE_RENEWED', 'term-a:4'],
      ],
    );
    assert.deepEqual((await cw.describe(role, { timeoutMs: 30_000 })).metadata, t4);

    // null: no metadata from now on.
    await a.setMetadata(null, { timeoutMs: 30_000 });
    assert.equal(a.metadata, null);
    const cleared = await until(w, (e) => e.kind === 'LEASE_RENEWED');
    assert.equal(cleared.metadata, null);
    st = await cw.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.metadata, null);
    assert.deepEqual(st.roster[0].metadata, MEMBER_A, 'the member metadata is the registration, not the lease');
    await w.close();
    await a.resign({ timeoutMs: 30_000 });
  } finally {
    await Promise.all([ca.close(), cb.close(), cw.close()]);
  }
});

test('metadata is per acquire: a later acquire of the pair without it writes none', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('percall');
  const c = client('node-hdr-percall');
  try {
    const first = await c.acquire(role, 'm', { metadata: Buffer.from('first'), memberMetadata: Buffer.from('m-first'), timeoutMs: 30_000 });
    assert.deepEqual(first.metadata, Buffer.from('first'));
    await first.resign({ timeoutMs: 30_000 });
    await first.close();
    // Each call passes its own options (krabka_acquire_options_t): none
    // passed is none written, whatever an earlier call of the pair had.
    const second = await c.acquire(role, 'm', { timeoutMs: 30_000 });
    assert.equal(second.metadata, null);
    let st = await c.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.metadata, null);
    assert.deepEqual(
      st.roster.map((e) => [e.member, e.metadata]),
      [['m', null]],
    );
    await second.resign({ timeoutMs: 30_000 });
    await second.close();
    // And through tryAcquire, with new metadata.
    const third = (await c.tryAcquire(role, 'm', { metadata: Buffer.from('third'), timeoutMs: 30_000 })).leadership;
    assert.ok(third, 'the only member wins at once');
    assert.deepEqual(third.metadata, Buffer.from('third'));
    st = await c.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual(st.metadata, Buffer.from('third'));
    assert.equal(st.roster[0].metadata, null);
    await third.resign({ timeoutMs: 30_000 });
    await third.close();

    // An acquire again of the pair by the same client, with other metadata,
    // ends the first (FENCED); each leadership carries its own.
    const x = await c.tryAcquire(role, 'm', { metadata: Buffer.from('x'), timeoutMs: 30_000 });
    assert.ok(x.leadership, 'the only member wins at once');
    const y = await c.acquire(role, 'm', { metadata: Buffer.from('y'), timeoutMs: 30_000 });
    assert.deepEqual(x.leadership.metadata, Buffer.from('x'));
    assert.deepEqual(y.metadata, Buffer.from('y'));
    assert.ok(y.token.supersedes(x.leadership.token));
    st = await c.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual(st.metadata, Buffer.from('y'));
    await y.resign({ timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
});

test('concurrent acquires and an elector each carry the metadata of their own call', { timeout: 120_000 }, async () => {
  requireBroker();
  const roles = [0, 1, 2, 3].map((i) => unique(`own-${i}`));
  const c = client('node-hdr-own');
  let el = null;
  try {
    // One member on four roles at once: acquire and tryAcquire interleaved.
    const won = await Promise.all(
      roles.map((r, i) =>
        i % 2
          ? c.tryAcquire(r, 'm', { metadata: Buffer.from(`t-${i}`), memberMetadata: Buffer.from(`m-${i}`), timeoutMs: 30_000 }).then((x) => x.leadership)
          : c.acquire(r, 'm', { metadata: Buffer.from(`t-${i}`), memberMetadata: Buffer.from(`m-${i}`), timeoutMs: 30_000 }),
      ),
    );
    for (let i = 0; i < roles.length; i++) {
      assert.ok(won[i], `${roles[i]} was not won`);
      assert.deepEqual(won[i].metadata, Buffer.from(`t-${i}`));
      const st = await c.describe(roles[i], { timeoutMs: 30_000 });
      assert.deepEqual([st.metadata, st.roster.map((e) => e.metadata)], [Buffer.from(`t-${i}`), [Buffer.from(`m-${i}`)]]);
      await won[i].resign({ timeoutMs: 30_000 });
    }
    // The elector's acquires carry the options of client.elect.
    const role = unique('own-elect');
    el = c.elect(role, 'e', { metadata: Buffer.from('e-term'), memberMetadata: Buffer.from('e-member') });
    const { value: term } = await el[Symbol.asyncIterator]().next();
    assert.deepEqual(term.leadership.metadata, Buffer.from('e-term'));
    const st = await c.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual([st.metadata, st.roster.map((e) => e.metadata)], [Buffer.from('e-term'), [Buffer.from('e-member')]]);
  } finally {
    if (el) await el.close();
    await c.close();
  }
});

test('an acquire uses the metadata it was called with, whatever a later call of the pair sets', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('snapshot');
  const holder = client('node-hdr-snap-holder');
  const c = client('node-hdr-snap');
  try {
    const h = await holder.acquire(role, 'holder', { timeoutMs: 30_000 });
    // Waits behind the holder, with metadata 'p'.
    const pending = c.acquire(role, 'm', { metadata: Buffer.from('p'), timeoutMs: 60_000 });
    // A later call of the same pair with other metadata, not won (the
    // holder is live): its options are its own.
    const t = await c.tryAcquire(role, 'm', { metadata: Buffer.from('q'), timeoutMs: 30_000 });
    assert.equal(t.leadership, null);
    await h.resign({ timeoutMs: 30_000 });
    const won = await pending;
    assert.deepEqual(won.metadata, Buffer.from('p'));
    const st = await c.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual(st.metadata, Buffer.from('p'));
    await won.resign({ timeoutMs: 30_000 });
  } finally {
    await Promise.all([holder.close(), c.close()]);
  }
});

test('over 4096 bytes and wrong types are refused before anything is written', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('refuse');
  const c = client('node-hdr-refuse');
  const big = Buffer.alloc(MAX_METADATA_BYTES + 1, 0x78);
  try {
    await assert.rejects(c.acquire(role, 'm', { metadata: big, timeoutMs: 30_000 }), isInvalidArg(/options\.metadata of 4097 bytes: at most 4096/));
    await assert.rejects(c.acquire(role, 'm', { memberMetadata: new Uint8Array(4097), timeoutMs: 30_000 }), isInvalidArg(/options\.memberMetadata of 4097 bytes/));
    await assert.rejects(c.tryAcquire(role, 'm', { metadata: big, timeoutMs: 30_000 }), isInvalidArg(/4097 bytes/));
    await assert.rejects(c.tryAcquire(role, 'm', { memberMetadata: big, timeoutMs: 30_000 }), isInvalidArg(/4097 bytes/));
    // Nothing was written: no registration, no lease, no token.
    let st = await c.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.roster.length, 0);
    assert.equal(st.lease, null);
    assert.ok(st.token.isNoEpoch);

    // Wrong types throw TypeError at once, naming the option.
    assert.throws(() => c.acquire(role, 'm', { metadata: 'text' }), { name: 'TypeError', message: /acquire: options\.metadata must be a Buffer or a Uint8Array/ });
    assert.throws(() => c.acquire(role, 'm', { memberMetadata: 42 }), { name: 'TypeError', message: /acquire: options\.memberMetadata must be a Buffer or a Uint8Array \(or null\), got a number/ });
    assert.throws(() => c.tryAcquire(role, 'm', { metadata: [1, 2] }), { name: 'TypeError', message: /tryAcquire: options\.metadata must be a Buffer.*got an array/ });
    assert.throws(() => c.tryAcquire(role, 'm', { memberMetadata: {} }), { name: 'TypeError', message: /tryAcquire: options\.memberMetadata/ });

    const l = await c.acquire(role, 'm', { metadata: Buffer.from('kept'), timeoutMs: 30_000 });
    const lease = l.lease;
    await assert.rejects(l.setMetadata(big, { timeoutMs: 30_000 }), isInvalidArg(/4096/));
    assert.throws(() => l.setMetadata('text'), { name: 'TypeError', message: /setMetadata: data must be a Buffer/ });
    assert.throws(() => l.setMetadata(), { name: 'TypeError', message: /setMetadata: data must be a Buffer/ });
    assert.throws(() => l.setMetadata(Buffer.from('x'), { timeoutMs: -1 }), RangeError);
    assert.throws(() => l.resign({ successor: 42 }), { name: 'TypeError', message: /successor must be a string or a Buffer/ });
    // The refused change wrote nothing: the same lease, the same metadata.
    assert.deepEqual(l.metadata, Buffer.from('kept'));
    assert.equal(l.lease.grantedAt, lease.grantedAt);
    st = await c.describe(role, { timeoutMs: 30_000 });
    assert.deepEqual(st.metadata, Buffer.from('kept'));
    assert.equal(st.lease.grantedAt, lease.grantedAt);
    assert.equal(l.state, 'ACTIVE');

    // Header arguments.
    assert.throws(() => l.produce('t', 'v', { headers: 'trace=1' }), { name: 'TypeError', message: /message\.headers must be an object of name -> value or an array/ });
    assert.throws(() => l.produce('t', 'v', { headers: { a: 5 } }), { name: 'TypeError', message: /value of header "a" must be a Buffer or a string, got a number/ });
    assert.throws(() => l.produce('t', 'v', { headers: { a: null } }), TypeError);
    assert.throws(() => l.produce('t', 'v', { headers: [['a']] }), { name: 'TypeError', message: /message\.headers\[0\] must be a \[name, value\] pair/ });
    assert.throws(() => l.produce('t', 'v', { headers: [[1, 'x']] }), { name: 'TypeError', message: /header name must be a string, got a number/ });
    assert.throws(() => l.produce('t', 'v', { headers: { 'a\0b': 'x' } }), { name: 'RangeError', message: /must not contain NUL/ });
    assert.throws(() => l.produce('t', 'v', { headers: Buffer.from('x') }), TypeError);
    assert.throws(() => l.produceBatch([{ topic: 't', value: 'v', headers: 7 }]), { name: 'TypeError', message: /messages\[0\]\.headers must be/ });
    await l.resign({ timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
});

test('resign({ successor }) hands the role to the rank-1 standby; the rank-0 one keeps waiting and stays registered', { timeout: 180_000 }, async () => {
  requireBroker();
  const role = unique('successor');
  const ca = client('node-hdr-succ-a');
  const cb = client('node-hdr-succ-b');
  const cc = client('node-hdr-succ-c');
  let bSettled = false;
  let bAcquire = null;
  try {
    const a = await ca.acquire(role, 'a', { timeoutMs: 30_000 });
    // No limit: b waits behind a (rank 0 once a is gone), c behind b.
    bAcquire = cb.acquire(role, 'b');
    bAcquire.then(
      () => (bSettled = true),
      () => (bSettled = true),
    );
    await waitRegistered(ca, role, 'b');
    const cAcquire = cc.acquire(role, 'c', { timeoutMs: 120_000 });
    await waitRegistered(ca, role, 'c');
    assert.deepEqual(
      (await rosterOf(ca, role)).map((e) => [e.member, e.rank]),
      [
        ['a', 0], // the holder
        ['b', 0], // the first standby
        ['c', 1],
      ],
    );

    const t0 = Date.now();
    await a.resign({ successor: 'c', timeoutMs: 30_000 });
    assert.equal(a.state, 'RESIGNED');
    // Without the named successor b (rank 0) would win at once and c would
    // wait a stagger behind it; with it, c wins at once and b waits one
    // stagger (60 s) more.
    const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('c did not take the role within 30 s of the resign')), 30_000).unref());
    const c = await Promise.race([cAcquire, timer]);
    const took = Date.now() - t0;
    assert.ok(took < 30_000, `c took ${took} ms`);
    assert.equal(c.member, 'c');
    assert.ok(c.token.supersedes(a.token), `c's token ${c.token} must supersede a's ${a.token}`);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(bSettled, false, 'b won or failed although c was named');

    const st = await ca.describe(role, { timeoutMs: 30_000 });
    assert.equal(st.holder, 'c');
    assert.equal(st.current, true);
    assert.equal(st.token.compare(c.token), 0);
    // b let no turn pass: the winner by name pruned nobody.
    assert.deepEqual(
      st.roster.map((e) => [e.member, e.rank]),
      [
        ['b', 0],
        ['c', 0], // the holder
      ],
    );
    assert.equal(bSettled, false);

    // A successor that is not registered is ignored: the first standby
    // (b) takes over at once, as after a plain resign.
    const t1 = Date.now();
    await c.resign({ successor: 'nobody', timeoutMs: 30_000 });
    const timer2 = new Promise((_, reject) => setTimeout(() => reject(new Error('b did not take the role within 30 s')), 30_000).unref());
    const b = await Promise.race([bAcquire, timer2]);
    assert.ok(Date.now() - t1 < 30_000);
    assert.equal(b.member, 'b');
    assert.ok(b.token.supersedes(c.token));
    await b.resign({ timeoutMs: 30_000 });
  } finally {
    await Promise.all([ca.close(), cb.close(), cc.close()]);
    if (bAcquire) await bAcquire.catch(() => {});
  }
});

test('produce and produceBatch with headers: kread shows the user headers and krabka.token = the leadership token', { timeout: 120_000 }, async () => {
  requireBroker();
  const role = unique('produce');
  const topic = unique('commands');
  createTopic(topic);
  const c = client('node-hdr-produce');
  try {
    const l = await c.acquire(role, 'writer', { timeoutMs: 30_000 });
    const token = l.token.toString();
    const w0 = await l.produce(topic, 'plain', { partition: 0 });
    const w1 = await l.produce(topic, 'v1', { partition: 0, key: 'k', headers: { trace: 't-1', raw: Buffer.from([1, 2, 3]) } });
    const wb = await l.produceBatch([
      { topic, value: 'v2', partition: 0, headers: [['source', 'node'], ['trace', new Uint8Array(Buffer.from('t-2'))]] },
      { topic, value: 'v3', partition: 0 },
      { topic, value: 'v4', partition: 0, headers: new Map([['only', '4']]) },
    ]);
    assert.equal(wb.length, 3);
    assert.ok(w1.offset > w0.offset && wb[0].offset > w1.offset && wb[2].offset > wb[1].offset);

    // Reserved names are the library's INVALID_ARG, and nothing of the
    // refused call is written.
    await assert.rejects(l.produce(topic, 'bad-1', { partition: 0, headers: { 'krabka.token': '1:1' } }), isInvalidArg(/reserved/));
    await assert.rejects(
      l.produceBatch([
        { topic, value: 'bad-2', partition: 0 },
        { topic, value: 'bad-3', partition: 0, headers: [['krabka.meta', 'x']] },
      ]),
      isInvalidArg(/reserved/),
    );
    assert.equal(l.state, 'ACTIVE');
    const w5 = await l.produce(topic, 'v5', { partition: 0, headers: [] });

    const recs = readTopic(topic);
    const byValue = Object.fromEntries(recs.map((r) => [r.value, r]));
    assert.deepEqual(
      recs.map((r) => r.value),
      ['plain', 'v1', 'v2', 'v3', 'v4', 'v5'],
    );
    assert.deepEqual(byValue.plain.headers, { 'krabka.token': token });
    assert.deepEqual(byValue.v1.headers, { trace: 't-1', raw: '\u0001\u0002\u0003', 'krabka.token': token });
    assert.equal(byValue.v1.key, 'k');
    assert.deepEqual(byValue.v2.headers, { source: 'node', trace: 't-2', 'krabka.token': token });
    assert.deepEqual(byValue.v3.headers, { 'krabka.token': token });
    assert.deepEqual(byValue.v4.headers, { only: '4', 'krabka.token': token });
    assert.deepEqual(byValue.v5.headers, { 'krabka.token': token });
    assert.equal(byValue.v5.offset, Number(w5.offset));
    for (const r of recs) {
      assert.equal(`${r.producer_id}:${r.producer_epoch}`, token, `record ${r.value}: batch token`);
    }

    // The verifier agrees with every record the leadership wrote, and
    // flags a record whose header is not its batch's token.
    const v = new Verifier();
    for (const r of recs) {
      const batch = { producerId: BigInt(r.producer_id), producerEpoch: r.producer_epoch };
      assert.equal(v.judge(role, r.headers['krabka.token'], batch), 'OK', `record ${r.value}`);
    }
    assert.equal(v.highest(role).toString(), token);
    const first = recs[0];
    assert.equal(v.judge(role, `${first.producer_id + 1}:${first.producer_epoch}`, new FencingToken(BigInt(first.producer_id), first.producer_epoch)), 'MISMATCH');
    v.close();
    await l.resign({ timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
});

test('Verifier: ok, stale, mismatch, unstamped; highest per scope; misuse', () => {
  const v = new Verifier();
  const t71 = new FencingToken(7n, 1);
  const t72 = new FencingToken(7n, 2);
  assert.equal(v.highest('r'), null);
  assert.equal(v.judge('r', '7:1', t71), 'OK');
  assert.equal(v.highest('r').toString(), '7:1');
  assert.equal(v.judge('r', Buffer.from('7:2'), t72), 'OK');
  assert.ok(v.highest('r').equals(t72));
  assert.ok(v.highest('r') instanceof FencingToken);
  // An older batch than the highest seen.
  assert.equal(v.judge('r', '7:1', t71), 'STALE');
  // A stale batch without the header is still stale (staleness first).
  assert.equal(v.judge('r', null, t71), 'STALE');
  // A header copied onto another batch; text that is no token.
  assert.equal(v.judge('r', '7:2', t71), 'MISMATCH');
  assert.equal(v.judge('r', 'not-a-token', t72), 'MISMATCH');
  assert.equal(v.judge('r', '', t72), 'MISMATCH', 'an empty header is a header');
  // Mismatch comes before stale.
  assert.equal(v.judge('r', '9:9', t71), 'MISMATCH');
  // No header on a current batch.
  assert.equal(v.judge('r', null, t72), 'UNSTAMPED');
  assert.equal(v.judge('r', undefined, { producerId: 7, producerEpoch: 3 }), 'UNSTAMPED');
  // An unstamped record still raises the highest (it is neither mismatch nor stale).
  assert.equal(v.highest('r').toString(), '7:3');
  assert.equal(v.judge('r', '7:2', t72), 'STALE');
  // A mismatched record does not raise it.
  assert.equal(v.judge('r', '8:1', new FencingToken(9n, 0)), 'MISMATCH');
  assert.equal(v.highest('r').toString(), '7:3');
  // Scopes are independent; a Buffer scope is the same scope as its string.
  assert.equal(v.judge('other', '7:1', t71), 'OK');
  assert.equal(v.highest(Buffer.from('other')).toString(), '7:1');
  assert.equal(v.judge(Buffer.from('r'), new Uint8Array(Buffer.from('7:1')), t71), 'STALE');
  assert.equal(v.highest('never'), null);

  // Misuse: wrong types throw TypeError before anything reaches C.
  assert.throws(() => v.judge(5, '7:1', t71), { name: 'TypeError', message: /scope must be a string or a Buffer/ });
  assert.throws(() => v.judge('r', 7, t71), { name: 'TypeError', message: /header must be a Buffer or a string/ });
  assert.throws(() => v.judge('r', '7:1', '7:1'), { name: 'TypeError', message: /batchToken must be a FencingToken or \{ producerId, producerEpoch \}/ });
  assert.throws(() => v.judge('r', '7:1'), { name: 'TypeError', message: /batchToken/ });
  assert.throws(() => v.judge('r', '7:1', { producerId: 1.5, producerEpoch: 1 }), RangeError);
  assert.throws(() => v.judge('r', '7:1', { producerId: 1, producerEpoch: 70000 }), RangeError);
  assert.throws(() => v.highest(null), TypeError);
  assert.equal(v.closed, false);
  v.close();
  v.close(); // idempotent
  assert.equal(v.closed, true);
  const closed = (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_HANDLE;
  assert.throws(() => v.judge('r', '7:1', t71), closed);
  assert.throws(() => v.highest('r'), closed);

  // Two verifiers share nothing.
  const a = new Verifier();
  const b = new Verifier();
  assert.equal(a.judge('r', '7:2', t72), 'OK');
  assert.equal(b.judge('r', '7:1', t71), 'OK');
  assert.equal(a.highest('r').toString(), '7:2');
  assert.equal(b.highest('r').toString(), '7:1');
  const u = new Verifier();
  assert.equal(u.judge('s', '1:0', new FencingToken(1n, 0)), 'OK');
  u[Symbol.dispose]();
  assert.equal(u.closed, true);
  a.close();
  b.close();
});
