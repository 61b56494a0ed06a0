'use strict';
// Error codes, names and texts come from the library's table
// (krabka_get_err_descs) over the generated ERROR_DESCS, and the data codes
// from the generated DATA_CATEGORIES: a code the binding was not generated
// with still gives a KrabkaError with the library's name for it, never a
// made-up "UNKNOWN(n)", and no code range is written in lib/. No broker.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const k = require('..');
const abi = require('../lib/abi');
const { makeError, describeCode } = require('../lib/errors');

const lib = path.resolve(__dirname, '..', 'lib');

test('every code of the generated table has the library\'s name, text and flags', () => {
  assert.ok(abi.ERROR_DESCS.length > 0);
  for (const d of abi.ERROR_DESCS) {
    const e = makeError(d.code, '');
    assert.ok(e instanceof k.KrabkaError);
    assert.equal(e.codeName, d.name);
    assert.equal(e.description, d.text);
    assert.equal(e.retriable, d.retriable, `${d.name} retriable`);
    assert.equal(e.fatal, d.fatal, `${d.name} fatal`);
    assert.equal(k.ErrorCode[d.name], d.code);
  }
});

test('data codes are DecodeErrors with their category word, from DATA_CATEGORIES', () => {
  const data = Object.entries(abi.DATA_CATEGORIES);
  assert.ok(data.length > 0);
  for (const [code, category] of data) {
    const e = makeError(Number(code), 'x');
    assert.ok(e instanceof k.DecodeError, `${code} is a DecodeError`);
    assert.equal(e.category, category);
    assert.equal(e.codeName.toLowerCase(), category);
  }
  for (const d of abi.ERROR_DESCS.filter((r) => !(r.code in abi.DATA_CATEGORIES))) {
    const e = makeError(d.code, 'x');
    assert.ok(!(e instanceof k.DecodeError), `${d.name} is not a DecodeError`);
    assert.equal(e.category, null);
  }
  assert.ok(makeError(k.ErrorCode.FENCED, 'x') instanceof k.FencedError);
  assert.ok(makeError(k.ErrorCode.LEASE_EXPIRED, 'x') instanceof k.LeaseExpiredError);
});

test('no module of lib/ but the generated abi.js spells out error codes or a code range', () => {
  for (const f of fs.readdirSync(lib).filter((x) => x.endsWith('.js') && x !== 'abi.js')) {
    const src = fs.readFileSync(path.join(lib, f), 'utf8');
    assert.doesNotMatch(src, /code\s*[<>]=?\s*\d|[<>]=?\s*(10|24)\b.*code/, `lib/${f} compares a code with a number`);
    assert.doesNotMatch(src, /\bINVALID_ARG:\s*1\b|\bFENCED:\s*30\b/, `lib/${f} spells out the error table`);
    assert.doesNotMatch(src, /UNKNOWN\(/, `lib/${f} makes up UNKNOWN(n) names`);
  }
});

// Runs `body` in a child whose lib/abi.js is the generated one changed by
// `patch` (a function source: (abi) => the module to use): the binding as
// if it had been generated from an older header.
function withPatchedAbi(patch, body) {
  const script = `
    const path = require('node:path');
    const abiPath = require.resolve(${JSON.stringify(path.join(lib, 'abi.js'))});
    const real = require(abiPath);
    require.cache[abiPath].exports = (${patch})(real);
    const k = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    const { makeError } = require(${JSON.stringify(path.join(lib, 'errors.js'))});
    const out = (${body})(k, makeError);
    console.log(JSON.stringify(out));
  `;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: process.env });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('a code the binding was generated without is named by the library', () => {
  const without = describeCode(k.ErrorCode.MESSAGE_TOO_LARGE);
  const out = withPatchedAbi(
    `(abi) => ({ ...abi,
       ERROR_DESCS: abi.ERROR_DESCS.filter((d) => d.code !== 39 && d.code !== 15),
       ErrorCode: Object.fromEntries(Object.entries(abi.ErrorCode).filter(([, v]) => v !== 39 && v !== 15)) })`,
    `(k, makeError) => {
       const big = makeError(39, 'the record is too large');
       const utf = makeError(15, 'bad bytes');
       return { big: [big instanceof k.KrabkaError, big.name, big.codeName, big.description, big.retriable, big.fatal, big.message],
                utf: [utf instanceof k.DecodeError, utf.codeName, utf.category],
                known: 'MESSAGE_TOO_LARGE' in k.ErrorCode };
     }`,
  );
  assert.deepEqual(out.big, [true, 'KrabkaError', 'MESSAGE_TOO_LARGE', without.text, false, false, 'the record is too large']);
  assert.deepEqual(out.utf, [true, 'INVALID_UTF8', 'invalid_utf8']);
  assert.equal(out.known, false, 'the patched table really lacked the code');
});

test('with no generated table at all every code is still named by the library', () => {
  const out = withPatchedAbi(
    `(abi) => ({ ...abi, ERROR_DESCS: [] })`,
    `(k, makeError) => [30, 33, 50].map((c) => [makeError(c, '').codeName, makeError(c, '').retriable])`,
  );
  assert.deepEqual(out, [['FENCED', false], ['TIMEOUT', true], ['INTERNAL', false]]);
});

test('a code no table knows is a KrabkaError with the library\'s own answer', () => {
  const e = makeError(99, '');
  assert.ok(e instanceof k.KrabkaError);
  assert.equal(e.code, 99);
  assert.equal(e.codeName, 'UNKNOWN');
  assert.equal(e.message, e.description);
  assert.equal(e.category, null);
  assert.doesNotMatch(`${e.codeName} ${e.message}`, /UNKNOWN\(/);
});
