'use strict';
// require('krabka-coord/testing') without a broker: the in-process
// cluster's controls through the binding, bad input (wrong JavaScript types
// throw TypeError naming the argument; what the library refuses is a
// KrabkaError naming the problem), the declarations against
// include/krabka_coord_testing.h, and a controller's failover (win, fenced
// mid-command by a blind successor, the standby takes over once the clock
// passes the deadline) whose wall time is printed and written to
// build/testing/node-failover.json, never checked. Waits are bounded
// (within) only so that a broken test ends.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const k = require('..');
const { Client, KrabkaError, FencedError, ErrorCode, DecodeError } = k;
const testing = require('../lib/testing');
const { Cluster, CLOCK_START_MS } = testing;
const { TESTING_DECLS } = require('../lib/testing_abi');
const { within: waitWithin } = require('./helpers/wait');

const repo = path.resolve(__dirname, '..', '..', '..');
const WAIT = 30_000; // a bound for one wait, not a timing check
const LEASE_MS = 30_000; // krabka.lease.ms default: the manual clock is advanced past it

const within = (p, what) => waitWithin(p, what, WAIT);

const isCode = (name, words) => (e) => {
  assert.ok(e instanceof KrabkaError, `expected a KrabkaError ${name}, got ${e && e.stack}`);
  assert.equal(e.codeName, name, e.message);
  if (words) assert.match(e.message, words);
  return true;
};

// ---- the package's subpath --------------------------------------------------

test("require('krabka-coord/testing') resolves through package.json exports", () => {
  const resolved = require.resolve('krabka-coord/testing', { paths: [path.resolve(__dirname, '..', '..')] });
  assert.equal(resolved, require.resolve('../lib/testing'));
  assert.equal(require('krabka-coord/testing').Cluster, Cluster);
  assert.equal(require('krabka-coord').Client, Client);
});

// ---- the cluster and its clock -------------------------------------------

test('a cluster registers mem://NAME and the clients naming it share it', async (t) => {
  const cluster = Cluster.forTest(t);
  assert.equal(cluster.bootstrap, `mem://${cluster.name}`);
  assert.deepEqual(cluster.config({ 'client.id': 'x' }), { 'client.id': 'x', 'bootstrap.servers': cluster.bootstrap });
  const a = cluster.client();
  const b = new Client({ 'bootstrap.servers': cluster.bootstrap });
  try {
    const lead = await a.acquire('ctl', 'a', { timeoutMs: WAIT });
    const st = await b.describe('ctl', { timeoutMs: WAIT });
    assert.equal(st.holder, 'a');
    assert.ok(st.token.equals(lead.token));
  } finally {
    await b.close();
  }
});

test('two clusters are separate; each has its own clock', async (t) => {
  const one = Cluster.forTest(t);
  const two = Cluster.forTest(t);
  assert.notEqual(one.name, two.name);
  await one.client().acquire('ctl', 'a', { timeoutMs: WAIT });
  const lead = await two.client().acquire('ctl', 'b', { timeoutMs: WAIT }); // two's ctl is free
  assert.equal(lead.state, 'ACTIVE');
  assert.equal(one.clock.advance(1000), CLOCK_START_MS + 1000);
  assert.equal(two.clock.nowMs(), CLOCK_START_MS);
});

test('the manual clock moves only when advanced', async (t) => {
  const { clock } = Cluster.forTest(t);
  assert.equal(clock.nowMs(), CLOCK_START_MS);
  assert.equal(clock.now().toISOString(), '2026-01-01T00:00:00.000Z');
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(clock.nowMs(), CLOCK_START_MS);
  assert.equal(clock.advance(250), CLOCK_START_MS + 250);
  assert.equal(clock.advance(2000n), CLOCK_START_MS + 2250);
  assert.equal(clock.advance(0), CLOCK_START_MS + 2250);
  assert.equal(clock.realTime, false);
});

test('a real-time cluster follows the system clock and refuses advance()', async (t) => {
  const cluster = Cluster.forTest(t, { realTime: true, partitions: 3 });
  assert.equal(cluster.partitions, 3);
  assert.ok(cluster.realTime && cluster.clock.realTime);
  assert.ok(Math.abs(cluster.clock.nowMs() - Date.now()) < 60_000);
  assert.throws(() => cluster.clock.advance(10), isCode('INVALID_ARG', /real/));
});

test('a lease expires by the clock, not by real time', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  const b = cluster.client();
  const lead = await a.acquire('ctl', 'a', { timeoutMs: WAIT });
  assert.equal(Number(lead.lease.deadline), cluster.clock.nowMs() + LEASE_MS);
  cluster.kill(a); // no renewal, no resign
  const first = await b.tryAcquire('ctl', 'b', { timeoutMs: WAIT });
  assert.equal(first.leadership, null);
  cluster.clock.advance(LEASE_MS - 1);
  assert.equal((await b.tryAcquire('ctl', 'b', { timeoutMs: WAIT })).leadership, null); // 1 ms before the deadline
  cluster.clock.advance(1);
  const took = (await b.tryAcquire('ctl', 'b', { timeoutMs: WAIT })).leadership;
  assert.ok(took && took.token.supersedes(lead.token));
});

// ---- faults -------------------------------------------------------------------

test('cut refuses every request until healed; pause holds them until resumed', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  cluster.cut(a);
  await assert.rejects(a.describe('ctl', { timeoutMs: WAIT }), isCode('TRANSPORT'));
  cluster.heal(a);
  assert.equal((await a.describe('ctl', { timeoutMs: WAIT })).holder, null);
  cluster.pause(a);
  await assert.rejects(a.describe('ctl', { timeoutMs: 50 }), isCode('TIMEOUT')); // held, until its real-time timeout
  cluster.resume(a);
  assert.equal((await a.describe('ctl', { timeoutMs: WAIT })).holder, null);
});

test('an unavailable cluster refuses every client and the mint', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  const b = cluster.client();
  cluster.setAvailable(false);
  for (const c of [a, b]) await assert.rejects(c.describe('ctl', { timeoutMs: WAIT }), isCode('TRANSPORT'));
  assert.throws(() => cluster.mint('ctl'), isCode('TRANSPORT'));
  cluster.setAvailable(true);
  assert.equal((await a.describe('ctl', { timeoutMs: WAIT })).holder, null);
});

test('a killed holder neither resigns nor leaves, also when closed', async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  const b = cluster.client();
  const lead = await a.acquire('ctl', 'a', { timeoutMs: WAIT });
  cluster.kill(a);
  cluster.kill(a); // idempotent
  assert.throws(() => cluster.heal(a), isCode('INVALID_ARG', /kill/));
  assert.throws(() => cluster.resume(a), isCode('INVALID_ARG', /kill/));
  await a.close();
  const st = await b.describe('ctl', { timeoutMs: WAIT });
  assert.equal(st.holder, 'a');
  assert.deepEqual(st.roster.map((e) => e.member), ['a']);
  assert.throws(() => cluster.cut(a), isCode('CLOSED'));
  cluster.clock.advance(LEASE_MS);
  assert.ok((await b.acquire('ctl', 'b', { timeoutMs: WAIT })).token.supersedes(lead.token));
});

test("mint is a blind successor: the holder's next write is refused and absent", async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  const lead = await a.acquire('ctl', 'a', { timeoutMs: WAIT });
  await lead.produce('commands', 'before');
  const minted = cluster.mint('ctl');
  assert.ok(minted.supersedes(lead.token));
  assert.equal(lead.state, 'ACTIVE'); // it does not know
  await assert.rejects(lead.produce('commands', 'after'), FencedError);
  assert.equal(lead.state, 'FENCED');
  const recs = cluster.records('commands');
  assert.equal(recs.length, 1);
  assert.equal(recs[0].offset, 0n);
  assert.deepEqual(cluster.values('commands').map(String), ['before']);
  assert.deepEqual(cluster.records('never-written'), []);
});

test("mint uses the role prefix of the client it is given", async (t) => {
  const cluster = Cluster.forTest(t);
  const a = cluster.client({ 'krabka.role.prefix': 'team1.' });
  const lead = await a.acquire('ctl', 'a', { timeoutMs: WAIT });
  cluster.mint('ctl'); // no prefix: another transactional id
  await lead.produce('commands', 'still mine');
  cluster.mint('ctl', { client: a });
  await assert.rejects(lead.produce('commands', 'refused'), FencedError);
  assert.deepEqual(cluster.values('commands').map(String), ['still mine']);
});

// ---- bad input ----------------------------------------------------------------

for (const [name, words] of [['has space', /' '/], ['', /empty/], ['x'.repeat(65), /64/], ['naïve', /name/]]) {
  test(`the cluster name ${JSON.stringify(name.length > 20 ? `${name.slice(0, 5)}...` : name)} is refused, naming the problem`, () => {
    assert.throws(() => new Cluster({ name }), isCode('INVALID_ARG', words));
  });
}

test('a name a live cluster has is refused; a closed cluster frees its name and its clients fail', async (t) => {
  const cluster = Cluster.forTest(t);
  assert.throws(() => new Cluster({ name: cluster.name }), isCode('INVALID_ARG', new RegExp(cluster.name)));
  const name = testing.uniqueName('reuse');
  const c = new Cluster({ name });
  const outside = new Client({ 'bootstrap.servers': c.bootstrap });
  const mine = c.client();
  try {
    const p = c.close();
    assert.equal(c.close(), p); // idempotent
    await p;
    assert.ok(c.closed && mine.closed);
    await assert.rejects(outside.describe('ctl', { timeoutMs: WAIT }), isCode('TRANSPORT'));
    assert.throws(() => c.clock.nowMs(), isCode('CLOSED'));
    assert.throws(() => c.client(), isCode('CLOSED'));
    const again = Cluster.forTest(t, { name });
    assert.equal((await again.client().describe('ctl', { timeoutMs: WAIT })).holder, null);
  } finally {
    await outside.close();
  }
});

test('a client naming a bad or unknown mem:// cluster is refused, naming the problem', () => {
  for (const [bootstrap, words] of [
    ['mem://bad name', /has the character ' ' at byte 3/],
    ['mem://nobody-has-this', /no in-process cluster named "nobody-has-this"/],
    ['mem://a,127.0.0.1:9092', /must be the only entry/],
  ]) {
    assert.throws(() => new Client({ 'bootstrap.servers': bootstrap }), isCode('INVALID_CONFIG', words), bootstrap);
  }
});

test('wrong JavaScript types throw TypeError naming the argument', async (t) => {
  const cluster = Cluster.forTest(t);
  const cases = [
    [() => new Cluster('x'), TypeError, /options must be an object/],
    [() => new Cluster({ name: 5 }), TypeError, /options\.name must be a string/],
    [() => new Cluster({ partitions: '3' }), TypeError, /options\.partitions must be an integer/],
    [() => new Cluster({ partitions: 1.5 }), RangeError, /options\.partitions must be an integer/],
    [() => new Cluster({ realTime: 1 }), TypeError, /options\.realTime must be a boolean/],
    [() => cluster.clock.advance('10'), TypeError, /ms must be a number of milliseconds or a bigint/],
    [() => cluster.clock.advance(1.5), RangeError, /whole number/],
    [() => cluster.cut('client'), TypeError, /cluster\.cut\(client\): client must be a krabka-coord Client, got a string/],
    [() => cluster.kill(null), TypeError, /cluster\.kill\(client\): client must be a krabka-coord Client, got null/],
    [() => cluster.setAvailable(0), TypeError, /available must be a boolean/],
    [() => cluster.mint(7), TypeError, /role must be a string or a Buffer/],
    [() => cluster.mint('r', { client: 'x' }), TypeError, /options\.client must be a krabka-coord Client/],
    [() => cluster.mint('r', 'x'), TypeError, /options must be an object/],
    [() => cluster.records(Buffer.from('t')), TypeError, /topic must be a string/],
    [() => cluster.records('t', '0'), TypeError, /partition must be an integer/],
    [() => cluster.config({ 'bootstrap.servers': 'x' }), RangeError, /bootstrap\.servers/],
    [() => cluster.config([]), TypeError, /extra must be an object/],
    [() => Cluster.forTest({}), TypeError, /node:test context/],
  ];
  for (const [fn, cls, words] of cases) assert.throws(fn, (e) => e instanceof cls && words.test(e.message), String(fn));
});

test('what the library refuses names the problem', async (t) => {
  const cluster = Cluster.forTest(t);
  assert.throws(() => cluster.clock.advance(-1), isCode('INVALID_ARG', /backwards/));
  assert.throws(() => new Cluster({ partitions: 0 }), isCode('INVALID_ARG', /partitions/));
  assert.throws(() => cluster.mint(''), (e) => e instanceof DecodeError && /empty/.test(e.message));
  assert.throws(() => cluster.records(''), isCode('INVALID_ARG', /topic/));
  assert.throws(() => cluster.records('t', 5), isCode('INVALID_ARG', /partition/));
  const real = new Client({ 'bootstrap.servers': '127.0.0.1:9' });
  try {
    for (const control of ['cut', 'heal', 'pause', 'resume', 'kill']) {
      assert.throws(() => cluster[control](real), isCode('INVALID_ARG', /in-process|mem:\/\//), control);
    }
    assert.throws(() => cluster.mint('ctl', { client: real }), isCode('INVALID_ARG', /in-process|mem:\/\//));
  } finally {
    await real.close();
  }
});

// ---- the declarations against the testing header -------------------------------

// The C types of include/krabka_coord_testing.h -> the koffi types of
// lib/abi.js's mapping (for parameters).
const KOFFI_OF = {
  'krabka_err_t': 'int',
  'int': 'int',
  'int32_t': 'int32_t',
  'int64_t': 'int64_t',
  'size_t': 'size_t',
  'const char *': 'const char *',
  'char *': 'uint8_t *',
  'uint8_t *': 'uint8_t *',
  'krabka_testing_cluster_t *': 'krabka_testing_cluster_t',
  'const krabka_testing_cluster_t *': 'const krabka_testing_cluster_t',
  'krabka_client_t *': 'krabka_client_t',
  'krabka_testing_cluster_t **': '_Out_ krabka_testing_cluster_t *',
  'int64_t *': '_Out_ int64_t *',
  'size_t *': '_Out_ size_t *',
  'int *': '_Out_ int *',
  'krabka_token_t *': '_Out_ krabka_token_t *',
};
const norm = (t) => t.replace(/\s*\*/g, ' *').replace(/\* \*/g, '**').replace(/\s+/g, ' ').trim();

function headerFunctions() {
  const text = fs.readFileSync(path.join(repo, 'include', 'krabka_coord_testing.h'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, ' ');
  const out = new Map();
  for (const m of text.matchAll(/([\w\s*]+?)\b(krabka_testing_\w+)\s*\(([^)]*)\)\s*;/g)) {
    const params = m[3].split(',').map((p) => p.trim()).filter((p) => p && p !== 'void').map((p) => {
      const pm = /^([\s\S]*?)(\w+)$/.exec(p);
      return { type: norm(pm[1]), name: pm[2] };
    });
    out.set(m[2], { ret: norm(m[1]), params });
  }
  return out;
}

test('every function of include/krabka_coord_testing.h is declared, with its parameters and types', () => {
  const header = headerFunctions();
  assert.ok(header.size >= 12, `parsed ${header.size} functions`);
  assert.deepEqual([...header.keys()], TESTING_DECLS.map(([n]) => n), 'the same functions, in header order');
  for (const [name, decl] of TESTING_DECLS) {
    const h = header.get(name);
    const m = /^(.*?)\b(krabka_testing_\w+)\((.*)\)$/.exec(decl);
    assert.equal(m[2], name);
    const ret = norm(m[1]);
    assert.equal(ret, h.ret === 'krabka_err_t' ? 'int' : h.ret, `${name}: return type`);
    const params = m[3].split(',').map((p) => {
      const pm = /^(.*?)(\w+)$/.exec(p.trim());
      return { type: norm(pm[1]), name: pm[2] };
    });
    assert.equal(params.length, h.params.length, `${name}: parameter count`);
    h.params.forEach((hp, i) => {
      assert.equal(params[i].name, hp.name, `${name}: parameter ${i} name`);
      const want = KOFFI_OF[hp.type];
      assert.ok(want, `${name}: the header's type '${hp.type}' is not in this test's mapping`);
      const got = params[i].type;
      // a const char * followed by a length is a Buffer ('const uint8_t *'), as lib/abi.js maps it
      const alt = hp.type === 'const char *' && h.params[i + 1] && h.params[i + 1].name === `${hp.name}_len` ? 'const uint8_t *' : want;
      assert.ok(got === want || got === alt, `${name}: parameter ${hp.name} is '${got}', the header's '${hp.type}' maps to '${alt}'`);
    });
  }
});

test('the constants match the header', () => {
  const text = fs.readFileSync(path.join(repo, 'include', 'krabka_coord_testing.h'), 'utf8');
  const c = Object.fromEntries([...text.matchAll(/#define KRABKA_TESTING_(\w+)\s+(.+)/g)].map((m) => [m[1], m[2].trim()]));
  assert.equal(Number(c.NAME_MAX), testing.NAME_MAX);
  assert.equal(c.CLOCK_START_MS, `INT64_C(${CLOCK_START_MS})`);
  assert.equal(Number(c.REAL_TIME), 1);
});

// ---- a controller's failover, with no broker ---------------------------------

function recordWall(name, ms, steps) {
  const dir = process.env.KRABKA_TESTING_WALL_DIR || path.join(repo, 'build', 'testing');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify({ test: name, wall_ms: Math.round(ms * 1000) / 1000, steps, at: new Date().toISOString(), load: os.loadavg()[0] })}\n`);
}

test('controller failover: win, fenced mid-command by a blind successor, the standby takes over past the deadline', async (t) => {
  const t0 = performance.now();
  const cluster = Cluster.forTest(t);
  const a = cluster.client();
  const b = cluster.client();
  const ea = a.elect('controller', 'a', { recampaign: false });
  const eb = b.elect('controller', 'b');
  try {
    const { value: ta } = await within(ea.next(), "a's term"); // win
    assert.equal(ta.number, 1);
    await ta.leadership.produce('commands', 'command 1');
    for (let i = 0; ; i++) { // b's candidacy is on the roster
      const st = await a.describe('controller', { timeoutMs: WAIT });
      if (st.roster.map((e) => e.member).join() === 'a,b') break;
      assert.ok(i < 10_000, `b never joined the roster: ${st.roster.map((e) => e.member)}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    const successor = cluster.mint('controller'); // fenced in the middle of the next command
    await assert.rejects(ta.leadership.produce('commands', 'command 2'), FencedError);
    const stop = await within(ta.stopped, "a's stop");
    assert.equal(stop.reason, 'FENCED');
    assert.ok(stop.error instanceof FencedError);
    assert.deepEqual(cluster.values('commands').map(String), ['command 1']); // command 2 is absent
    let bStarted = false;
    const nb = eb.next().then((r) => { bStarted = true; return r; });
    await new Promise((r) => setImmediate(r));
    assert.equal(bStarted, false, "b started while a's lease stood");
    cluster.clock.advance(LEASE_MS); // past the deadline
    const { value: tb } = await within(nb, "b's term"); // the standby takes over
    assert.ok(tb.token.supersedes(successor));
    await tb.leadership.produce('commands', 'command 2 from b');
    assert.deepEqual(cluster.values('commands').map(String), ['command 1', 'command 2 from b']);
  } finally {
    await ea.close();
    await eb.close();
  }
  const wall = performance.now() - t0;
  recordWall('node-failover', wall, ['win', 'fenced mid-command', 'standby takes over']);
  t.diagnostic(`controller failover with no broker: ${wall.toFixed(1)} ms wall time`);
  console.log(`[node] controller failover with no broker: ${wall.toFixed(1)} ms wall time`);
});
