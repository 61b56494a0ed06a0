'use strict';
// The pure surface of the binding: tokens, names, partition, codec, errors,
// argument checks and the loader. No broker needed.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const k = require('..');
const { FencingToken, DecodeError, KrabkaError, ErrorCode } = k;

test('the loaded library reports the generated ABI version and a version string', () => {
  assert.equal(k.ABI_VERSION, require('../lib/abi').CONSTANTS.ABI_VERSION);
  assert.equal(k.ABI_VERSION, 2);
  assert.match(k.version(), /^\d+\.\d+\.\d+/);
  assert.ok(fs.existsSync(k.libraryPath()));
});

test('a fencing token orders by producer id first, then epoch', () => {
  const a = new FencingToken(5n, 0);
  const b = new FencingToken(4n, 32767);
  assert.equal(a.compare(b), 1);
  assert.equal(b.compare(a), -1);
  assert.equal(a.compare(new FencingToken(5, 0)), 0);
  assert.equal(a.supersedes(b), true);
  assert.equal(b.supersedes(a), false);
  assert.equal(a.equals(new FencingToken(5n, 0)), true);
  assert.equal(typeof a.producerId, 'bigint');
  assert.equal(typeof a.producerEpoch, 'number');
});

test('NO_EPOCH is (-1,-1), ranks below every minted token and equals only itself', () => {
  const n = FencingToken.NO_EPOCH;
  assert.equal(n.producerId, -1n);
  assert.equal(n.producerEpoch, -1);
  assert.equal(n.isNoEpoch, true);
  assert.equal(new FencingToken(0n, 0).supersedes(n), true);
  assert.equal(n.compare(FencingToken.NO_EPOCH), 0);
  assert.equal(n.toString(), '-1:-1');
});

test('token text form round-trips, 64-bit ids beyond 2^53 included', () => {
  const t = FencingToken.parse('9223372036854775807:32767');
  assert.equal(t.producerId, 9223372036854775807n);
  assert.equal(t.producerEpoch, 32767);
  assert.equal(t.toString(), '9223372036854775807:32767');
  assert.equal(k.formatToken(k.parseToken('4242:7')), '4242:7');
  assert.equal(JSON.stringify({ t: new FencingToken(4242n, 7) }), '{"t":"4242:7"}');
});

test('token parse and construction fail with DecodeError categories', () => {
  assert.throws(() => FencingToken.parse('4242'), (e) => e instanceof DecodeError && e.category === 'token_form' && e.code === ErrorCode.TOKEN_FORM);
  assert.throws(() => FencingToken.parse('-1:0'), (e) => e instanceof DecodeError && e.category === 'negative_token');
  assert.throws(() => new FencingToken(-1n, 0), (e) => e instanceof DecodeError && e.category === 'negative_token');
  assert.throws(() => new FencingToken(1n, 32768), RangeError);
  assert.throws(() => new FencingToken(1n << 63n, 0), RangeError);
  assert.throws(() => new FencingToken('1', 0), TypeError);
  assert.throws(() => new FencingToken(2 ** 60, 0), RangeError); // unsafe number: use a bigint
  assert.throws(() => new FencingToken(1n, 0).compare({ producerId: 1n, producerEpoch: 0 }), TypeError);
});

test('role partition matches the golden vector and rejects a count below 1', () => {
  assert.equal(k.rolePartition('controller', 16), 12);
  assert.equal(k.rolePartition(Buffer.from('controller'), 16), 12);
  assert.throws(() => k.rolePartition('controller', 0), (e) => e instanceof DecodeError && e.category === 'invalid_partition_count');
  assert.throws(() => k.rolePartition('controller', 1.5), RangeError);
  assert.throws(() => k.rolePartition('controller', 2 ** 31), RangeError);
  assert.throws(() => k.rolePartition('controller', '16'), TypeError);
  assert.throws(() => k.rolePartition(42, 16), TypeError);
});

test('murmur2 hashes bytes and strings as UTF-8', () => {
  assert.equal(k.murmur2(Buffer.alloc(0)), 275646681);
  assert.equal(k.murmur2('a'), -1563381124);
  assert.throws(() => k.murmur2(7), TypeError);
});

test('names: validateRole/validateMember accept strings and Buffers and report categories', () => {
  assert.deepEqual(Buffer.from(k.validateRole('controller')), Buffer.from('controller'));
  k.validateMember(Buffer.from('a\u0000b'));
  assert.throws(() => k.validateRole(''), (e) => e.category === 'empty_role');
  assert.throws(() => k.validateMember(''), (e) => e.category === 'empty_member');
  assert.throws(() => k.validateRole('x'.repeat(250)), (e) => e.category === 'role_too_long');
  assert.throws(() => k.validateMember(Buffer.from([0xff])), (e) => e.category === 'invalid_utf8');
  assert.throws(() => k.validateRole('\ud800'), (e) => e instanceof DecodeError && e.category === 'invalid_utf8');
  assert.throws(() => k.validateRole(null), TypeError);
  assert.throws(() => k.validateMember({}), TypeError);
});

test('codec: golden lease value round-trips with bigint instants', () => {
  const golden = '000000066e6f64652d31000000000000109200070000018bcfe568000000018bcfe5dd30';
  const bytes = k.encodeLease({
    member: 'node-1',
    token: new FencingToken(4242n, 7),
    grantedAt: 1700000000000n,
    deadline: 1700000030000n,
  });
  const lease = k.decodeLease(bytes);
  assert.equal(lease.member, 'node-1');
  assert.equal(lease.token.toString(), '4242:7');
  assert.equal(lease.grantedAt, 1700000000000n);
  assert.equal(lease.deadline, 1700000030000n);
  assert.equal(bytes.toString('hex'), golden);
  assert.deepEqual(k.encodeLease(lease), bytes);
});

test('codec: keys and registrations round-trip; a lease key drops its member', () => {
  const key = k.encodeKey({ kind: 'registration', role: 'controller', member: 'node-1' });
  assert.equal(key.toString('hex'), '00000000000a636f6e74726f6c6c657200066e6f64652d31');
  assert.deepEqual(k.decodeKey(key), { kind: 0, role: 'controller', member: 'node-1' });
  const lk = k.encodeKey({ kind: k.Kind.LEASE, role: 'controller', member: 'ignored' });
  assert.equal(lk.toString('hex'), '00000001000a636f6e74726f6c6c65720000');
  const reg = k.encodeRegistration({ member: 'node-1', registeredAt: 1700000000000 });
  assert.deepEqual(k.decodeRegistration(reg), { member: 'node-1', registeredAt: 1700000000000n });
});

test('codec: decode failures are DecodeErrors with the conformance category', () => {
  assert.throws(() => k.decodeKey(Buffer.alloc(0)), (e) => e instanceof DecodeError && e.category === 'truncated' && e.name === 'DecodeError' && e.retriable === false && e.fatal === false && e.message.length > 0);
  const reg = k.encodeRegistration({ member: 'node-1', registeredAt: 1n });
  assert.throws(() => k.decodeRegistration(Buffer.concat([reg, Buffer.from([0])])), (e) => e.category === 'trailing_bytes');
  assert.throws(() => k.decodeKey('00'), TypeError);
  assert.throws(() => k.encodeKey({ kind: 'other', role: 'r', member: 'm' }), TypeError);
  assert.throws(() => k.encodeKey({ kind: 0, role: 'x'.repeat(300), member: 'm' }), (e) => e.category === 'role_too_long');
  assert.throws(() => k.encodeRegistration({ member: 'm', registeredAt: 1.5 }), RangeError);
  assert.throws(() => k.encodeRegistration(null), TypeError);
});

test('tombstones: null, undefined and empty values are tombstones', () => {
  assert.equal(k.isTombstone(null), true);
  assert.equal(k.isTombstone(undefined), true);
  assert.equal(k.isTombstone(Buffer.alloc(0)), true);
  assert.equal(k.isTombstone(Buffer.from([0])), false);
  assert.throws(() => k.isTombstone('x'), TypeError);
});

test('errors carry code, codeName, retriable, fatal and a sensible name', () => {
  assert.ok(new FencingToken(1n, 1));
  let err;
  try {
    k.decodeLease(Buffer.alloc(1));
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof KrabkaError);
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'DecodeError');
  assert.equal(err.codeName, 'TRUNCATED');
  assert.equal(err.code, 10);
  assert.match(String(err), /^DecodeError: /);
});

test('Client config: wrong value types throw TypeError before reaching C', () => {
  assert.throws(() => new k.Client('bootstrap.servers=x'), TypeError);
  assert.throws(() => new k.Client({ 'bootstrap.servers': ['a'] }), TypeError);
  assert.throws(() => new k.Client({ 'request.timeout.ms': NaN }), RangeError);
  assert.throws(() => new k.Client({ 'client.id': 'a\u0000b' }), RangeError);
});

// The loader: a library with another ABI or without krabka_abi_version is
// refused with a clear error; a missing path names what was tried.
function loadIn(libPath) {
  const r = spawnSync(process.execPath, ['-e', "try { require('.').version(); console.log('LOADED') } catch (e) { console.log(e.message) }"], {
    cwd: path.resolve(__dirname, '..'),
    env: { ...process.env, KRABKA_COORD_LIBRARY: libPath },
    encoding: 'utf8',
  });
  return r.stdout.trim();
}

test('loader: KRABKA_COORD_LIBRARY pointing nowhere gives a clear error', () => {
  assert.match(loadIn('/nonexistent/libkrabka_coord.so'), /cannot load libkrabka_coord\.so; tried \/nonexistent\/libkrabka_coord\.so/);
});

test('loader: a library with another ABI version, or lacking functions, is refused naming why', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-abi-'));
  const other = k.ABI_VERSION + 1;
  const build = (name, body) => {
    const src = path.join(dir, `${name}.c`);
    fs.writeFileSync(src, body);
    // CI has a C compiler: a missing one fails the test, it does not skip it.
    execFileSync(process.env.CC || 'cc', ['-shared', '-fPIC', '-o', path.join(dir, `lib${name}.so`), src]);
    return path.join(dir, `lib${name}.so`);
  };
  const wrongAbi = build('fake', `int krabka_abi_version(void) { return ${other}; }\n`);
  assert.match(loadIn(wrongAbi), new RegExp(`has ABI version ${other}, this binding needs ABI version ${k.ABI_VERSION}`));
  // The right ABI number and nothing else: every function of the header is missing.
  const bare = build('bare', `int krabka_abi_version(void) { return ${k.ABI_VERSION}; }\n`);
  const msg = loadIn(bare);
  assert.match(msg, /lacks functions declared by include\/krabka_coord\.h/);
  assert.match(msg, /krabka_client_acquire_async/);
  assert.match(loadIn('libc.so.6'), /is not libkrabka_coord/);
  fs.rmSync(dir, { recursive: true, force: true });
});
