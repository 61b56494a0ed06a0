'use strict';
// Elector sets (client.electorSet, ElectorSet): one member's election loops
// over many roles, one emitter ('event') and one async iterator for every
// role's events. Argument checks need no broker; the set's own logic runs on
// the in-process cluster ([mem]); the failover of every role runs on
// $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1, both
// required (`make test` sets them). Every wait is bounded (within()/until():
// bounds, not timing checks).

const test = require('node:test');
const assert = require('node:assert/strict');
const k = require('..');
const { Client, ElectorSet, KrabkaError, ErrorCode } = k;
const { Cluster } = require('../lib/testing');

const WAIT = 60_000; // a bound for one wait, not a timing check
const ROLES = 12;
const SHORT = {
  'krabka.lease.ms': 3000,
  'krabka.renew.interval.ms': 1000,
  'krabka.challenge.stagger.ms': 500,
  'krabka.poll.interval.ms': 200,
};
const CLUSTERS = [
  ['tv2', 'KRABKA_BOOTSTRAP'],
  ['tv1', 'KRABKA_BOOTSTRAP_TV1'],
];
const unique = (what) => `node-set-${what}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function within(p, what, ms = WAIT) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

async function until(pred, what) {
  const end = Date.now() + WAIT;
  while (!(await pred())) {
    if (Date.now() > end) assert.fail(`${what}: not within ${WAIT} ms`);
    await sleep(50);
  }
}

const roster = async (c, role) => (await c.describe(role, { timeoutMs: 30_000 })).roster.map((e) => e.member);

/** Every event of a set, from its emitter, and per role who holds what. */
function record(s) {
  const log = [];
  s.on('event', (e) => log.push(e));
  return {
    log,
    of: (role) => log.filter((e) => e.role === role),
    count: (role, kind) => log.filter((e) => e.role === role && e.kind === kind).length,
    holding() {
      const out = new Map();
      for (const e of log) {
        if (e.kind === 'STARTED') out.set(e.role, e);
        else if (e.kind === 'STOPPED') out.delete(e.role);
      }
      return out;
    },
  };
}

/** Per role: STARTED and STOPPED alternate with the same term number, each
 *  STARTED carries the role's leadership, ELECTOR_STOPPED only between terms. */
function checkPairs(rec, roles, member) {
  for (const r of roles) {
    let open = 0;
    for (const e of rec.of(r)) {
      if (e.kind === 'STARTED') {
        assert.equal(open, 0, `${r}: STARTED ${e.term} while term ${open} runs`);
        assert.ok(e.leadership && e.leadership.role === r && e.holder === member, `${r}: STARTED carries ${e.leadership && e.leadership.role}`);
        open = e.term;
      } else if (e.kind === 'STOPPED') {
        assert.equal(e.term, open, `${r}: STOPPED ${e.term}, term ${open} runs`);
        open = 0;
      } else if (e.kind === 'ELECTOR_STOPPED') {
        assert.equal(open, 0, `${r}: ELECTOR_STOPPED while term ${open} runs`);
      }
    }
  }
}

test('electorSet checks its arguments; the library names the role', async (tc) => {
  const c = new Client({ 'bootstrap.servers': '127.0.0.1:1', 'request.timeout.ms': 2000 });
  try {
    assert.throws(() => c.electorSet(null), { name: 'TypeError', message: /member/ });
    assert.throws(() => c.electorSet('m', { recampaign: 1 }), { name: 'TypeError', message: /recampaign/ });
    assert.throws(() => c.electorSet('m', { bogus: 1 }), { name: 'TypeError', message: /bogus/ });
    assert.throws(() => c.electorSet(''), (e) => e instanceof KrabkaError);
    const s = c.electorSet('m');
    assert.ok(s instanceof ElectorSet);
    assert.throws(() => s.add(3), { name: 'TypeError', message: /role/ });
    assert.throws(() => s.remove({}), { name: 'TypeError', message: /role/ });
    assert.throws(() => s.add('o'.repeat(250)), (e) => e instanceof KrabkaError && e.code === ErrorCode.ROLE_TOO_LONG && /250 bytes/.test(e.message) && /"oooo/.test(e.message));
    assert.throws(() => s.add(Buffer.from([0x72, 0xff])), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_UTF8 && e.message.includes('"r\\xff"'));
    assert.throws(() => s.state('nowhere-role'), (e) => e instanceof KrabkaError && e.code === ErrorCode.INVALID_ARG && /nowhere-role.*not in the set/.test(e.message));
    await assert.rejects(s.remove('nowhere-role', { timeoutMs: 1000 }), (e) => e instanceof KrabkaError && /nowhere-role.*not in the set/.test(e.message));
    assert.equal(s.size, 0);
    assert.equal(s.heldCount, 0);
    await s.close();
    assert.throws(() => s.add('after-close'), (e) => e instanceof KrabkaError && e.code === ErrorCode.CLOSED);
    assert.deepEqual(await s.next(), { done: true, value: undefined });
  } finally {
    await c.close();
  }
  // a role twice, and a role held outside the set (in-process cluster)
  const cluster = Cluster.forTest(tc);
  const cc = cluster.client(SHORT);
  const role = unique('held');
  const ticker = setInterval(() => {
    if (!cluster.closed) cluster.clock.advance(20);
  }, 1);
  try {
    const l = await cc.acquire(role, 'm', { timeoutMs: WAIT });
    const s = cc.electorSet('m');
    s.add('node-set-twice');
    assert.throws(() => s.add('node-set-twice'), (e) => e.code === ErrorCode.INVALID_ARG && /node-set-twice.*already in the set/.test(e.message));
    assert.throws(() => s.add(role), (e) => e.code === ErrorCode.INVALID_ARG && e.message.includes(role) && /already holds/.test(e.message));
    assert.equal(s.size, 1);
    await s.close();
    await l.resign();
  } finally {
    clearInterval(ticker);
    await cc.close();
  }
});

test('[mem] a removed role moves alone; the release rule per role; close ends every role', { timeout: 120_000 }, async (tc) => {
  const cluster = Cluster.forTest(tc);
  const ticker = setInterval(() => {
    if (!cluster.closed) cluster.clock.advance(20);
  }, 1);
  tc.after(() => clearInterval(ticker));
  const roles = [0, 1, 2, 3, 4].map((i) => unique(`mem-${i}`));
  const ca = cluster.client({ 'client.id': 'set-a', ...SHORT });
  const cb = cluster.client({ 'client.id': 'set-b', ...SHORT });
  try {
    const sa = ca.electorSet('a');
    const ra = record(sa);
    for (const r of roles) sa.add(r);
    await until(() => ra.holding().size === roles.length, 'a holds every role');
    assert.equal(sa.size, 5);
    assert.equal(sa.heldCount, 5);
    for (const r of roles) assert.ok(['HOLDING', 'AT_RISK'].includes(sa.state(r)), sa.state(r));
    const sb = cb.electorSet('b');
    const rb = record(sb);
    for (const r of roles) sb.add(r);
    for (const r of roles) await until(async () => (await roster(ca, r)).join() === 'a,b', `b stands by for ${r}`);
    const tokens = new Map([...ra.holding()].map(([r, e]) => [r, e.token]));
    await within(sa.remove(roles[0], { timeoutMs: 30_000 }), 'remove');
    await until(() => rb.count(roles[0], 'STARTED') === 1, 'b wins the removed role');
    assert.ok(rb.holding().get(roles[0]).token.supersedes(tokens.get(roles[0])));
    assert.deepEqual(ra.of(roles[0]).filter((e) => e.kind !== 'NEW_LEADER').map((e) => [e.kind, e.reason]), [['STARTED', 'NONE'], ['STOPPED', 'RESIGNED'], ['ELECTOR_STOPPED', 'NONE']]);
    for (const r of roles.slice(1)) {
      assert.equal(ra.count(r, 'STOPPED'), 0, `${r} stopped in a`);
      assert.equal(rb.count(r, 'STARTED'), 0, `${r} started in b`);
      assert.ok(ra.holding().get(r).token.equals(tokens.get(r)));
    }
    assert.throws(() => sa.state(roles[0]), /not in the set/);

    // The release rule, with the iterator: a's iteration stands on the
    // STOPPED of role 1 (resigned through its leadership); a stays out of
    // role 1's roster until the iteration asks for the next event.
    const it = sa[Symbol.asyncIterator]();
    let ev;
    do ev = (await within(it.next(), 'a STARTED of role 1')).value;
    while (!(ev.role === roles[1] && ev.kind === 'STARTED'));
    await ev.leadership.resign({ timeoutMs: 30_000 });
    do ev = (await within(it.next(), 'a STOPPED of role 1')).value;
    while (!(ev.role === roles[1] && ev.kind === 'STOPPED'));
    assert.equal(ev.reason, 'RESIGNED');
    await until(() => rb.count(roles[1], 'STARTED') === 1, 'b wins role 1');
    await within(sb.remove(roles[1]), 'b removes role 1');
    for (let i = 0; i < 5; i++) {
      await sleep(20);
      assert.ok(!(await roster(ca, roles[1])).includes('a'), 'a campaigned for role 1 before its STOPPED was released');
    }
    const next = it.next(); // releases it
    await until(() => ra.count(roles[1], 'STARTED') === 2, 'a wins role 1 again');
    const again = ra.of(roles[1]).filter((e) => e.kind === 'STARTED');
    assert.equal(again[1].term, 2);
    await within(next, 'the next event');

    await Promise.all([sa.close(), sb.close()]);
    for (const r of roles.slice(1)) {
      const last = ra.of(r).at(-1);
      assert.equal(last.kind, 'ELECTOR_STOPPED', `${r}: last event ${last.kind}`);
      assert.equal(last.error, null);
    }
    checkPairs(ra, roles, 'a');
    checkPairs(rb, roles, 'b');
    // the iteration gives the rest of the events, then ends
    let rest = 0;
    for (let r = await sa.next(); !r.done; r = await sa.next()) rest++;
    assert.ok(rest > 0 && rest <= ra.log.length, `${rest} events left of ${ra.log.length}`);
    assert.deepEqual(await sa.next(), { done: true, value: undefined });
  } finally {
    await Promise.all([ca.close(), cb.close()]);
  }
});

for (const [tv, env] of CLUSTERS) {
  test(`a set takes every role of a dead one (${tv})`, { timeout: 240_000 }, async () => {
    const bootstrap = process.env[env];
    assert.ok(bootstrap, `${env} is not set: the elector set tests need the brokers of \`make test\``);
    const roles = Array.from({ length: ROLES }, (_, i) => unique(`${tv}-${i}`));
    const ca = new Client({ 'bootstrap.servers': bootstrap, 'client.id': `set-a-${tv}`, ...SHORT });
    const cb = new Client({ 'bootstrap.servers': bootstrap, 'client.id': `set-b-${tv}`, ...SHORT });
    try {
      const sa = ca.electorSet('a');
      const ra = record(sa);
      for (const r of roles) sa.add(r);
      await until(() => ra.holding().size === ROLES, 'a holds every role');
      const aTokens = new Map([...ra.holding()].map(([r, e]) => [r, e.token]));
      const sb = cb.electorSet('b');
      for (const r of roles) sb.add(r);
      for (const r of roles) await until(async () => (await roster(cb, r)).join() === 'a,b', `b stands by for ${r}`);
      await ca.close(); // a dies: its leaderships end without resigning (and its set closes)
      const won = new Map();
      await within((async () => {
        for await (const e of sb) {
          if (e.kind === 'STARTED') won.set(e.role, e);
          if (won.size === ROLES) break;
        }
      })(), 'b takes every role', 2 * WAIT);
      assert.equal(sb.heldCount, ROLES);
      for (const r of roles) {
        const e = won.get(r);
        assert.ok(e && e.role === r && e.holder === 'b' && e.leadership.role === r, `${r}: ${e && e.role}`);
        assert.ok(e.token.supersedes(aTokens.get(r)), `${r}: b's token ${e.token} does not supersede a's ${aTokens.get(r)}`);
      }
      await until(() => roles.every((r) => ra.count(r, 'ELECTOR_STOPPED') === 1), "a's roles end");
      for (const r of roles) {
        const last = ra.of(r).at(-1);
        assert.equal(last.kind, 'ELECTOR_STOPPED');
        // CLOSED when the loop saw the client go first, OK when the set's
        // close (which follows the client's) ended it first
        assert.ok(last.error === null || last.error.code === ErrorCode.CLOSED, `${r}: ${last.error}`);
        const stops = ra.of(r).filter((e) => e.kind === 'STOPPED');
        assert.deepEqual(stops.map((e) => e.reason), ['CLOSED'], `${r}: a's term ended without resigning`);
      }
      checkPairs(ra, roles, 'a');
      await Promise.all([sa.close(), sb.close()]);
    } finally {
      await Promise.all([ca.close(), cb.close()]);
    }
  });
}
