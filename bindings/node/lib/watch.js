'use strict';
// Watching a role: client.watch(role) resolves to a Watch, an async
// iterator of watch events. Each next() waits on the library's threads and
// completes through the process's event queue (no libuv pool thread).

const { koffi, native, T } = require('./native');
const { check, makeError, ErrorCode } = require('./errors');
const events = require('./events');
const { FencingToken, leaseFromC, nameFrom } = require('./pure');
const { big, signalArg, abortError } = require('./args');

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

/**
 * A subscription to the changes of one role (client.watch). Holds no epoch
 * and registers nothing. `for await (const ev of watch)`; the iteration
 * ends when the watch or its client is closed. A pending next() keeps the
 * process alive.
 */
class Watch {
  #handle;
  #closed = null;
  #late = []; // events that arrived for an aborted next()

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
    return new Promise((resolve, reject) => {
      if (this.#closed) return resolve({ done: true, value: undefined });
      let aborted = false;
      let tag = 0;
      const onAbort = () => {
        aborted = true;
        events.release(tag);
        reject(abortError(signal, 'next'));
      };
      tag = events.expect((e) => {
        if (signal) signal.removeEventListener('abort', onAbort);
        let r;
        if (e.err === 0 && e.watchEvent) r = { done: false, value: e.watchEvent };
        else if (e.err === ErrorCode.CLOSED || e.err === ErrorCode.INVALID_HANDLE || e.err === 0) r = { done: true, value: undefined };
        if (aborted) {
          if (r && !r.done) this.#late.push(r);
        } else if (r) resolve(r);
        else reject(events.eventError(e));
      }, true);
      const code = native().fns.krabka_watch_next_async(this.#handle, 0, events.queueHandle(), tag);
      if (code !== 0) {
        events.forget(tag);
        if (code === ErrorCode.INVALID_HANDLE) resolve({ done: true, value: undefined });
        else reject(makeError(code, 'krabka_watch_next_async'));
        return;
      }
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
    });
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
