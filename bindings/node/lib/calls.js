'use strict';
// The call runner: the one completion path of every call that may block.
//
// Each blocking call of the binding (acquire, tryAcquire, renew,
// setMetadata, produce, produceBatch, resign, describe, leave, watch, a
// watch's next, a leadership's `ended`) is the *_async form of the C call,
// submitted with a tag to one krabka_queue_t of the process. The library
// runs it on its own threads and posts exactly one event with that tag when
// it completes. The queue's fd (the read end of a non-blocking pipe) is
// watched by libuv as a stream on the JavaScript thread; when it becomes
// readable the runner drains the queue (krabka_queue_poll until NULL) and
// settles the Promise of each event's call. No call holds a libuv pool
// thread, so any number can be in flight (group commit from Node depends on
// nothing but the number of produce() Promises pending).
//
// Keeping the process alive: the stream is ref'd exactly while a call that
// should keep the event loop alive is in flight (every call but an aborted
// acquire, a watch next() nobody waits for any more, and the `ended` of a
// leadership that is still active), and unref'd otherwise, so a process
// with nothing pending exits by itself.
//
// Aborting (options.signal): the Promise rejects at once with an AbortError;
// the call the library runs goes on, and when its event comes what it won
// is disposed of here, in dispose(): a leadership is resigned (standbys take
// over at once) and then released, a watch is closed; a describe result or
// a watch event goes with the event.
//
// The destroys (a client's, a leadership's, a watch's or an elector's close)
// and an elector's setEligible have no async form in the C ABI and block
// briefly (a client's up to request.timeout.ms): they run on the libuv pool
// (destroyOnPool, onPool), the only calls that still do.
//
// Streams (stream()): an elector posts its events with a tag of its own for
// as long as it runs; they go to the elector's reader, which may keep an
// event (a STOPPED, until JavaScript is done with its term) and destroy it
// later (destroyEvent).

const net = require('node:net');
const abi = require('./abi');
const { native, ERRSTR_SIZE } = require('./native');
const { makeError, errText } = require('./errors');
const { abortError } = require('./args');
const { readLog } = require('./values');

const fns = () => native().fns;

let queue = null; // { handle, socket }
let nextTag = 1;
const pending = new Map(); // tag -> call
const endWaiters = new Set(); // calls with over() that do not keep the loop alive yet
const logSinks = new Map(); // tag -> (line) => void
const streams = new Map(); // tag -> (n, ev) => boolean: events of a stream (an elector's)
let keepAlive = 0; // calls holding the event loop
let inFlight = 0; // calls submitted and not completed (not counting `ended` waiters)
let draining = false;

const startErr = Buffer.alloc(ERRSTR_SIZE); // errstr of a *_async call's start (synchronous)
const evErr = Buffer.alloc(ERRSTR_SIZE); // errstr of the event accessors (during a drain)

// What the binding holds of the library: events polled and destroyed,
// objects taken from events and released, destroys running on the pool.
const counters = {
  submitted: 0,
  completed: 0,
  polled: 0,
  destroyed: 0,
  disposed: 0,
  pool: 0,
  taken: { leadership: 0, watch: 0, status: 0, watchEvent: 0 },
  freed: { leadership: 0, watch: 0, status: 0, watchEvent: 0, client: 0, elector: 0, electorSet: 0 },
};

// ---- the queue and its fd ------------------------------------------------

function refresh() {
  if (!queue) return;
  if (keepAlive > 0) queue.socket.ref();
  else queue.socket.unref();
}

/** The process's queue handle (created on first use). */
function queueHandle() {
  if (queue) return queue.handle;
  const n = fns();
  const out = [null];
  const code = n.krabka_queue_new(out);
  if (code !== 0) throw makeError(code, 'krabka_queue_new');
  const fd = [0];
  const fcode = n.krabka_queue_fd(out[0], fd);
  if (fcode !== 0) throw makeError(fcode, 'krabka_queue_fd');
  // libuv watches the pipe like any stream (epoll on the JS thread); the
  // bytes it reads are only the "not empty" signal. The queue, and so the
  // fd, live as long as the process.
  const socket = new net.Socket({ fd: fd[0], readable: true, writable: false });
  socket.on('data', drain);
  socket.on('error', () => {});
  queue = { handle: out[0], socket };
  refresh();
  return queue.handle;
}

function hold(call) {
  if (call.held) return;
  call.held = true;
  keepAlive++;
  refresh();
}

function unhold(call) {
  if (!call.held) return;
  call.held = false;
  keepAlive--;
  refresh();
}

// ---- submitting ----------------------------------------------------------

/**
 * Submits one *_async call and returns { promise, retain, release,
 * holdIfOver }. spec:
 * - what: the call's name (in AbortErrors);
 * - start(queue, tag, errbuf): makes the C call, returns its code;
 * - read(ev, info): the Promise's value, read from the event (while it is
 *   alive; info = { code, reason, errbuf }); called only when the event's
 *   code is 0, unless readErrors;
 * - readOk(ev, errbuf): optional, tried first: the value when the event's
 *   data alone proves the call succeeded, else undefined (then the error
 *   is read and read() runs as above). It saves the krabka_event_error call
 *   of each completed produce (a call into the library costs about 1 µs
 *   on the main thread, 0.1-2 ms before capi/kc_stack.c; docs/PERFORMANCE.md);
 * - signal: an AbortSignal (rejects at once; the late result is disposed of);
 * - keepAlive (default true): the call holds the event loop until its event;
 * - releaseOnAbort: an abort stops it from holding the loop;
 * - over(): for a waiter that holds the loop only once over() is true (see
 *   holdIfOver);
 * - done(ok): called once when the call is over for the runner (its event
 *   came, or it did not start), whatever the outcome; ok is true when the
 *   event said the call succeeded.
 */
function begin(spec) {
  const call = {
    tag: 0,
    what: spec.what,
    read: spec.read || (() => undefined),
    readOk: spec.readOk || null,
    readErrors: Boolean(spec.readErrors),
    releaseOnAbort: Boolean(spec.releaseOnAbort),
    over: spec.over || null,
    signal: spec.signal || null,
    done: spec.done || null,
    held: false,
    ok: false,
    aborted: false,
    settled: false,
    onAbort: null,
    resolve: null,
    reject: null,
  };
  const promise = new Promise((resolve, reject) => {
    call.resolve = resolve;
    call.reject = reject;
  });
  const handle = {
    promise,
    retain: () => call.tag && pending.has(call.tag) && hold(call),
    release: () => unhold(call),
    holdIfOver: () => holdIfOver(call),
  };
  if (call.signal && call.signal.aborted) {
    settle(call, false, abortError(call.signal, call.what));
    finish(call);
    return handle;
  }
  let code;
  try {
    const q = queueHandle();
    call.tag = nextTag++;
    startErr[0] = 0;
    code = spec.start(q, call.tag, startErr);
  } catch (e) {
    settle(call, false, e);
    finish(call);
    return handle;
  }
  if (code !== 0) {
    settle(call, false, makeError(code, errText(startErr)));
    finish(call);
    return handle;
  }
  counters.submitted++;
  pending.set(call.tag, call);
  if (call.over) endWaiters.add(call);
  else {
    inFlight++;
    if (spec.keepAlive !== false) hold(call);
  }
  if (call.signal) {
    call.onAbort = () => {
      if (call.settled) return;
      call.aborted = true;
      settle(call, false, abortError(call.signal, call.what));
      if (call.releaseOnAbort) unhold(call);
    };
    call.signal.addEventListener('abort', call.onAbort, { once: true });
  }
  return handle;
}

/** begin(spec).promise */
const submit = (spec) => begin(spec).promise;

function settle(call, ok, value) {
  if (call.settled) return;
  call.settled = true;
  if (ok) call.resolve(value);
  else call.reject(value);
}

function finish(call) {
  if (call.signal && call.onAbort) call.signal.removeEventListener('abort', call.onAbort);
  const done = call.done;
  call.done = null;
  if (done) done(call.ok);
}

// A waiter with over() (Leadership.ended): once over() is true (the
// leadership is known to have ended, so its event is on its way) it holds
// the loop until the event arrives.
function holdIfOver(call) {
  if (!call.over || call.held || !pending.has(call.tag)) return;
  let ended;
  try {
    ended = call.over();
  } catch {
    ended = true; // the handle is gone: its end event is posted
  }
  if (!ended) return;
  endWaiters.delete(call);
  hold(call);
}

/** holdIfOver for every such waiter (after a client's close, which ends
 *  all its leaderships). */
function holdEndedIfOver() {
  for (const call of [...endWaiters]) holdIfOver(call);
}

// ---- draining ------------------------------------------------------------

/** Takes every event waiting in the queue and settles its call. */
function drain() {
  if (!queue || draining) return;
  draining = true;
  try {
    const n = fns();
    const out = [null];
    for (;;) {
      out[0] = null;
      if (n.krabka_queue_poll(queue.handle, out) !== 0 || !out[0]) return;
      const ev = out[0];
      counters.polled++;
      let kept = false;
      try {
        kept = deliver(n, ev);
      } finally {
        if (!kept) {
          n.krabka_event_destroy(ev); // and what nobody took from it
          counters.destroyed++;
        }
      }
    }
  } finally {
    draining = false;
  }
}

// Settles the call of one event; true when a stream kept the event (it is
// then the stream's to destroy, with destroyEvent).
function deliver(n, ev) {
  const tagOut = [0];
  n.krabka_event_tag(ev, tagOut);
  const tag = Number(tagOut[0]);
  const stream = streams.get(tag);
  if (stream) {
    try {
      return stream(n, ev) === true;
    } catch {
      return false; // a stream's bug must not stop the drain
    }
  }
  const sink = logSinks.get(tag);
  if (sink) {
    let line;
    try {
      line = readLog(ev, evErr);
    } catch {
      return; // not a log event: nothing to deliver
    }
    try {
      sink(line);
    } catch {
      /* a listener's bug must not stop the drain */
    }
    return;
  }
  const call = pending.get(tag);
  if (!call) {
    dispose(n, ev); // nobody waits for it (a log line of a closed client, say)
    return;
  }
  pending.delete(tag);
  endWaiters.delete(call);
  if (!call.over) inFlight--;
  unhold(call);
  counters.completed++;
  try {
    if (call.aborted) {
      dispose(n, ev);
      return;
    }
    if (call.readOk) {
      let v;
      try {
        v = call.readOk(ev, evErr);
      } catch {
        v = undefined; // the error path below says why
      }
      if (v !== undefined) {
        call.ok = true;
        settle(call, true, v);
        return;
      }
    }
    const code = [0];
    evErr[0] = 0;
    n.krabka_event_error(ev, code, evErr, evErr.length);
    const reason = errText(evErr);
    if (code[0] !== 0 && !call.readErrors) {
      settle(call, false, makeError(code[0], reason));
      return;
    }
    call.ok = code[0] === 0;
    try {
      settle(call, true, call.read(ev, { code: code[0], reason, errbuf: evErr }));
    } catch (e) {
      settle(call, false, e);
    }
  } finally {
    finish(call);
  }
}

// ---- what the binding takes from events, and disposal -----------------------

const TAKE = {
  leadership: 'krabka_event_take_leadership',
  watch: 'krabka_event_take_watch',
  status: 'krabka_event_take_status',
  watchEvent: 'krabka_event_take_watch_event',
};
const DESTROY = {
  leadership: 'krabka_leadership_destroy',
  watch: 'krabka_watch_destroy',
  status: 'krabka_status_destroy',
  watchEvent: 'krabka_watch_event_destroy',
  client: 'krabka_client_destroy',
  elector: 'krabka_elector_destroy',
  group: 'krabka_group_destroy',
  electorSet: 'krabka_elector_set_destroy',
};

/** Takes what the event carries (kind: leadership, watch, status or
 *  watchEvent): a handle the caller now owns, or null. */
function take(ev, kind) {
  const out = [null];
  evErr[0] = 0;
  const code = fns()[TAKE[kind]](ev, out, evErr, evErr.length);
  if (code !== 0) throw makeError(code, errText(evErr));
  if (out[0]) counters.taken[kind]++;
  return out[0] || null;
}

/** Destroys a describe result or a watch event (they never block). */
function free(kind, h) {
  const code = fns()[DESTROY[kind]](h);
  counters.freed[kind]++;
  return code;
}

/** Runs fn.async(...args, cb) (a blocking library call) on the libuv pool;
 *  resolves to its C code. */
function onPool(name, ...args) {
  counters.pool++;
  return new Promise((resolve) => {
    const over = (code) => {
      counters.pool--;
      resolve(code);
    };
    try {
      fns()[name].async(...args, (err, code) => over(err ? abi.ErrorCode.INTERNAL : code));
    } catch {
      over(abi.ErrorCode.INTERNAL); // the process is exiting
    }
  });
}

/** Destroys a client, leadership or watch on the libuv pool (its destroy
 *  blocks briefly); resolves to the C code. */
function destroyOnPool(kind, h) {
  counters.pool++;
  return new Promise((resolve) => {
    const over = (code) => {
      counters.pool--;
      counters.freed[kind]++;
      resolve(code);
    };
    try {
      fns()[DESTROY[kind]].async(h, (err, code) => over(err ? abi.ErrorCode.INTERNAL : code));
    } catch {
      over(abi.ErrorCode.INTERNAL); // the process is exiting
    }
  });
}

/**
 * A leadership nobody will use (won by an aborted call): resigned, so the
 * first standby challenges at once and no lease stays held, then released.
 */
function giveUp(h) {
  counters.disposed++;
  begin({
    what: 'resign (disposal)',
    start: (q, tag, eb) => fns().krabka_leadership_resign_async(h, null, 0, 0, q, tag, eb, eb.length),
    readErrors: true,
    done: () => destroyOnPool('leadership', h),
  }).promise.catch(() => {});
}

// The one place that disposes of the result of a call nobody waits for.
function dispose(n, ev) {
  const type = [0];
  if (n.krabka_event_type(ev, type) !== 0) return;
  try {
    switch (type[0]) {
      case abi.EventType.ACQUIRE:
      case abi.EventType.TRY_ACQUIRE: {
        const h = take(ev, 'leadership');
        if (h) giveUp(h);
        break;
      }
      case abi.EventType.WATCH_OPEN: {
        const w = take(ev, 'watch');
        if (w) {
          counters.disposed++;
          destroyOnPool('watch', w);
        }
        break;
      }
      default:
      // a describe result or a watch event goes with the event
    }
  } catch {
    /* nothing to take */
  }
}

// ---- log lines -------------------------------------------------------------

/** A tag for a client's log lines; sink({ level, message }) receives them. */
function logTag(sink) {
  queueHandle();
  const tag = nextTag++;
  logSinks.set(tag, sink);
  return tag;
}

function dropLogTag(tag) {
  logSinks.delete(tag);
}

// ---- streams: tags whose events go on arriving (an elector's) ---------------

/**
 * A tag of its own for a source that posts many events (an elector): during
 * a drain each event with that tag goes to onEvent(fns, ev), which reads it
 * and returns true to keep it alive past the drain (the caller destroys it
 * later with destroyEvent; an elector keeps its STOPPED events, because
 * destroying one lets the elector campaign again). Returns { tag, hold,
 * unhold, drop }: hold/unhold make the stream keep the event loop alive
 * (while an elector is open); drop forgets the tag (later events of it are
 * destroyed like those nobody waits for).
 */
function stream(onEvent) {
  queueHandle();
  const tag = nextTag++;
  streams.set(tag, onEvent);
  const me = { held: false };
  return {
    tag,
    hold: () => hold(me),
    unhold: () => unhold(me),
    drop: () => {
      unhold(me);
      streams.delete(tag);
    },
  };
}

/** Makes a library object that posts to a stream of its own (an elector,
 *  a group member): start(queue, tag, out, errbuf) is its C call. Returns
 *  { handle, stream }, the stream held (an open object keeps the process
 *  alive, like a listening server); throws the call's error, the stream
 *  dropped. */
function openStream(onEvent, start) {
  const st = stream(onEvent);
  const out = [null];
  const eb = Buffer.alloc(ERRSTR_SIZE);
  let code;
  try {
    code = start(queueHandle(), st.tag, out, eb);
  } catch (e) {
    st.drop();
    throw e;
  }
  if (code !== 0) {
    st.drop();
    throw makeError(code, errText(eb));
  }
  st.hold();
  return { handle: out[0], stream: st };
}

/** Destroys an event a stream kept. */
function destroyEvent(ev) {
  fns().krabka_event_destroy(ev);
  counters.destroyed++;
}

/** Calls in flight: submitted to the library and not completed (an `ended`
 *  waiter is not a call), and destroys running on the pool. */
const pendingCalls = () => inFlight + counters.pool;

/** @internal What the runner holds and has done (for the tests). */
function stats() {
  return {
    pending: pending.size,
    inFlight,
    keepAlive,
    endWaiters: endWaiters.size,
    logSinks: logSinks.size,
    streams: streams.size,
    submitted: counters.submitted,
    completed: counters.completed,
    polled: counters.polled,
    destroyed: counters.destroyed,
    disposed: counters.disposed,
    pool: counters.pool,
    taken: { ...counters.taken },
    freed: { ...counters.freed },
  };
}

module.exports = {
  queueHandle,
  begin,
  submit,
  holdEndedIfOver,
  drain,
  take,
  free,
  destroyOnPool,
  onPool,
  logTag,
  dropLogTag,
  stream,
  openStream,
  destroyEvent,
  pendingCalls,
  stats,
};
