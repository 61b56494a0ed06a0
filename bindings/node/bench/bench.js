'use strict';
// Per-call overhead of the Node binding over libkrabka_coord.so (koffi sync
// calls on the JS thread). Prints µs per call for each operation; --markdown
// prints a table for docs/PERFORMANCE.md. No timing assertions anywhere.
//   node bench/bench.js [--markdown] [--seconds 1]

const k = require('..');
const { native } = require('../lib/native');

const args = process.argv.slice(2);
const markdown = args.includes('--markdown');
const si = args.indexOf('--seconds');
const seconds = si >= 0 ? Number(args[si + 1]) : 1;

const a = new k.FencingToken(4242n, 7);
const b = new k.FencingToken(4242n, 8);
const leaseBytes = k.encodeLease({ member: 'node-1', token: a, grantedAt: 1700000000000n, deadline: 1700000030000n });
const keyBytes = k.encodeKey({ kind: 0, role: 'controller', member: 'node-1' });
const roleBuf = Buffer.from('controller');
const abi = native().fns.krabka_abi_version;

const cases = [
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
  samples.sort((x, y) => x - y);
  return { median: samples[Math.floor(samples.length / 2)], min: samples[0], n: samples.length * batch };
}

const results = cases.map(([name, fn]) => ({ name, ...measure(fn) }));
if (markdown) {
  console.log('| operation | µs per call (median) | µs (best batch) | calls |');
  console.log('|---|---:|---:|---:|');
  for (const r of results) console.log(`| ${r.name} | ${r.median.toFixed(3)} | ${r.min.toFixed(3)} | ${r.n} |`);
} else {
  console.log(`node ${process.version}, koffi ${require('koffi').version}, library ${k.version()} (${k.libraryPath()})`);
  for (const r of results) console.log(`${r.name.padEnd(40)} ${r.median.toFixed(3).padStart(8)} µs/call  (best ${r.min.toFixed(3)}, ${r.n} calls)`);
}
