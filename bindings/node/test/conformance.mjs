#!/usr/bin/env node
// Conformance runner for the Node binding: reads the vector files (the
// arguments, or every tests/conformance/vectors/*.json of the repository),
// runs each vector through the binding, prints one FAIL line per failed
// vector, the `not run:` line and `N passed, N failed`. --json prints the
// per-group counts as one JSON object instead (for `make conformance`).
// 64-bit fields are parsed from their JSON strings straight into BigInt.

import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const k = require('../lib/index.js');

const here = dirname(fileURLToPath(import.meta.url));

// Operations the C API cannot express: the binding has no fold, rank,
// succession rule or lease clock (they run inside the client), and a
// tombstone is written as a null value by the client, never by a caller.
// Written down here, never computed from failures.
const NOT_RUN = [
  'fold', 'fold_raw', 'rank', 'evaluate',
  'lease_defaults', 'lease_config', 'lease_grant', 'lease_live_at', 'lease_remaining_at',
  'lease_renew_at', 'lease_renew_due_at', 'lease_challenge_delay', 'lease_challenge_at',
  'lease_expires_at', 'encode_tombstone',
];

const hex = (h) => Buffer.from(h, 'hex');
const text = (obj, field) => (obj[`${field}_hex`] !== undefined && obj[`${field}_hex`] !== null ? hex(obj[`${field}_hex`]) : Buffer.from(obj[field], 'utf8'));
const i64 = (s) => {
  if (typeof s !== 'string') throw new Error(`64-bit field is not a string: ${JSON.stringify(s)}`);
  return BigInt(s);
};

function categoryOf(e) {
  if (e instanceof k.KrabkaError) return e.category ?? `code ${e.code} ${e.codeName}`;
  throw e; // a TypeError, a crash: not an expected outcome
}

/** Runs fn; for an expected failure compares the category. Returns a problem or null. */
function expectOutcome(v, fn, compare) {
  const ex = v.expect;
  let result;
  try {
    result = fn();
  } catch (e) {
    if (ex.ok) return `raised ${e.name}: ${e.message}`;
    const cat = categoryOf(e);
    const allowed = ex.category !== null && ex.category !== undefined ? [ex.category] : ex.categories_allowed;
    return allowed.includes(cat) ? null : `failed with ${cat}, expected ${allowed.join(' | ')}`;
  }
  if (!ex.ok) return `succeeded (${show(result)}), expected failure ${ex.category ?? ex.categories_allowed.join(' | ')}`;
  return compare(result);
}

const show = (x) => JSON.stringify(x, (_, val) => (typeof val === 'bigint' ? `${val}n` : Buffer.isBuffer(val) ? val.toString('hex') : val));

function diff(what, got, want) {
  const g = show(got), w = show(want);
  return g === w ? null : `${what} gave ${g}, expected ${w}`;
}

// Vector fields -> binding objects, and binding results -> vector shapes.
const keyIn = (f) => ({ kind: f.kind, role: text(f, 'role'), member: text(f, 'member') });
const regIn = (f) => ({ member: text(f, 'member'), registeredAt: i64(f.registered_at) });
const leaseIn = (f) => ({
  member: text(f, 'member'),
  token: { producerId: i64(f.producer_id), producerEpoch: f.producer_epoch },
  grantedAt: i64(f.granted_at),
  deadline: i64(f.deadline),
});
const keyOut = (r) => ({ kind: r.kind, role: r.role, member: r.member });
const regOut = (r) => ({ member: r.member, registered_at: r.registeredAt });
const leaseOut = (r) => ({
  member: r.member,
  producer_id: r.token.producerId,
  producer_epoch: r.token.producerEpoch,
  granted_at: r.grantedAt,
  deadline: r.deadline,
});
const keyWant = (f) => ({ kind: f.kind, role: text(f, 'role').toString('utf8'), member: text(f, 'member').toString('utf8') });
const regWant = (f) => ({ member: text(f, 'member').toString('utf8'), registered_at: i64(f.registered_at) });
const leaseWant = (f) => ({
  member: text(f, 'member').toString('utf8'),
  producer_id: i64(f.producer_id),
  producer_epoch: f.producer_epoch,
  granted_at: i64(f.granted_at),
  deadline: i64(f.deadline),
});

const PARTS = {
  key: { enc: k.encodeKey, dec: k.decodeKey, in: keyIn, out: keyOut, want: keyWant },
  registration_value: { enc: k.encodeRegistration, dec: k.decodeRegistration, in: regIn, out: regOut, want: regWant },
  lease_value: { enc: k.encodeLease, dec: k.decodeLease, in: leaseIn, out: leaseOut, want: leaseWant },
};
const tokenIn = (t) => {
  // Raw pairs (NO_EPOCH included) for compare: build through parse of a
  // non-negative pair, or take NO_EPOCH.
  const id = i64(t.producer_id);
  if (id === -1n && t.producer_epoch === -1) return k.FencingToken.NO_EPOCH;
  return new k.FencingToken(id, t.producer_epoch);
};

const OPS = {
  codec(v) {
    const p = PARTS[v.part];
    const problems = [];
    if (v.direction === 'both' || v.direction === 'encode') {
      const r = expectOutcome(v, () => p.enc(p.in(v.fields)), (buf) => diff('encode', buf.toString('hex'), v.expect.hex));
      if (r) problems.push(r);
    }
    if (v.direction === 'both' || v.direction === 'decode') {
      const r = expectOutcome(v, () => p.dec(hex(v.hex)), (rec) => {
        return diff('decode', p.out(rec), p.want(v.expect.fields)) || diff('re-encode', p.enc(rec).toString('hex'), v.hex);
      });
      if (r) problems.push(r);
    }
    return problems.length ? problems.join('; ') : null;
  },
  decode_failure(v) {
    return expectOutcome(v, () => PARTS[v.part].dec(hex(v.hex)), (rec) => `decoded to ${show(rec)}`);
  },
  is_tombstone(v) {
    return expectOutcome(v, () => k.isTombstone(v.value_hex === null ? null : hex(v.value_hex)), (t) => diff('isTombstone', t, v.expect.tombstone));
  },
  read_value(v) {
    const p = PARTS[v.part];
    return expectOutcome(
      v,
      () => {
        const value = v.value_hex === null ? null : hex(v.value_hex);
        if (k.isTombstone(value)) return { tombstone: true };
        return { tombstone: false, fields: p.out(p.dec(value)) };
      },
      (r) => diff('tombstone', r.tombstone, v.expect.tombstone) || (r.tombstone ? null : diff('fields', r.fields, p.want(v.expect.fields))),
    );
  },
  validate_role(v) {
    return expectOutcome(v, () => k.validateRole(hex(v.name_hex)), () => null);
  },
  validate_member(v) {
    return expectOutcome(v, () => k.validateMember(hex(v.name_hex)), () => null);
  },
  murmur2(v) {
    return expectOutcome(v, () => k.murmur2(hex(v.key_hex)), (h) => diff('murmur2', h, v.expect.murmur2));
  },
  partition(v) {
    return expectOutcome(v, () => k.rolePartition(text(v, 'role'), v.partitions), (p) => diff('partition', p, v.expect.partition));
  },
  token_compare(v) {
    return expectOutcome(
      v,
      () => {
        const a = tokenIn(v.left), b = tokenIn(v.right);
        return { compare: a.compare(b), supersedes: a.supersedes(b) };
      },
      (r) => diff('compare', r, { compare: v.expect.compare, supersedes: v.expect.supersedes }),
    );
  },
  token_validate(v) {
    return expectOutcome(v, () => new k.FencingToken(i64(v.token.producer_id), v.token.producer_epoch), () => null);
  },
  token_format(v) {
    return expectOutcome(v, () => tokenIn(v.token).toString(), (t) => diff('format', t, v.expect.text));
  },
  token_parse(v) {
    return expectOutcome(v, () => k.FencingToken.parse(text(v, 'text')), (t) =>
      diff('parse', { producer_id: t.producerId, producer_epoch: t.producerEpoch }, { producer_id: i64(v.expect.token.producer_id), producer_epoch: v.expect.token.producer_epoch }),
    );
  },
};

function vectorFiles(args) {
  if (args.length) return args;
  const dir = resolve(here, '..', '..', '..', 'tests', 'conformance', 'vectors');
  return readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => join(dir, f));
}

/** Runs the files; returns { passed, failed, notRun, groups, failures, notRunOps }. */
export function run(files) {
  const groups = {};
  const failures = [];
  const notRunOps = {};
  let passed = 0, failed = 0, notRun = 0;
  for (const file of files) {
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    const g = (groups[doc.group] ??= { passed: 0, failed: 0, not_run: 0 });
    for (const v of doc.vectors) {
      if (NOT_RUN.includes(v.op)) {
        notRunOps[v.op] = (notRunOps[v.op] ?? 0) + 1;
        g.not_run++;
        notRun++;
        continue;
      }
      let problem;
      const op = OPS[v.op];
      if (!op) problem = `unknown op ${v.op}`;
      else {
        try {
          problem = op(v);
        } catch (e) {
          problem = `raised ${e && e.name}: ${e && e.message}`;
        }
      }
      if (problem) {
        failed++;
        g.failed++;
        failures.push(`FAIL ${v.id}: ${problem}`);
      } else {
        passed++;
        g.passed++;
      }
    }
  }
  return { passed, failed, notRun, groups, failures, notRunOps };
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const files = vectorFiles(args.filter((a) => a !== '--json'));
  const r = run(files);
  for (const f of r.failures) console.log(f);
  const nr = Object.entries(r.notRunOps).map(([op, n]) => `${op} (${n})`).join(', ');
  if (json) {
    console.log(JSON.stringify({ runner: 'node', passed: r.passed, failed: r.failed, not_run: r.notRun, groups: r.groups }));
  } else {
    console.log(`not run: ${nr || 'none'}`);
    console.log(`${r.passed} passed, ${r.failed} failed`);
  }
  process.exitCode = r.failed > 0 ? 1 : 0;
}
