'use strict';
// startProxy(listen, target): a running tests/kafka/cmd/kproxy (built once
// per process; build/kproxy when present) with send(cmd) ('cut', 'heal',
// ...) and quit().

const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { within } = require('./wait');

const repo = path.resolve(__dirname, '..', '..', '..', '..');

let kproxyBin = null;
async function startProxy(listen, target) {
  if (!kproxyBin) {
    const built = path.join(repo, 'build', 'kproxy');
    if (fs.existsSync(built)) kproxyBin = built;
    else {
      kproxyBin = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-node-kproxy-')), 'kproxy');
      execFileSync(process.env.GO || 'go', ['build', '-o', kproxyBin, './tests/kafka/cmd/kproxy'], { cwd: repo, stdio: 'inherit' });
    }
  }
  const child = spawn(kproxyBin, ['-listen', listen, '-target', target], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
  });
  const exited = new Promise((r) => child.on('exit', r));
  const nextLine = (what) =>
    within(
      new Promise((resolve, reject) => {
        waiting.push(resolve);
        exited.then(() => reject(new Error(`kproxy exited waiting for ${what}`)));
      }),
      `kproxy: ${what}`,
      30_000,
    );
  const ready = await nextLine('ready');
  assert.match(ready, /^ready /);
  return {
    async send(cmd) {
      child.stdin.write(`${cmd}\n`);
      const l = await nextLine(cmd);
      assert.equal(l, `ok ${cmd}`);
    },
    async quit() {
      child.stdin.end();
      await within(exited, 'kproxy to exit', 30_000).catch(() => child.kill('SIGKILL'));
    },
  };
}

module.exports = { startProxy };
