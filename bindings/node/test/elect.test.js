'use strict';
// The elector (client.elect) on real brokers: $KRABKA_BOOTSTRAP
// (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1, both required; the cut
// link on $KRABKA_BOOTSTRAP_X1 (a listener advertised where a kproxy
// listens) with $KRABKA_BOOTSTRAP_X1_TARGET (the broker's side). `make test`
// sets them all. Every wait is bounded (within()), every elector and client
// is closed in a finally block. The tests marked [mem] (eligibility, the
// release rule, an exception or a break in the loop body) are the elector's
// own logic and run on the in-process cluster (require('krabka-coord/testing')).
//
// From the event log of every elector: STARTED and STOPPED alternate, carry
// the same term number and count 1, 2, ...; the next term STARTs only after
// the loop body of the previous one ended (the release rule), and every
// token supersedes the one before it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const k = require('..');
const { startProxy } = require('./helpers/kproxy');
const { Cluster } = require('../lib/testing');
const { Client, Elector, Term, KrabkaError, ErrorCode, FencingToken } = k;

const unique = (what) => `node-elect-${what}-${process.pid}-${Date.now().toString(36)}`;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
const WAIT = 60_000; // a bound for one wait, not a timing check

const CLUSTERS = [
  ['tv2', 'KRABKA_BOOTSTRAP'],
  ['tv1', 'KRABKA_BOOTSTRAP_TV1'],
];

function bootstrapOf(env) {
  const b = process.env[env];
  assert.ok(b, `${env} is not set: the elector tests need the brokers of \`make test\` (tests/kafka/with-clusters.sh), or start them with tests/kafka/cluster.sh and export ${env}`);
  return b;
}

/** p, or a rejection naming `what` after ms. */
function within(p, what, ms = WAIT) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The next 'started' of el (a Term). */
const nextStart = (el, what) => within(new Promise((r) => el.once('started', r)), what);

/** Polls describe until pred(roster members, status) holds. */
async function until(client, role, pred, what) {
  const end = Date.now() + WAIT;
  let last = null;
  while (Date.now() < end) {
    last = await client.describe(role, { timeoutMs: 30_000 });
    if (pred(last.roster.map((e) => e.member), last)) return last;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}; last roster ${JSON.stringify(last && last.roster.map((e) => e.member))}, holder ${last && last.holder}`);
}

/** Records el's events into log (a shared array gives the order across electors). */
function record(el, log, name) {
  el.on('started', (t) => log.push({ ev: 'STARTED', name, el, n: t.number, token: t.token }));
  el.on('stopped', (t, s) => log.push({ ev: 'STOPPED', name, el, n: t.number, reason: s.reason }));
  el.on('atRisk', (t) => log.push({ ev: 'AT_RISK', name, el, n: t.number }));
  el.on('recovered', (t) => log.push({ ev: 'RECOVERED', name, el, n: t.number }));
  el.on('suspended', (t) => log.push({ ev: 'SUSPENDED', name, el, n: t.number }));
}

/**
 * The checks on a log: per elector, STARTED/STOPPED alternate with the same
 * number counting from 1, at-risk events fall inside a term, the last term
 * stopped, YIELD n comes after STARTED n, and STARTED n+1 after BODY_END n
 * (the release rule); across electors, every STARTED's token supersedes the
 * previous one and no two terms overlap in this process's view.
 */
function checkLog(log) {
  const per = new Map();
  let prevToken = FencingToken.NO_EPOCH;
  for (const e of log) {
    if (!per.has(e.el)) per.set(e.el, { open: null, next: 1, bodyEnded: 0, yielded: 0 });
    const s = per.get(e.el);
    const where = `${e.name}: ${e.ev} ${e.n}`;
    switch (e.ev) {
      case 'STARTED':
        assert.equal(s.open, null, `${where}: term ${s.open} had not stopped`);
        assert.equal(e.n, s.next, `${where}: terms count 1, 2, ...`);
        assert.equal(s.bodyEnded, e.n - 1, `${where} before the loop body of term ${e.n - 1} ended (the release rule)`);
        assert.ok(e.token.supersedes(prevToken), `${where}: token ${e.token} after ${prevToken}`);
        prevToken = e.token;
        s.open = e.n;
        break;
      case 'STOPPED':
        assert.equal(s.open, e.n, `${where}: not the open term`);
        s.open = null;
        s.next++;
        break;
      case 'AT_RISK':
      case 'SUSPENDED':
      case 'RECOVERED':
        assert.equal(s.open, e.n, `${where} outside its term`);
        break;
      case 'YIELD':
        assert.ok(e.n < s.next || s.open === e.n, `${where} before its STARTED`);
        assert.equal(e.n, s.yielded + 1, `${where}: terms yielded in order`);
        s.yielded = e.n;
        break;
      case 'BODY_END':
        s.bodyEnded = e.n;
        break;
      default:
        assert.fail(`unknown ${where}`);
    }
  }
  for (const [, s] of per) assert.equal(s.open, null, `a term was left open: ${s.open}`);
  return per.size;
}

/** One member: an elector on client whose loop body waits for the term's stop. */
class Side {
  constructor(name, client, role, log) {
    Object.assign(this, { name, client, role, log, el: null, ac: null, loop: null, terms: [] });
  }

  start(options = {}) {
    this.ac = new AbortController();
    const el = this.client.elect(this.role, this.name, { signal: this.ac.signal, ...options });
    this.el = el;
    record(el, this.log, this.name);
    this.loop = (async () => {
      for await (const t of el) {
        this.log.push({ ev: 'YIELD', name: this.name, el, n: t.number });
        this.terms.push(t);
        assert.equal(t.member, this.name);
        await t.stopped;
        this.log.push({ ev: 'BODY_END', name: this.name, el, n: t.number });
      }
    })();
    return el;
  }

  get term() {
    return this.el && this.el.current;
  }
}

// Two clients on the cluster of env, a fresh role, and a Side on each (a
// on c1, b on c2; neither started) sharing one log.
function pair(env, what) {
  const bootstrap = bootstrapOf(env);
  const role = unique(what);
  const [c1, c2] = ['a', 'b'].map((m) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': `elect-${what}-${m}`, ...SHORT }));
  const log = [];
  return { bootstrap, role, c1, c2, log, a: new Side('a', c1, role, log), b: new Side('b', c2, role, log) };
}

for (const [label, env] of CLUSTERS) {
  const client = (bootstrap, id, extra = {}) => new Client({ 'bootstrap.servers': bootstrap, 'client.id': id, ...SHORT, ...extra });

  test(`[${label}] two electors, 20 forced failovers (abort, close, setEligible(false), a resign through the term's leadership)`, { timeout: 600_000 }, async () => {
    const { role, c1, c2, log, a, b } = pair(env, 'failover');
    const times = { abort: [], close: [], eligible: [], resign: [] };
    try {
      const first = nextStart(a.start(), 'a to win the first term');
      await first;
      b.start();
      const kinds = ['abort', 'close', 'eligible', 'resign'];
      for (let i = 0; i < 20; i++) {
        await until(c1, role, (m, s) => m.length === 2 && s.holder !== null, `both members registered before failover ${i}`);
        const holder = a.term ? a : b;
        const standby = holder === a ? b : a;
        assert.ok(holder.term, `failover ${i}: somebody holds the role`);
        assert.equal(standby.term, null, `failover ${i}: one holder at a time`);
        const held = holder.term;
        const kind = kinds[i % kinds.length];
        const taken = nextStart(standby.el, `${standby.name} to take over (failover ${i}, ${kind})`);
        const t0 = Date.now();
        switch (kind) {
          case 'abort':
            holder.ac.abort();
            await within(holder.loop, `${holder.name}'s loop to exit after the abort`);
            break;
          case 'close':
            await within(holder.el.close(), `${holder.name}'s close`);
            await within(holder.loop, `${holder.name}'s loop to exit after close`);
            break;
          case 'eligible':
            await within(holder.el.setEligible(false), `${holder.name}'s setEligible(false)`);
            break;
          default:
            await within(held.leadership.resign({ timeoutMs: 30_000 }), `${holder.name}'s resign`);
        }
        const t = await taken;
        times[kind].push(Date.now() - t0);
        assert.equal(t.member, standby.name, `failover ${i} (${kind}): the standby won`);
        const stop = await within(held.stopped, 'the deposed term to stop');
        // RESIGNED, also when the standby's lease reached the live view
        // before the resignation's answer reached the resign call (that was
        // reported FENCED until the resignation's wait stopped ending with
        // the leadership).
        assert.equal(stop.reason, 'RESIGNED', `failover ${i} (${kind}): ${holder.name}'s term stopped ${stop.reason}: ${stop.error}`);
        assert.ok(t.token.supersedes(held.token), `failover ${i}: the new token supersedes the deposed one`);
        assert.ok(held.signal.aborted, 'the deposed term signal aborted');
        assert.equal(held.active, false);
        if (kind === 'abort' || kind === 'close') {
          assert.ok(holder.el.closed);
          holder.start();
        } else if (kind === 'eligible') {
          await within(holder.el.setEligible(true), `${holder.name}'s setEligible(true)`);
        }
      }
      console.log(`# [${label}] takeover ms (action -> standby STARTED): ${JSON.stringify(times)}`);
      // A re-campaign after each loss (resign): the same elector's next terms.
      const recampaigned = [a, b].flatMap((s) => s.terms).filter((t) => t.number > 1);
      assert.ok(recampaigned.length >= 5, `terms after the first of one elector: ${recampaigned.length}`);
    } finally {
      for (const s of [a, b]) if (s.el) await s.el.close().catch(() => {});
      await Promise.all([c1.close(), c2.close()]);
    }
    await within(Promise.all([a.loop, b.loop]), 'the loops to exit');
    const electors = checkLog(log);
    assert.ok(electors >= 10, `one log per elector (${electors})`);
    const starts = log.filter((e) => e.ev === 'STARTED').length;
    assert.equal(starts, 21, 'one STARTED per failover, plus the first');
    assert.equal(log.filter((e) => e.ev === 'STOPPED').length, 21, 'every started term stopped exactly once');
  });

  test(`[${label}] the holder's client closed abruptly: its term stops CLOSED, the standby takes over at the lease deadline`, { timeout: 180_000 }, async () => {
    const { role, c1, c2, log, a, b } = pair(env, 'abrupt');
    try {
      await nextStart(a.start(), 'a to win');
      b.start();
      await until(c2, role, (m) => m.length === 2, 'b registered');
      const held = a.term;
      const taken = nextStart(b.el, 'b to take over');
      const t0 = Date.now();
      await within(c1.close(), 'closing the holder client');
      const stop = await within(held.stopped, 'a term to stop');
      assert.equal(stop.reason, 'CLOSED');
      assert.ok(a.el.closed, "closing the client closed its elector");
      await within(a.loop, "a's loop to exit");
      const t = await taken;
      console.log(`# [${label}] abrupt close: standby STARTED after ${Date.now() - t0} ms (lease ${SHORT['krabka.lease.ms']} ms)`);
      assert.equal(t.member, 'b');
      assert.ok(t.token.supersedes(held.token));
      await assert.rejects(held.leadership.produce('no-such-topic', 'x', { timeoutMs: 10_000 }), (e) => e instanceof KrabkaError);
    } finally {
      for (const s of [a, b]) if (s.el) await s.el.close().catch(() => {});
      await Promise.all([c1.close(), c2.close()]);
    }
    checkLog(log);
  });

  test(`[${label}] a holder killed in a child process: the standby takes over`, { timeout: 180_000 }, async () => {
    const bootstrap = bootstrapOf(env);
    const role = unique('kill');
    const c2 = client(bootstrap, 'elect-kill-b');
    const log = [];
    const b = new Side('b', c2, role, log);
    const script = `
      const { Client } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
      const c = new Client({ 'bootstrap.servers': ${JSON.stringify(bootstrap)}, 'client.id': 'elect-kill-a', ...${JSON.stringify(SHORT)} });
      (async () => { for await (const t of c.elect(${JSON.stringify(role)}, 'a')) console.log('STARTED ' + t.number + ' ' + t.token); })();
    `;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((r) => child.on('exit', (code, sig) => r(sig || code)));
    try {
      const line = await within(
        new Promise((resolve, reject) => {
          readline.createInterface({ input: child.stdout }).on('line', (l) => l.startsWith('STARTED') && resolve(l));
          child.on('exit', () => reject(new Error('the child exited before it won')));
        }),
        'the child to win',
      );
      const [, n, tok] = line.split(' ');
      assert.equal(n, '1');
      b.start();
      await until(c2, role, (m) => m.join() === 'a,b', 'b registered behind a');
      const taken = nextStart(b.el, 'b to take over from the killed child');
      const t0 = Date.now();
      child.kill('SIGKILL');
      assert.equal(await within(exited, 'the child to die'), 'SIGKILL');
      const t = await taken;
      console.log(`# [${label}] kill: standby STARTED after ${Date.now() - t0} ms`);
      assert.equal(t.member, 'b');
      assert.ok(t.token.supersedes(FencingToken.parse(tok)), `${t.token} after the child's ${tok}`);
    } finally {
      child.kill('SIGKILL');
      if (b.el) await b.el.close().catch(() => {});
      await c2.close();
    }
    checkLog(log);
  });

  test(`[${label}] abort resigns: the for-await loop exits and the standby takes over at once`, { timeout: 180_000 }, async () => {
    const { role, c1, c2, log, a, b } = pair(env, 'abort');
    try {
      await nextStart(a.start(), 'a to win');
      b.start();
      await until(c2, role, (m) => m.join() === 'a,b', 'b registered behind a');
      const held = a.term;
      const taken = nextStart(b.el, 'b to take over');
      const t0 = Date.now();
      const reason = new Error('shutting down');
      a.ac.abort(reason);
      await within(a.loop, "a's for-await loop to exit");
      const t = await taken;
      console.log(`# [${label}] abort: standby STARTED ${Date.now() - t0} ms after the abort`);
      assert.equal(t.member, 'b', 'b won');
      assert.equal((await held.stopped).reason, 'RESIGNED');
      assert.ok(held.signal.aborted);
      assert.ok(held.signal.reason instanceof KrabkaError, 'the term signal reason is the stop error');
      const s = await c2.describe(role, { timeoutMs: 30_000 });
      assert.equal(s.holder, 'b');
      assert.ok(!s.roster.some((e) => e.member === 'a'), 'the resigned member left the roster');
      assert.equal(held.token.compare(t.token), -1);
    } finally {
      for (const s of [a, b]) if (s.el) await s.el.close().catch(() => {});
      await Promise.all([c1.close(), c2.close()]);
    }
    checkLog(log);
  });
}

// ---- the elector's own logic on the in-process cluster -------------------------
// (require('krabka-coord/testing')): these tests prove no safety property of
// the broker, so they run without one, in milliseconds. A ticker moves the
// cluster's manual clock 20 ms every millisecond, so the elector's timers
// (stagger, retries, renewals) fire as they would in time twenty times faster.

function memCluster(tc) {
  const cluster = Cluster.forTest(tc);
  const ticker = setInterval(() => {
    if (!cluster.closed) cluster.clock.advance(20);
  }, 1);
  tc.after(() => clearInterval(ticker));
  return cluster;
}

// pair() on an in-process cluster of the test tc.
function memPair(tc, what) {
  const cluster = memCluster(tc);
  const role = unique(what);
  const [c1, c2] = ['a', 'b'].map((m) => cluster.client({ 'client.id': `elect-${what}-${m}`, ...SHORT }));
  const log = [];
  return { cluster, role, c1, c2, log, a: new Side('a', c1, role, log), b: new Side('b', c2, role, log) };
}

test('[mem] eligibility off and on moves the member to the tail of the roster', { timeout: 60_000 }, async (tc) => {
  const cluster = memCluster(tc);
  const role = unique('elig');
  const cs = ['a', 'b', 'c'].map((m) => cluster.client({ 'client.id': `elect-elig-${m}`, ...SHORT }));
  const log = [];
  const [a, b, c] = ['a', 'b', 'c'].map((m, i) => new Side(m, cs[i], role, log));
  try {
    await nextStart(a.start(), 'a to win');
    b.start();
    await until(cs[0], role, (m) => m.join() === 'a,b', 'roster a,b');
    c.start();
    await until(cs[0], role, (m) => m.join() === 'a,b,c', 'roster a,b,c');
    await within(b.el.setEligible(false), 'b withdrawn');
    assert.equal(b.el.eligible, false);
    assert.equal(b.el.healthy().healthy, true, 'a withdrawn member is healthy');
    await until(cs[0], role, (m) => m.join() === 'a,c', 'b off the roster');
    await within(b.el.setEligible(true), 'b back');
    await until(cs[0], role, (m) => m.join() === 'a,c,b', 'b at the tail');
    // The holder withdrawn: the first standby (c, no longer b) takes over.
    const held = a.term;
    const taken = nextStart(c.el, 'c to take over');
    await within(a.el.setEligible(false), 'a withdrawn');
    const t = await taken;
    assert.equal(t.member, 'c', 'the head of the roster took over');
    assert.equal((await held.stopped).reason, 'RESIGNED');
    await within(a.el.setEligible(true), 'a back');
    await until(cs[0], role, (m) => m.join() === 'c,b,a', 'a at the tail');
  } finally {
    for (const s of [a, b, c]) if (s.el) await s.el.close().catch(() => {});
    await Promise.all(cs.map((x) => x.close()));
  }
  checkLog(log);
});

test('[mem] the release rule: no campaign while the loop body of a stopped term runs; then a re-campaign after the loss', { timeout: 60_000 }, async (tc) => {
  const { role, c1, c2, log, b } = memPair(tc, 'release');
  const ea = c1.elect(role, 'a');
  record(ea, log, 'a');
  try {
    const it = ea[Symbol.asyncIterator]();
    const r1 = await within(it.next(), 'a to win');
    const t1 = r1.value;
    log.push({ ev: 'YIELD', name: 'a', el: ea, n: 1 });
    assert.ok(t1 instanceof Term);
    assert.equal(t1.number, 1);
    assert.equal(ea.current, t1);
    assert.equal(t1.atRisk, false);
    assert.equal(typeof t1.deadline, 'bigint');
    assert.ok(t1.token.equals(t1.leadership.token), 'the leadership taken from STARTED has the term token');
    b.start();
    await until(c2, role, (m) => m.join() === 'a,b', 'b behind a');
    const taken = nextStart(b.el, 'b to take over');
    // A loss: the term resigned through its leadership (not the elector).
    await within(t1.leadership.resign({ timeoutMs: 30_000 }), 'the resign');
    const stop = await within(t1.stopped, 'term 1 to stop');
    assert.equal(stop.reason, 'RESIGNED');
    assert.equal(stop.error.code, ErrorCode.NOT_LEADER);
    await taken;
    // Still inside term 1's "loop body" (no next() yet): a stays out.
    for (let i = 0; i < 5; i++) {
      await sleep(20); // 400 ms of the cluster's clock (memCluster's ticker)
      const s = await c2.describe(role, { timeoutMs: 30_000 });
      assert.deepEqual(s.roster.map((e) => e.member), ['b'], 'a campaigns again only once JavaScript is done with term 1');
    }
    log.push({ ev: 'BODY_END', name: 'a', el: ea, n: 1 });
    const r2p = it.next(); // done with term 1: the elector campaigns again
    await until(c2, role, (m) => m.join() === 'b,a', 'a back at the tail');
    await within(b.el.close(), "b's close");
    const r2 = await within(r2p, 'a to win term 2');
    log.push({ ev: 'YIELD', name: 'a', el: ea, n: 2 });
    assert.equal(r2.value.number, 2, 'a re-campaigned after the loss: term 2');
    assert.ok(r2.value.token.supersedes(t1.token));
    // Term 1's leadership is over: its guarded writes are refused.
    await assert.rejects(t1.leadership.renew({ timeoutMs: 10_000 }), (e) => e instanceof KrabkaError && (e.code === ErrorCode.NOT_LEADER || e.code === ErrorCode.FENCED));
    await within(ea.close(), "a's close");
    assert.equal((await r2.value.stopped).reason, 'RESIGNED');
    log.push({ ev: 'BODY_END', name: 'a', el: ea, n: 2 });
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  } finally {
    await ea.close().catch(() => {});
    if (b.el) await b.el.close().catch(() => {});
    await Promise.all([c1.close(), c2.close()]);
  }
  checkLog(log);
});

test('[mem] an exception thrown in the loop body resigns the term (no term left running)', { timeout: 60_000 }, async (tc) => {
  const { role, c1, c2, log, b } = memPair(tc, 'throw');
  const ea = c1.elect(role, 'a');
  record(ea, log, 'a');
  let held = null;
  try {
    const boom = new Error('boom');
    await assert.rejects(
      within(
        (async () => {
          for await (const t of ea) {
            held = t;
            log.push({ ev: 'YIELD', name: 'a', el: ea, n: t.number });
            b.start();
            await until(c2, role, (m) => m.join() === 'a,b', 'b behind a');
            log.push({ ev: 'BODY_END', name: 'a', el: ea, n: t.number });
            throw boom;
          }
        })(),
        'the loop',
      ),
      (e) => e === boom,
    );
    assert.ok(ea.closed, 'the throw closed the elector');
    assert.equal(held.active, false, 'the term is over when the loop is left');
    assert.equal(held.stop.reason, 'RESIGNED');
    assert.ok(held.signal.aborted);
    const t = b.term || (await nextStart(b.el, 'b to take over'));
    assert.equal(t.member, 'b');
    assert.equal(held.leadership.state, 'RESIGNED');
  } finally {
    await ea.close().catch(() => {});
    if (b.el) await b.el.close().catch(() => {});
    await Promise.all([c1.close(), c2.close()]);
  }
  checkLog(log);
});

test('[mem] break out of for await closes the elector and resigns the term', { timeout: 60_000 }, async (tc) => {
  const cluster = memCluster(tc);
  const role = unique('break');
  const c = cluster.client({ 'client.id': 'elect-break', ...SHORT });
  const el = c.elect(role, 'a');
  const log = [];
  record(el, log, 'a');
  let held = null;
  try {
    await within(
      (async () => {
        for await (const t of el) {
          held = t;
          log.push({ ev: 'YIELD', name: 'a', el, n: t.number });
          log.push({ ev: 'BODY_END', name: 'a', el, n: t.number });
          break;
        }
      })(),
      'the loop',
    );
    assert.ok(el.closed, 'break closed the elector');
    assert.equal(held.stop.reason, 'RESIGNED', 'the term was resigned before the loop was left');
    const s = await c.describe(role, { timeoutMs: 30_000 });
    assert.ok(s.lease === null || Number(s.lease.deadline) <= cluster.clock.nowMs(), 'no live lease after the break');
    assert.equal(s.roster.length, 0);
  } finally {
    await el.close().catch(() => {});
    await c.close();
  }
  checkLog(log);
});

// cutLinkTest runs body({ proxy, role, observer, log, el, it, t }) once "a"
// won a fresh role (unique(what)) through a kproxy on $KRABKA_BOOTSTRAP_X1:
// a's client (client.id elect-WHAT, with props) reaches the cluster only
// through the proxy, the observer directly. Whatever body does, the link is
// healed and everything closed after it; then the log is checked.
async function cutLinkTest(what, props, electOptions, body) {
  const bootstrap = bootstrapOf('KRABKA_BOOTSTRAP');
  const x1 = process.env.KRABKA_BOOTSTRAP_X1;
  const target = process.env.KRABKA_BOOTSTRAP_X1_TARGET;
  assert.ok(x1 && target, 'KRABKA_BOOTSTRAP_X1 and KRABKA_BOOTSTRAP_X1_TARGET are not set: the cut-link test needs the extra listener of `make test` (cluster.sh start --extra-listeners 1:PORT, then cluster.sh env)');
  const proxy = await startProxy(x1, target);
  const role = unique(what);
  const c = new Client({ 'bootstrap.servers': x1, 'client.id': `elect-${what}`, ...SHORT, ...props });
  const observer = new Client({ 'bootstrap.servers': bootstrap, 'client.id': `elect-${what}-observer`, ...SHORT });
  const log = [];
  const el = c.elect(role, 'a', electOptions);
  record(el, log, 'a');
  try {
    const it = el[Symbol.asyncIterator]();
    const { value: t } = await within(it.next(), 'a to win through the proxy');
    log.push({ ev: 'YIELD', name: 'a', el, n: t.number });
    await body({ proxy, role, observer, log, el, it, t });
  } finally {
    await proxy.send('heal').catch(() => {});
    await el.close().catch(() => {});
    await Promise.all([c.close(), observer.close()]);
    await proxy.quit();
  }
  checkLog(log);
}

test('[tv2] at risk before the term stops EXPIRED or LOST_AT_RISK under a cut link', { timeout: 180_000 }, async () => {
  // request.timeout.ms bounds the close after the heal.
  await cutLinkTest('cut', { 'request.timeout.ms': 5000 }, { recampaign: false }, async ({ proxy, role, observer, log, el, it, t }) => {
    const s = await observer.describe(role, { timeoutMs: 30_000 });
    assert.equal(s.holder, 'a');
    let healthAtRisk = null;
    let stateAtRisk = null;
    let atRiskAt = 0;
    const atRisk = within(
      new Promise((r) =>
        t.once('atRisk', (d) => {
          atRiskAt = Date.now();
          stateAtRisk = el.state();
          healthAtRisk = el.healthy();
          r(d);
        }),
      ),
      'AT_RISK',
    );
    await proxy.send('cut');
    const cutAt = Date.now();
    const deadline = await atRisk;
    assert.equal(t.atRisk, true);
    assert.equal(healthAtRisk.healthy, false, 'unhealthy while at risk');
    assert.equal(stateAtRisk, 'AT_RISK');
    const stop = await within(t.stopped, 'the term to stop');
    const stoppedAt = Date.now();
    assert.ok(['EXPIRED', 'LOST_AT_RISK'].includes(stop.reason), `stopped ${stop.reason}`);
    const kinds = log.filter((e) => e.el === el && (e.ev === 'AT_RISK' || e.ev === 'STOPPED')).map((e) => e.ev);
    assert.deepEqual(kinds.slice(0, 2), ['AT_RISK', 'STOPPED'], 'AT_RISK strictly before the stop');
    console.log(`# [tv2] cut link: AT_RISK ${atRiskAt - cutAt} ms after the cut, ${Number(deadline) - atRiskAt} ms before the deadline; STOPPED ${stop.reason} ${stoppedAt - cutAt} ms after the cut, ${Number(deadline) - stoppedAt} ms before the deadline`);
    assert.ok(t.signal.aborted);
    log.push({ ev: 'BODY_END', name: 'a', el, n: t.number });
    await proxy.send('heal');
    // recampaign false: the iteration ends after the lost term, and the
    // loop's end says why as a code (its ELECTOR_STOPPED event).
    assert.deepEqual(await within(it.next(), 'the iteration to end'), { done: true, value: undefined });
    assert.equal(el.state(), 'STOPPED');
    assert.ok(el.error instanceof KrabkaError && el.error.code === ErrorCode.LEASE_EXPIRED, `the loop ended with ${el.error}`);
  });
});

test('[tv2] ride outage: a cut link past the lease suspends the term; healed, it resumes under the same token', { timeout: 180_000 }, async () => {
  const props = { 'request.timeout.ms': 2000, 'krabka.elector.ride.outage': 'true' };
  await cutLinkTest('ride', props, undefined, async ({ proxy, role, observer, log, el, t }) => {
    const suspended = within(new Promise((r) => t.once('suspended', r)), 'SUSPENDED');
    await proxy.send('cut');
    const deadline = await suspended;
    assert.equal(t.suspended, true);
    assert.equal(el.state(), 'SUSPENDED');
    assert.equal(el.healthy().healthy, false);
    // Past the lease deadline: the term is kept.
    while (Date.now() <= Number(deadline) + 1000) await sleep(100);
    assert.equal(t.active, true, 'the suspended term outlived its lease deadline');
    assert.ok(!t.signal.aborted);
    const recovered = within(new Promise((r) => t.once('recovered', r)), 'RECOVERED');
    await proxy.send('heal');
    await recovered;
    assert.equal(t.suspended, false);
    assert.equal(el.state(), 'HOLDING');
    const s = await observer.describe(role, { timeoutMs: 30_000 });
    assert.equal(s.holder, 'a');
    assert.equal(s.token.toString(), t.token.toString(), 'resumed under the token it won');
    assert.equal(s.current, true);
    log.push({ ev: 'BODY_END', name: 'a', el, n: t.number });
  });
});

// ---- bad input and use after close ---------------------------------------------

test('elect: wrong types, over-long names, invalid signals and options fail with errors that name the problem', async () => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'client.id': 'elect-misuse' });
  try {
    for (const [args, type, re] of [
      [[1, 'm'], TypeError, /role must be a string or a Buffer, got a number/],
      [[null, 'm'], TypeError, /role .* got null/],
      [[undefined, 'm'], TypeError, /role .* got a undefined/],
      [[{}, 'm'], TypeError, /role .* got an object/],
      [['r', 7], TypeError, /member .* got a number/],
      [['r', null], TypeError, /member .* got null/],
      [['r'], TypeError, /member .* got a undefined/],
      [['r', ['m']], TypeError, /member .* got an array/],
      [['r', 'm', 5], TypeError, /options must be an object/],
      [['r', 'm', 'x'], TypeError, /options must be an object/],
      [['r', 'm', []], TypeError, /options must be an object/],
      [['r', 'm', { signal: 'no' }], TypeError, /options.signal must be an AbortSignal, got a string/],
      [['r', 'm', { signal: {} }], TypeError, /options.signal must be an AbortSignal, got an object/],
      [['r', 'm', { signal: new AbortController() }], TypeError, /options.signal must be an AbortSignal/],
      [['r', 'm', { recampaign: 'no' }], TypeError, /options.recampaign must be a boolean/],
      [['r', 'm', { eligible: 0 }], TypeError, /options.eligible must be a boolean/],
      [['r', 'm', { recampain: false }], TypeError, /unknown option 'recampain'/],
      [['r', 'm', { metadata: 5 }], TypeError, /metadata/],
    ]) {
      assert.throws(() => c.elect(...args), (e) => e instanceof type && re.test(e.message), `elect(${args.map((a) => JSON.stringify(a)).join(', ')})`);
    }
    for (const [args, code] of [
      [['r'.repeat(250), 'm'], ErrorCode.ROLE_TOO_LONG],
      [['r', 'm'.repeat(250)], ErrorCode.MEMBER_TOO_LONG],
      [['', 'm'], ErrorCode.EMPTY_ROLE],
      [['r', ''], ErrorCode.EMPTY_MEMBER],
      [['\ud800', 'm'], ErrorCode.INVALID_UTF8],
      [[Buffer.from([0xff, 0xfe]), 'm'], ErrorCode.INVALID_UTF8],
      [['r', 'm', { metadata: Buffer.alloc(k.MAX_METADATA_BYTES + 1) }], ErrorCode.INVALID_ARG],
    ]) {
      assert.throws(() => c.elect(...args), (e) => e instanceof KrabkaError && e.code === code && /role|member|metadata/.test(e.message), `elect(${code})`);
    }
    assert.equal(require('../lib/calls').stats().streams, 0, 'no elector was left registered');
  } finally {
    await c.close();
  }
  assert.throws(() => c.elect('r', 'm'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED, 'elect on a closed client');
});

test('elector: setEligible and healthy check their arguments; use after close is an error, never a crash', { timeout: 120_000 }, async () => {
  const bootstrap = bootstrapOf('KRABKA_BOOTSTRAP');
  const c = new Client({ 'bootstrap.servers': bootstrap, 'client.id': 'elect-closed', ...SHORT });
  try {
    const role = unique('closed');
    // An already aborted signal: nothing starts, the iteration is empty.
    const pre = c.elect(role, 'pre', { signal: AbortSignal.abort() });
    assert.ok(pre instanceof Elector);
    assert.ok(pre.closed);
    for await (const t of pre) assert.fail(`a term ${t.number} from an aborted elector`);
    const s0 = await c.describe(role, { timeoutMs: 30_000 });
    assert.equal(s0.roster.length, 0, 'an elector created with an aborted signal registers nothing');

    const el = c.elect(role, 'a', { eligible: false });
    assert.equal(el.role, role);
    assert.equal(el.member, 'a');
    assert.equal(el.eligible, false);
    assert.deepEqual(el.healthy(), { healthy: true, reason: null });
    assert.equal(el.state(), 'CAMPAIGNING', 'a withdrawn member is between terms');
    assert.equal(el.error, null);
    for (const bad of [undefined, null, 1, 'yes', {}]) {
      assert.throws(() => el.setEligible(bad), (e) => e instanceof TypeError && /eligible must be a boolean/.test(e.message));
    }
    assert.throws(() => el.setEligible(true, 5), TypeError);
    assert.throws(() => el.setEligible(true, { timeoutMs: -1 }), RangeError);
    assert.throws(() => el.setEligible(true, { timeoutMs: 1.5 }), RangeError);
    // Withdrawn from the start: not in the roster.
    await sleep(500);
    assert.equal((await c.describe(role, { timeoutMs: 30_000 })).roster.length, 0);
    await within(el.setEligible(true), 'setEligible(true)');
    const { value: t } = await within(el.next(), 'the win');
    assert.equal(t.member, 'a');
    assert.equal(el.state(), 'HOLDING');
    await within(el.close(), 'close');
    assert.equal(el.state(), 'STOPPED');
    assert.equal(el.error, null, 'close ended the loop: no error');
    assert.equal((await t.stopped).reason, 'RESIGNED', 'close resigned the term');
    assert.equal(el.close(), el.close(), 'close is idempotent');
    assert.throws(() => el.healthy(), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED && /closed/.test(e.message));
    assert.throws(() => el.setEligible(true), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
    assert.deepEqual(await el.next(), { done: true, value: undefined });
    assert.deepEqual(await el.return(), { done: true, value: undefined });
    await assert.rejects(t.leadership.produce('no-such-topic', 'x', { timeoutMs: 10_000 }), (e) => e instanceof KrabkaError && (e.code === ErrorCode.NOT_LEADER || e.code === ErrorCode.FENCED || e.code === ErrorCode.CLOSED));
    const s = await c.describe(role, { timeoutMs: 30_000 });
    assert.ok(s.lease === null || Number(s.lease.deadline) <= Date.now(), 'no live lease after close');
  } finally {
    await c.close();
  }
  assert.equal(require('../lib/calls').stats().streams, 0, 'every elector stream dropped');
});

