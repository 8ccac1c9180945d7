'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../slug.js');

test('lower-cases words and joins them with dashes', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});

test('drops accents', () => {
  assert.strictEqual(slugify('Crème brûlée'), 'creme-brulee');
});

test('collapses runs of punctuation', () => {
  assert.strictEqual(slugify('a -- b'), 'a-b');
});
