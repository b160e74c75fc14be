// A fixture of the run_tests tool: tests that pass, fail and skip.
const test = require('node:test');
const assert = require('node:assert');

const add = (a, b) => a + b;

test('adds', () => {
  assert.strictEqual(add(2, 2), 4);
});

test('adds wrong', () => {
  assert.strictEqual(add(2, 2), 5);
});

test('skipped', { skip: 'not on this machine' }, () => {});

test('group', async (t) => {
  await t.test('inner passes', () => {});
  await t.test('inner fails', () => {
    throw new Error('inner broke');
  });
});
