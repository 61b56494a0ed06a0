'use strict';
// Per-call overhead of the Node binding over libkrabka_coord.so (koffi sync
// calls), measured on the main JS thread and on a worker_threads thread.
// Prints µs per call for each operation; --markdown prints a table for
// docs/PERFORMANCE.md. No timing assertions anywhere. With
// KRABKA_BENCH_SAMPLES=1 it also prints every batch's µs per call as a
// KRABKA-SAMPLE line (bench/README.md; measure names end in -main or
// -worker), which `make node-bench` records in a results file.
//   node bench/bench.js [--markdown] [--seconds 1]
//
// Why two columns: koffi runs native calls on its own stack, and Go's cgo
// callback then asks for the thread's stack bounds (pthread_getattr_np) on
// every call. On the process's main thread glibc answers that by parsing
// /proc/self/maps (100 µs to 2 ms a call), unless the library answers it
// from memory as capi/kc_stack.c does (build.sh links it in); on other
// threads it is cheap. bench/mainthread.js times each call alone on the
// main thread in fresh processes (p50/p99/max).

const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
const koffi = require('koffi');
const k = require('..');
const { native } = require('../lib/native');

const args = isMainThread ? process.argv.slice(2) : workerData.args;
const markdown = args.includes('--markdown');
const si = args.indexOf('--seconds');
const seconds = si >= 0 ? Number(args[si + 1]) : 1;

const a = new k.FencingToken(4242n, 7);
const b = new k.FencingToken(4242n, 8);
const leaseBytes = k.encodeLease({ member: 'node-1', token: a, grantedAt: 1700000000000n, deadline: 1700000030000n });
const keyBytes = k.encodeKey({ kind: 0, role: 'controller', member: 'node-1' });
const roleBuf = Buffer.from('controller');
const abi = native().fns.krabka_abi_version;

const abs = koffi.load('libc.so.6').func('int abs(int)');

const cases = [
  ['raw koffi call: libc abs() (baseline)', () => abs(-3)],
  ['raw koffi call: krabka_abi_version()', () => abi()],
  ['token compare (a.compare(b))', () => a.compare(b)],
  ['token supersedes', () => a.supersedes(b)],
  ['rolePartition(string, 16)', () => k.rolePartition('controller', 16)],
  ['rolePartition(Buffer, 16)', () => k.rolePartition(roleBuf, 16)],
  ['murmur2(Buffer)', () => k.murmur2(roleBuf)],
  ['FencingToken.parse("4242:7")', () => k.FencingToken.parse('4242:7')],
  ['token.toString()', () => a.toString()],
  ['decodeKey (24 bytes)', () => k.decodeKey(keyBytes)],
  ['decodeLease (37 bytes)', () => k.decodeLease(leaseBytes)],
  ['encodeLease', () => k.encodeLease({ member: 'node-1', token: a, grantedAt: 1700000000000n, deadline: 1700000030000n })],
];

function measure(fn) {
  // Calibrate a batch that takes ~10 ms, then run batches for `seconds`.
  let batch = 100;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) fn();
    const ns = Number(process.hrtime.bigint() - t0);
    if (ns > 10e6) break;
    batch *= 2;
  }
  const samples = [];
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < end) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < batch; i++) fn();
    samples.push(Number(process.hrtime.bigint() - t0) / batch / 1000);
  }
  const raw = samples.slice();
  samples.sort((x, y) => x - y);
  return { median: samples[Math.floor(samples.length / 2)], min: samples[0], n: samples.length * batch, raw };
}

function runAll() {
  return cases.map(([name, fn]) => ({ name, ...measure(fn) }));
}

if (!isMainThread) {
  parentPort.postMessage(runAll());
} else {
  const main = runAll();
  const worker = new Worker(__filename, { workerData: { args } });
  worker.once('message', (inWorker) => {
    if (process.env.KRABKA_BENCH_SAMPLES === '1') {
      const slug = (n) => n.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
      console.log(`KRABKA-SETTING\tnode\t${process.version}`);
      console.log(`KRABKA-SETTING\tkoffi\t${koffi.version}`);
      console.log(`KRABKA-SETTING\tmethod\tbatches of ~10 ms for ${seconds} s per operation; every batch's µs per call is a sample; tables give the median`);
      for (const [where, rows] of [['main', main], ['worker', inWorker]]) {
        for (const r of rows) {
          for (const us of r.raw) console.log(`KRABKA-SAMPLE\t${slug(r.name)}-${where}\tus\t${us}\t${r.name}, ${where} thread`);
        }
      }
    }
    if (markdown) {
      console.log('| operation | µs per call, main thread | µs per call, worker thread |');
      console.log('|---|---:|---:|');
      main.forEach((r, i) => console.log(`| ${r.name} | ${r.median.toFixed(3)} | ${inWorker[i].median.toFixed(3)} |`));
    } else {
      console.log(`node ${process.version}, koffi ${koffi.version}, library ${k.version()} (${k.libraryPath()})`);
      console.log(`${'operation'.padEnd(40)} ${'main µs/call'.padStart(13)} ${'worker µs/call'.padStart(15)}   (medians of ~10 ms batches)`);
      main.forEach((r, i) => console.log(`${r.name.padEnd(40)} ${r.median.toFixed(3).padStart(13)} ${inWorker[i].median.toFixed(3).padStart(15)}`));
    }
  });
}
