import { describe, expect, it } from 'vitest';
import { jsonb } from './jsonb.js';

describe('jsonb: JSON text Postgres takes', () => {
  it('puts U+FFFD for a NUL and for a lone surrogate (which Postgres refuses in jsonb), and leaves everything else as it is', () => {
    expect(JSON.parse(jsonb({ s: 'a\u0000b', t: 'x\ud800y', u: 'z\udc00' }))).toEqual({ s: 'a\ufffdb', t: 'x\ufffdy', u: 'z\ufffd' });
    const kept = { emoji: 'ok \ud83d\ude00', literal: 'the text \\u0000 and \\ud800, as typed', backslash: '\\', nested: [{ deep: 'fine' }] };
    expect(JSON.parse(jsonb(kept))).toEqual(kept);
    // A NUL right after an escaped backslash is still a NUL.
    expect(JSON.parse(jsonb('\\\u0000'))).toBe('\\\ufffd');
  });
});
