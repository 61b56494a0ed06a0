'use strict';
// Guarded-write throughput of the Node binding: one leadership, C
// concurrent produce() promises kept in flight for S seconds on the main
// thread. Prints commands/s and latency percentiles and writes a results
// file (JSON) with the commit, the machine, UV_THREADPOOL_SIZE and the load
// before and after. No timing assertion anywhere.
//   KRABKA_BOOTSTRAP=127.0.0.1:39092 node bench/produce.js [--concurrency 64] [--seconds 10] [--out FILE] [--worker]
// --worker runs the same loop inside a worker_threads Worker instead of the
// main thread (calls into the library cost 0.1-0.4 ms each on the main
// thread in some processes and about 1 us in a Worker: docs/PERFORMANCE.md).
const os = require('node:os');
const { Worker, isMainThread, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const crypto = require('node:crypto');
const { execFileSync } = require('node:child_process');
const k = require('..');

function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

function pct(sorted, p) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round((p / 100) * (sorted.length - 1))));
  return sorted[i];
}

function commit() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function main() {
  if (isMainThread && process.argv.includes('--worker')) return inWorker();
  const conc = Number(arg('--concurrency', '64'));
  const seconds = Number(arg('--seconds', '10'));
  const topic = arg('--topic', 'krabka-bench-node');
  const out = arg('--out', '');
  const bootstrap = process.env.KRABKA_BOOTSTRAP;
  if (!bootstrap) throw new Error('produce.js: set KRABKA_BOOTSTRAP to a broker (host:port)');
  const loadBefore = os.loadavg();
  const client = new k.Client({ 'bootstrap.servers': bootstrap });
  try {
    const lead = await client.acquire(`bench-node-${crypto.randomBytes(4).toString('hex')}`, 'bench-1', { timeoutMs: 60000 });
    await lead.produce(topic, Buffer.from('warm-up'));
    const lat = [];
    const stop = performance.now() + seconds * 1000;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: conc }, async (_, i) => {
      for (let n = 0; performance.now() < stop; n++) {
        const s = performance.now();
        await lead.produce(topic, Buffer.from(`w${i}-${n}`));
        lat.push(performance.now() - s);
      }
    }));
    const elapsed = (performance.now() - t0) / 1000;
    await lead.resign();
    lat.sort((a, b) => a - b);
    const res = {
      bench: 'node-produce',
      commit: commit(),
      date: new Date().toISOString(),
      machine: { nproc: os.cpus().length, platform: `${os.type()} ${os.release()} ${os.arch()}`, node: process.version },
      kafka: { bootstrap, brokers: 'as started by tests/kafka/cluster.sh' },
      uv_threadpool_size: process.env.UV_THREADPOOL_SIZE ?? '(default 4)',
      thread: isMainThread ? 'main' : 'worker',
      concurrency: conc,
      seconds,
      load_before: loadBefore,
      main_thread: {
        n: lat.length,
        commands_per_s: lat.length / elapsed,
        latency_ms: Object.fromEntries([0, 10, 25, 50, 75, 90, 99, 99.9, 100].map((p) => [`p${p}`, pct(lat, p)])),
      },
      load_after: os.loadavg(),
    };
    if (!isMainThread) {
      res.results_key_note = 'main_thread holds the Worker thread\'s figures (see thread)';
      parentPort.postMessage(res);
      return;
    }
    report(res, out);
  } finally {
    await client.close();
  }
}

function report(res, out) {
  const r = res.main_thread;
  console.log(`node ${res.concurrency} concurrent (UV_THREADPOOL_SIZE ${res.uv_threadpool_size}, ${res.thread} thread): ${r.commands_per_s.toFixed(0)} commands/s  p50 ${r.latency_ms.p50.toFixed(2)} ms  p99 ${r.latency_ms.p99.toFixed(2)} ms  (n=${r.n})`);
  if (out) {
    fs.writeFileSync(out, JSON.stringify(res, null, 1) + '\n');
    console.log('wrote', out);
  }
}

// The same measurement in a Worker; the main thread only reports it.
function inWorker() {
  return new Promise((resolve, reject) => {
    const w = new Worker(__filename, { argv: process.argv.slice(2).filter((a) => a !== '--worker') });
    let res = null;
    w.on('message', (m) => (res = m));
    w.on('error', reject);
    w.on('exit', (code) => {
      if (code !== 0 || !res) reject(new Error(`the benchmark worker exited with code ${code} and no result`));
      else {
        report(res, arg('--out', ''));
        resolve();
      }
    });
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
