'use strict';
// A synchronous call on the main thread reads no file. koffi runs native
// calls on a stack of its own, so Go's cgo callback asks for the thread's
// stack bounds on every call; for the main thread glibc's pthread_getattr_np
// answers by reading /proc/self/maps (about a dozen read() calls and the
// whole file each time). The library answers those from memory
// (capi/kc_stack.c, linked with -wrap=pthread_getattr_np by build.sh).
// Counted, not timed: the main thread's own I/O counters in
// /proc/thread-self/io (syscr: read system calls, rchar: bytes read) around
// 1000 calls. No broker needed.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { Worker } = require('node:worker_threads');
const k = require('..');
const { native, ABI_VERSION } = require('../lib/native');

const CALLS = 1000;

function threadIO() {
  let text;
  try {
    text = fs.readFileSync('/proc/thread-self/io', 'utf8');
  } catch (e) {
    assert.fail(`this test counts the main thread's reads in /proc/thread-self/io, which cannot be read here (${e.message}); ` +
      'it needs Linux with per-task I/O accounting (CONFIG_TASK_IO_ACCOUNTING)');
  }
  const io = {};
  for (const line of text.trim().split('\n')) {
    const [key, value] = line.split(':');
    io[key.trim()] = Number(value);
  }
  assert.ok(Number.isFinite(io.syscr) && Number.isFinite(io.rchar), `unexpected /proc/thread-self/io:\n${text}`);
  return io;
}

/** The main thread's read() calls and bytes read while fn runs CALLS times. */
function readsDuring(fn) {
  for (let i = 0; i < 10; i++) fn(); // first-call paths (the one glibc answer that is remembered)
  const before = threadIO();
  for (let i = 0; i < CALLS; i++) fn();
  const after = threadIO();
  // The second threadIO()'s own reads of /proc/thread-self/io count in `after`.
  return { syscr: after.syscr - before.syscr, rchar: after.rchar - before.rchar };
}

function assertNoFileReads(what, fn) {
  const mapsSize = fs.readFileSync('/proc/self/maps').length;
  const got = readsDuring(fn);
  // Without the fix: ~11 reads and the whole of /proc/self/maps per call
  // (11000 reads, ~10 MB here). With it: the few reads of the io file.
  assert.ok(
    got.syscr < 50 && got.rchar < mapsSize,
    `${CALLS} calls of ${what} on the main thread made ${got.syscr} read() calls (${got.rchar} bytes; ` +
      `/proc/self/maps is ${mapsSize} bytes): Go's cgo callback is re-reading the main thread's stack bounds ` +
      'from /proc/self/maps on every call (the library must be linked with -Wl,-wrap=pthread_getattr_np, see build.sh ' +
      'and capi/kc_stack.c)',
  );
}

test('krabka_abi_version on the main thread reads no file', () => {
  const f = native().fns.krabka_abi_version;
  assert.strictEqual(f(), ABI_VERSION);
  assertNoFileReads('krabka_abi_version()', () => f());
});

test('the binding\'s pure calls on the main thread read no file', () => {
  const roleBuf = Buffer.from('controller');
  assertNoFileReads('rolePartition, murmur2 and version()', () => {
    k.rolePartition('controller', 16);
    k.murmur2(roleBuf);
    k.version();
  });
});

test('the library still works from a worker thread (its stack bounds go to glibc)', async () => {
  const src = `
    const { parentPort } = require('node:worker_threads');
    const { native } = require(${JSON.stringify(require.resolve('../lib/native'))});
    const f = native().fns.krabka_abi_version;
    let v = 0;
    for (let i = 0; i < ${CALLS}; i++) v = f();
    parentPort.postMessage(v);
  `;
  const v = await new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true });
    w.once('message', resolve);
    w.once('error', reject);
  });
  assert.strictEqual(v, native().fns.krabka_abi_version());
  // And the main thread again after the worker's calls.
  assertNoFileReads('krabka_abi_version() after a worker', () => native().fns.krabka_abi_version());
});
