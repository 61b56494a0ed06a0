'use strict';
// require('krabka-coord/testing'): test aids. An in-process cluster with a
// manual clock and faults, so that a test of a controller's failover runs in
// milliseconds without a broker (include/krabka_coord_testing.h).
//
// A Cluster registers an in-process cluster for the whole process under a
// name; a Client whose config says 'bootstrap.servers': 'mem://NAME'
// (cluster.bootstrap) joins it instead of connecting to Kafka. It is the
// project's in-memory model of what the library relies on from Kafka
// (core/memtransport): one order per partition, transactions with the
// coordinator's minting and fencing, read_committed visibility, describe.
// The cluster's clock moves only when the test advances it (unless created
// with realTime: true); leases, renewals, the standbys' stagger and the
// at-risk margin follow it. Request timeouts (timeoutMs) stay real time.
//
//   const { test } = require('node:test');
//   const { Cluster } = require('krabka-coord/testing');
//   test('failover', async (t) => {
//     const cluster = Cluster.forTest(t);           // closed when the test ends
//     const a = cluster.client(), b = cluster.client();
//     const lead = await a.acquire('controller', 'a');
//     cluster.mint('controller');                    // a blind successor
//     await assert.rejects(lead.produce('commands', 'x'), FencedError);
//     cluster.kill(a);                               // no resign: the lease stays
//     cluster.clock.advance(30_000);                 // past its deadline
//     await b.acquire('controller', 'b');            // the standby takes over
//   });
//
// Errors: wrong JavaScript types throw TypeError naming the argument; what
// the library refuses throws KrabkaError with its code (INVALID_ARG for a
// name with a character outside [A-Za-z0-9._-], a clock moved backwards, a
// control on a client that is not in-process; the message names it).
//
// The declarations of the testing header's functions are lib/testing_abi.js,
// written by hand (the generator reads only include/krabka_coord.h) and
// checked against include/krabka_coord_testing.h by test/testing.test.js.

const { koffi, native, ERRSTR_SIZE } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const { nameBytes, int64Arg, intArg, big, describe } = require('./args');
const { Client, clientHandle } = require('./client');
const { FencingToken } = require('./token');
const { TESTING_DECLS } = require('./testing_abi');

/** The longest cluster name in bytes (KRABKA_TESTING_NAME_MAX). */
const NAME_MAX = 64;
/** krabka_testing_cluster_new flag: the clock follows the system clock. */
const REAL_TIME = 1;
/** What a manual clock reads when its cluster is created (epoch ms,
 *  2026-01-01T00:00:00Z; KRABKA_TESTING_CLOCK_START_MS). */
const CLOCK_START_MS = 1767225600000;


let tfns = null;
let clusterType = null; // koffi's type names are global: defined once

/**
 * The testing functions of the loaded library (declared once). Throws an
 * Error with code 'KRABKA_LIBRARY_INCOMPLETE' and `missing` when the library
 * lacks them (a build without the test aids).
 */
function testingFns() {
  if (tfns) return tfns;
  const n = native();
  if (!clusterType) clusterType = koffi.pointer('krabka_testing_cluster_t', koffi.opaque('krabka_testing_cluster'));
  const out = {};
  const missing = [];
  for (const [name, decl] of TESTING_DECLS) {
    try {
      out[name] = n.lib.func(decl);
    } catch (e) {
      missing.push(`${name} (${e.message})`);
    }
  }
  if (missing.length > 0) {
    const err = new Error(`krabka-coord/testing: ${n.file} lacks the functions of include/krabka_coord_testing.h: ${missing.join(', ')}; ` +
      'the test aids need a libkrabka_coord built with the in-process cluster (this version\'s)');
    err.code = 'KRABKA_LIBRARY_INCOMPLETE';
    err.missing = missing.map((m) => m.split(' ')[0]);
    throw err;
  }
  tfns = Object.freeze(out);
  return tfns;
}

let names = 0;

/** A cluster name no other cluster takes: `<prefix>-<pid>-<n>-<random>`. */
function uniqueName(prefix = 'js') {
  if (typeof prefix !== 'string') throw new TypeError(`prefix must be a string, got ${describe(prefix)}`);
  return `${prefix.slice(0, 24)}-${process.pid}-${++names}-${Math.random().toString(16).slice(2, 10)}`;
}

const errbuf = () => Buffer.alloc(ERRSTR_SIZE);

/** Calls fn(...args, errstr, size) and throws the library's error. */
function call(fn, ...args) {
  const eb = errbuf();
  check(fn(...args, eb, eb.length), eb);
}

/** Milliseconds to advance by: a non-negative safe integer number or a bigint. */
function advanceArg(ms) {
  if (typeof ms !== 'number' && typeof ms !== 'bigint') {
    throw new TypeError(`clock.advance(ms): ms must be a number of milliseconds or a bigint, got ${describe(ms)}`);
  }
  if (typeof ms === 'number' && !Number.isInteger(ms)) {
    throw new RangeError(`clock.advance(ms): ms must be a whole number of milliseconds, got ${ms}`);
  }
  return int64Arg(ms, 'clock.advance(ms): ms');
}

/**
 * The clock of one in-process cluster (epoch milliseconds). A manual clock
 * moves only by advance(); a real-time one follows the system clock.
 */
class Clock {
  #cluster; // () => the cluster's live handle
  #realTime;

  constructor(handleOf, realTime) {
    this.#cluster = handleOf;
    this.#realTime = realTime;
  }

  /** True when the clock follows the system clock (advance() is refused). */
  get realTime() {
    return this.#realTime;
  }

  /** The cluster's time, epoch milliseconds (a number). Never blocks. */
  nowMs() {
    const out = [0];
    call(testingFns().krabka_testing_clock_now, this.#cluster(), out);
    return Number(out[0]);
  }

  /** nowMs() as a Date. */
  now() {
    return new Date(this.nowMs());
  }

  /**
   * Moves the clock forward by ms milliseconds (a whole number or a bigint;
   * 0 changes nothing) and wakes every timer of the cluster's clients whose
   * time has come (a renewal, a standby's wait for a lease's deadline, an
   * at-risk mark), except those of paused clients. Returns the new time
   * (epoch ms). It does not wait for what the woken timers do: await the
   * effect you need (a term, an event, an acquire). Never blocks.
   * TypeError for another type, RangeError for a fraction; KrabkaError
   * INVALID_ARG for a negative amount (the clock never goes backwards) and
   * on a real-time clock.
   */
  advance(ms) {
    const v = advanceArg(ms);
    call(testingFns().krabka_testing_clock_advance, this.#cluster(), v);
    return this.nowMs();
  }
}

/**
 * An in-process cluster registered for this process as mem://<name>.
 *
 *   new Cluster({ name, partitions, realTime })
 *
 * name: 1 to 64 ASCII letters, digits, '.', '_', '-' (default: a unique
 * one). partitions: the partition count of every topic of the cluster (the
 * coordination topic and the topics guarded writes go to; default 1).
 * realTime: the clock follows the system clock instead of moving only when
 * advanced. close() (or `await using`) closes the clients made by client()
 * and unregisters the name; clients made elsewhere and still on it fail
 * with TRANSPORT from then on.
 */
class Cluster {
  #handle;
  #name;
  #partitions;
  #realTime;
  #clients = [];
  #minter = null;
  #closed = null;

  constructor(options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`new Cluster(options): options must be an object such as { partitions: 1 }, got ${describe(options)}`);
    }
    const name = options.name === undefined || options.name === null ? uniqueName() : options.name;
    if (typeof name !== 'string') throw new TypeError(`new Cluster(options): options.name must be a string, got ${describe(name)}`);
    const partitions = options.partitions === undefined ? 1 : intArg(options.partitions, 'new Cluster(options): options.partitions', 32);
    const realTime = options.realTime === undefined ? false : options.realTime;
    if (typeof realTime !== 'boolean') {
      throw new TypeError(`new Cluster(options): options.realTime must be a boolean, got ${describe(realTime)}`);
    }
    const f = testingFns();
    const raw = nameBytes(name, 'new Cluster(options): options.name');
    const out = [null];
    call(f.krabka_testing_cluster_new, raw.length ? raw : Buffer.alloc(1), raw.length, partitions, realTime ? REAL_TIME : 0, out);
    this.#handle = out[0];
    this.#name = f.krabka_testing_cluster_name(this.#handle) || name;
    this.#partitions = partitions;
    this.#realTime = realTime;
    /** The cluster's clock. */
    this.clock = new Clock(() => this.#live(), realTime);
  }

  /**
   * A Cluster closed when the node:test test `t` ends (t.after), so a test
   * cannot leak one: `const cluster = Cluster.forTest(t, { partitions: 3 })`.
   */
  static forTest(t, options) {
    if (t === null || typeof t !== 'object' || typeof t.after !== 'function') {
      throw new TypeError(`Cluster.forTest(t): t must be the node:test context (with t.after), got ${describe(t)}`);
    }
    const c = new Cluster(options);
    t.after(() => c.close());
    return c;
  }

  #live() {
    if (this.#closed) throw makeError(ErrorCode.CLOSED, 'this in-process Cluster was closed');
    return this.#handle;
  }

  /** The name it is registered under. */
  get name() {
    return this.#name;
  }

  /** 'mem://<name>': the bootstrap.servers of its clients. */
  get bootstrap() {
    return `mem://${this.#name}`;
  }

  get partitions() {
    return this.#partitions;
  }

  get realTime() {
    return this.#realTime;
  }

  /** True once close() was called. */
  get closed() {
    return this.#closed !== null;
  }

  /**
   * A client config on this cluster: bootstrap.servers plus `extra`'s
   * properties. A bootstrap.servers in extra is refused (the cluster sets it).
   */
  config(extra = {}) {
    if (extra === null || typeof extra !== 'object' || Array.isArray(extra)) {
      throw new TypeError(`cluster.config(extra): extra must be an object of property names, got ${describe(extra)}`);
    }
    if (Object.prototype.hasOwnProperty.call(extra, 'bootstrap.servers')) {
      throw new RangeError(`cluster.config(extra): bootstrap.servers is the cluster's (${this.bootstrap}); leave it out`);
    }
    return { ...extra, 'bootstrap.servers': this.bootstrap };
  }

  /** A new Client on this cluster (config(extra)); close() closes it. */
  client(extra = {}) {
    this.#live();
    const c = new Client(this.config(extra));
    this.#clients.push(c);
    return c;
  }

  #control(what, fn, client, ...args) {
    const h = clientHandle(client, `cluster.${what}(client): client`);
    this.#live();
    call(fn, h, ...args);
  }

  /** Cuts the client's link: every request fails at once (KrabkaError
   *  TRANSPORT) until heal(). Its leaderships go at risk and expire by the
   *  clock. INVALID_ARG for a client that is not in-process or was killed. */
  cut(client) {
    this.#control('cut', testingFns().krabka_testing_client_set_cut, client, 1);
  }

  /** Heals the client's cut link. */
  heal(client) {
    this.#control('heal', testingFns().krabka_testing_client_set_cut, client, 0);
  }

  /** Pauses the client (SIGSTOP): its requests hold, its view of the clock
   *  freezes, its timers (renewal, at-risk) do not fire. */
  pause(client) {
    this.#control('pause', testingFns().krabka_testing_client_set_paused, client, 1);
  }

  /** Resumes a paused client: its held requests go on and it sees the
   *  cluster's time jump, as a resumed process does. */
  resume(client) {
    this.#control('resume', testingFns().krabka_testing_client_set_paused, client, 0);
  }

  /** Kills the client (its process died): none of its requests reaches the
   *  cluster again, it neither resigns nor leaves (also not on close()):
   *  its leases stay until their deadline. Idempotent. Close it as usual. */
  kill(client) {
    this.#control('kill', testingFns().krabka_testing_client_kill, client);
  }

  /** false: every request of every client fails at once (TRANSPORT), until
   *  setAvailable(true). */
  setAvailable(available) {
    if (typeof available !== 'boolean') {
      throw new TypeError(`cluster.setAvailable(available): available must be a boolean, got ${describe(available)}`);
    }
    call(testingFns().krabka_testing_cluster_set_available, this.#live(), available ? 1 : 0);
  }

  /**
   * A blind successor: mints a new token for `role` at the cluster's
   * transaction coordinator without writing a lease and returns it (a
   * FencingToken). The holder does not learn of it: its next guarded write,
   * renewal or resign rejects with FencedError, and nothing of that write
   * is committed. The transactional id is the one options.client uses (its
   * krabka.role.prefix plus role); without it, that of a client with the
   * default config (no prefix). Works while the holder is cut, paused or
   * killed. DecodeError for a role the contract refuses, TRANSPORT while
   * the cluster is unavailable.
   */
  mint(role, options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`cluster.mint(role, options): options must be an object such as { client }, got ${describe(options)}`);
    }
    const r = nameBytes(role, 'cluster.mint(role): role');
    const h = options.client === undefined ? clientHandle(this.#mintClient(), 'minter') : clientHandle(options.client, 'cluster.mint(role, options): options.client');
    const out = {};
    call(testingFns().krabka_testing_mint, h, r.length ? r : Buffer.alloc(1), r.length, out);
    return FencingToken.fromC(out);
  }

  #mintClient() {
    this.#live();
    if (!this.#minter) this.#minter = new Client({ 'bootstrap.servers': this.bootstrap });
    return this.#minter;
  }

  /**
   * The committed records of `partition` (default 0) of `topic`, in offset
   * order: [{ offset (bigint), value (Buffer, or null for a null value) }].
   * read_committed: a refused or aborted write left nothing. Empty for a
   * topic nothing was written to. INVALID_ARG for an empty topic or a
   * partition out of range.
   */
  records(topic, partition = 0) {
    if (typeof topic !== 'string') throw new TypeError(`cluster.records(topic): topic must be a string, got ${describe(topic)}`);
    if (topic.includes('\0')) throw new RangeError('cluster.records(topic): topic must not contain NUL characters');
    const p = intArg(partition, 'cluster.records(topic, partition): partition', 32);
    const f = testingFns();
    const h = this.#live();
    const count = [0];
    call(f.krabka_testing_topic_count, h, topic, p, count);
    const out = [];
    for (let i = 0n; i < big(count[0]); i++) {
      const offset = [0];
      const len = [0];
      const isNull = [0];
      let eb = errbuf();
      let code = f.krabka_testing_topic_record(h, topic, p, i, offset, null, 0, len, isNull, eb, eb.length);
      let value = null;
      if (code === ErrorCode.BUFFER_TOO_SMALL) {
        value = Buffer.alloc(Number(len[0]));
        eb = errbuf();
        code = f.krabka_testing_topic_record(h, topic, p, i, offset, value, value.length, len, isNull, eb, eb.length);
        check(code, eb);
      } else {
        check(code, eb);
        value = isNull[0] ? null : Buffer.alloc(0);
      }
      out.push({ offset: big(offset[0]), value });
    }
    return out;
  }

  /** The values of records(topic, partition). */
  values(topic, partition = 0) {
    return this.records(topic, partition).map((r) => r.value);
  }

  /**
   * Closes the clients made by client() (their leaderships end without
   * resigning), then unregisters the name and destroys the cluster.
   * Idempotent: every call returns the same Promise.
   */
  close() {
    if (!this.#closed) {
      const clients = this.#minter ? [...this.#clients, this.#minter] : [...this.#clients];
      this.#clients = [];
      this.#minter = null;
      const handle = this.#handle;
      this.#closed = Promise.allSettled(clients.map((c) => c.close())).then(() => {
        const code = testingFns().krabka_testing_cluster_destroy(handle);
        if (code !== 0) throw makeError(code, 'destroying the in-process cluster');
      });
    }
    return this.#closed;
  }

  /** Same as close() (for `await using cluster = new Cluster()`). */
  [Symbol.asyncDispose]() {
    return this.close();
  }
}

module.exports = { Cluster, Clock, uniqueName, NAME_MAX, CLOCK_START_MS };
