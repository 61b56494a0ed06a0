'use strict';
// Watching a role: client.watch(role) resolves to a Watch, an async
// iterator of watch events. Each next() waits on the library's threads and
// completes through the process's event queue (no libuv pool thread).

const { koffi, native, T } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const events = require('./events');
const { FencingToken, leaseFromC, nameFrom } = require('./pure');
const { big, signalArg, abortError } = require('./args');
const { metadataFrom } = require('./headers');

const KINDS = ['HOLDER_CHANGED', 'LEASE_RENEWED', 'ROSTER_CHANGED', 'ROLE_FREE'];

/** Copies a krabka_watch_event_t (valid only during the drain) into JS values. */
function readWatchEvent(p) {
  const e = koffi.decode(p, T.watchEvent);
  const n = Number(e.roster_count);
  const rows = n > 0 ? koffi.decode(e.roster, T.rosterEntry, n) : [];
  return Object.freeze({
    kind: KINDS[e.kind] ?? `UNKNOWN(${e.kind})`,
    role: nameFrom(e.role, e.role_len),
    holder: e.has_holder ? nameFrom(e.holder, e.holder_len) : null,
    token: FencingToken.fromC(e.token),
    prevHolder: e.has_prev_holder ? nameFrom(e.prev_holder, e.prev_holder_len) : null,
    prevToken: FencingToken.fromC(e.prev_token),
    lease: e.has_lease ? leaseFromC(e.lease) : null,
    roster: Object.freeze(
      rows.map((r) => Object.freeze({ member: nameFrom(r.member, r.member_len), offset: big(r.offset), registeredAt: big(r.registered_at), rank: r.rank })),
    ),
    offset: big(e.offset),
    atMs: big(e.at_ms),
  });
}
events.setWatchReader(readWatchEvent);

const finalizer = new FinalizationRegistry((handle) => {
  try {
    native().fns.krabka_watch_destroy.async(handle, () => {});
  } catch {
    /* process is exiting */
  }
});

const DONE = Object.freeze({ done: true, value: undefined });

/**
 * A subscription to the changes of one role (client.watch). Holds no epoch
 * and registers nothing. `for await (const ev of watch)`; the iteration
 * ends when the watch or its client is closed. A pending next() keeps the
 * process alive.
 *
 * One krabka_watch_next_async call at a time: the library keeps the
 * metadata of the event it last posted on the watch (krabka_watch_metadata),
 * which is the metadata of the event being delivered only while no other
 * call of the watch is in flight. next() calls made while one is in flight
 * wait for it, in order.
 */
class Watch {
  #handle;
  #closed = null;
  #late = []; // events that arrived when no next() was waiting (aborted)
  #inflight = 0; // tag of the library call in flight (0: none)
  #waiters = []; // next() calls waiting for it: { resolve, reject, done }

  /** @internal */
  constructor(handle, role) {
    this.#handle = handle;
    this.role = role;
    finalizer.register(this, handle, this);
  }

  /**
   * The next event: { done: false, value } or { done: true } once the watch
   * ended. options.signal (an AbortSignal): when it aborts, the Promise
   * rejects at once with an AbortError and no longer keeps the process
   * alive; an event that arrives after the abort is not lost: the next
   * next() returns it.
   */
  next(options) {
    const signal = signalArg(options, 'next');
    if (signal && signal.aborted) return Promise.reject(abortError(signal, 'next'));
    if (this.#late.length > 0) return Promise.resolve(this.#late.shift());
    if (this.#closed) return Promise.resolve(DONE);
    return new Promise((resolve, reject) => {
      const w = { resolve, reject, done: () => {} };
      if (signal) {
        const onAbort = () => {
          const i = this.#waiters.indexOf(w);
          if (i < 0) return;
          this.#waiters.splice(i, 1);
          this.#keep();
          reject(abortError(signal, 'next'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        w.done = () => signal.removeEventListener('abort', onAbort);
      }
      this.#waiters.push(w);
      if (this.#inflight) this.#keep();
      else this.#start();
    });
  }

  // The call in flight keeps the process alive while a next() waits for it.
  #keep() {
    if (!this.#inflight) return;
    if (this.#waiters.length > 0) events.retain(this.#inflight);
    else events.release(this.#inflight);
  }

  #start() {
    const tag = events.expect((e) => this.#completed(e), true);
    this.#inflight = tag;
    const code = native().fns.krabka_watch_next_async(this.#handle, 0, events.queueHandle(), tag);
    if (code !== 0) {
      events.forget(tag);
      this.#inflight = 0;
      const err = code === ErrorCode.INVALID_HANDLE ? null : makeError(code, 'krabka_watch_next_async');
      for (const w of this.#waiters.splice(0)) {
        w.done();
        if (err) w.reject(err);
        else w.resolve(DONE);
      }
    }
  }

  // Runs in the drain of the event queue, before any other call of this
  // watch can start: the library's metadata is this event's.
  #completed(e) {
    this.#inflight = 0;
    let r = null;
    if (e.err === 0 && e.watchEvent) r = { done: false, value: this.#withMetadata(e.watchEvent) };
    else if (e.err === ErrorCode.CLOSED || e.err === ErrorCode.INVALID_HANDLE || e.err === 0) r = DONE;
    const w = this.#waiters.shift();
    if (w) {
      w.done();
      if (r) w.resolve(r);
      else w.reject(events.eventError(e));
    } else if (r && !r.done) {
      this.#late.push(r);
    }
    if (this.#waiters.length === 0) return;
    if (this.#closed || (r && r.done)) {
      for (const x of this.#waiters.splice(0)) {
        x.done();
        x.resolve(DONE);
      }
    } else {
      this.#start();
    }
  }

  #withMetadata(ev) {
    let metadata = null;
    try {
      metadata = metadataFrom((buf, size, len) => native().fns.krabka_watch_metadata(this.#handle, buf, size, len));
    } catch {
      // the watch was destroyed meanwhile (close()): its event goes without
    }
    return Object.freeze({ ...ev, metadata });
  }

  /** Ends the watch (idempotent); pending next() calls resolve done. */
  close() {
    if (!this.#closed) {
      finalizer.unregister(this);
      const fns = native().fns;
      this.#closed = new Promise((resolve) => fns.krabka_watch_destroy.async(this.#handle, () => resolve()));
    }
    return this.#closed;
  }

  /** Called by `break` in for await: closes the watch. */
  async return() {
    await this.close();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

module.exports = { Watch, readWatchEvent, KINDS, check };
