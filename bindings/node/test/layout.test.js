'use strict';
// The koffi struct declarations match the C header: sizes and field offsets
// of every value struct, as a C compiler sees include/krabka_coord.h.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { koffi, T } = require('../lib/native');

const header = path.resolve(__dirname, '..', '..', '..', 'include', 'krabka_coord.h');

const FIELDS = {
  token: ['krabka_token_t', ['producer_id', 'producer_epoch']],
  key: ['krabka_key_t', ['kind', 'role_len', 'role', 'member_len', 'member']],
  registration: ['krabka_registration_t', ['member_len', 'member', 'registered_at']],
  lease: ['krabka_lease_t', ['member_len', 'member', 'token', 'granted_at', 'deadline']],
  message: ['krabka_message_t', ['topic', 'partition', 'key', 'key_len', 'value', 'value_len']],
  produceResult: ['krabka_produce_result_t', ['partition', 'offset']],
  rosterEntry: ['krabka_roster_entry_t', ['member_len', 'member', 'offset', 'registered_at', 'rank']],
};

test('koffi struct layouts equal the C layouts of include/krabka_coord.h', (t) => {
  if (!fs.existsSync(header)) {
    t.skip('include/krabka_coord.h is not next to this package');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'krabka-layout-'));
  const lines = ['#include <stdio.h>', '#include <stddef.h>', `#include "${header}"`, 'int main(void) {'];
  for (const [key, [ctype, fields]] of Object.entries(FIELDS)) {
    lines.push(`  printf("${key} size %zu\\n", sizeof(${ctype}));`);
    for (const f of fields) lines.push(`  printf("${key} ${f} %zu\\n", offsetof(${ctype}, ${f}));`);
  }
  lines.push('  return 0;', '}');
  fs.writeFileSync(path.join(dir, 'layout.c'), lines.join('\n'));
  try {
    execFileSync(process.env.CC || 'cc', ['-o', path.join(dir, 'layout'), path.join(dir, 'layout.c')], { stdio: 'pipe' });
  } catch (e) {
    t.skip(`no C compiler: ${e.message}`);
    return;
  }
  const out = execFileSync(path.join(dir, 'layout'), { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  for (const line of out.trim().split('\n')) {
    const [key, what, n] = line.split(' ');
    const type = T[key];
    const got = what === 'size' ? koffi.sizeof(type) : koffi.offsetof(type, what);
    assert.equal(got, Number(n), `${FIELDS[key][0]} ${what}: koffi ${got}, C ${n}`);
  }
});
