'use strict';
// Token compare, supersedes, format, parse and validation run in JavaScript
// (a call into the library from the main thread can cost 100-500 us, see
// docs/PERFORMANCE.md); the conformance vectors (test/conformance.mjs) hold
// them to the contract. This test proves they make no call into the
// library: the library's token functions are replaced by stubs that throw.
const test = require('node:test');
const assert = require('node:assert');
const k = require('..');
const { native } = require('../lib/native');

test('token operations make no call into the library', () => {
  const fns = native().fns;
  const names = ['krabka_token_compare', 'krabka_token_supersedes', 'krabka_token_format', 'krabka_token_parse', 'krabka_token_validate'];
  const saved = names.map((n) => fns[n]);
  for (const n of names) fns[n] = () => { throw new Error(`${n} was called`); };
  try {
    const a = new k.FencingToken(4242n, 7);
    const b = k.FencingToken.parse('4242:8');
    assert.strictEqual(a.compare(b), -1);
    assert.strictEqual(b.compare(a), 1);
    assert.strictEqual(a.compare(new k.FencingToken(4242n, 7)), 0);
    assert.ok(b.supersedes(a) && !a.supersedes(b));
    assert.ok(new k.FencingToken(4243n, 0).supersedes(b), 'the producer id is compared first');
    assert.strictEqual(a.toString(), '4242:7');
    assert.strictEqual(k.FencingToken.parse('+9223372036854775807:32767').toString(), '9223372036854775807:32767');
    for (const [text, category] of [['4242', 'token_form'], ['1:2:3', 'token_form'], ['x:1', 'token_form'], ['1:32768', 'token_form'],
      ['9223372036854775808:0', 'token_form'], ['1: 2', 'token_form'], ['-1:0', 'negative_token'], ['1:-1', 'negative_token']]) {
      assert.throws(() => k.FencingToken.parse(text), (e) => e instanceof k.DecodeError && e.category === category &&
        (e.message.match(new RegExp(category, 'g')) || []).length === 1, text);
    }
    assert.throws(() => new k.FencingToken(-1n, 0), (e) => e.category === 'negative_token');
  } finally {
    names.forEach((n, i) => { fns[n] = saved[i]; });
  }
});
