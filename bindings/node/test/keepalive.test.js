'use strict';
// The event loop stays alive exactly while a Promise of the binding is
// bound to settle, on a real broker ($KRABKA_BOOTSTRAP). Each scenario runs
// in a child process (test/helpers/keepalive-child.js) that holds no handle
// of its own, with UV_THREADPOOL_SIZE=1 (the binding's calls use the event
// queue, not the pool; only the closes run there): an event loop that
// drains too early shows as the child exiting, code 0, before it printed
// "done".
//
// The failure this guards against: Leadership.ended is completed by a
// library goroutine that posts to the event queue after the leadership
// ended. While the leadership is active, `ended` does not keep the process
// alive (by design); but once a call of the process ended it (resign,
// close, a refused write, the client's close) the call's completion left
// nothing referenced and the process exited before `ended` resolved.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');

const bootstrap = process.env.KRABKA_BOOTSTRAP;
const child = path.join(__dirname, 'helpers', 'keepalive-child.js');

function requireBroker() {
  assert.ok(bootstrap, 'KRABKA_BOOTSTRAP is not set: run under `make test` or export the address of a running broker');
}

// Runs a scenario; resolves to { code, signal, out, err }. A child still
// running after limitMs is killed (then signal is SIGKILL).
function runChild(scenario, limitMs = 90_000) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, scenario], {
      env: { ...process.env, UV_THREADPOOL_SIZE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (b) => (out += b));
    p.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => p.kill('SIGKILL'), limitMs);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

async function expectLines(scenario, lines) {
  requireBroker();
  const r = await runChild(scenario);
  const got = r.out.trim().split('\n');
  assert.deepEqual(
    got,
    lines,
    `child ${scenario} (exit ${r.code}${r.signal ? `, ${r.signal}` : ''}) printed ${JSON.stringify(got)}, expected ${JSON.stringify(lines)}; stderr:\n${r.err}`,
  );
  assert.equal(r.code, 0, `child ${scenario} exit code; stderr:\n${r.err}`);
}

test('ended read after a resign resolves before the process can exit', { timeout: 120_000 }, () =>
  expectLines('resign-then-ended', ['resigned', 'ended RESIGNED', 'done']));

test('ended resolves after an aborted resign among aborted renews (UV_THREADPOOL_SIZE=1)', { timeout: 120_000 }, () =>
  expectLines('aborted-resign', [...Array(5)].flatMap(() => ['resign AbortError', 'ended RESIGNED']).concat('done')));

test("ended of a client's leaderships resolves after the client's close", { timeout: 120_000 }, () =>
  expectLines('client-close', ['closed', 'ended a CLOSED', 'ended b CLOSED', 'done']));

test("ended read before the leadership's close resolves after it", { timeout: 120_000 }, () =>
  expectLines('leadership-close', ['closed', 'ended CLOSED', 'done']));

test('ended resolves after a renew the broker refused (a successor on another coordination topic)', { timeout: 120_000 }, () =>
  expectLines('fenced-renew', ['renew FencedError', 'ended FENCED', 'done']));

test('an active leadership\'s ended and an aborted acquire do not keep the process alive', { timeout: 120_000 }, async () => {
  requireBroker();
  // The holder's lease (5 minutes) outlasts this limit, so only an exit by
  // itself ends the child in time.
  const r = await runChild('nothing-pending', 90_000);
  assert.equal(r.signal, null, `the child did not exit by itself; it printed ${JSON.stringify(r.out)}; stderr:\n${r.err}`);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(r.out.trim().split('\n'), ['waiting', 'acquire AbortError']);
});
