import { describe, expect, it } from 'vitest';
import { MESSAGE_LIMITS } from '@svc/protocol';
import { formatSize, readAttachments, toBase64 } from './message-images.js';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** A file of `size` bytes that begins as a PNG does. */
function png(name: string, size = 64): File {
  const bytes = new Uint8Array(size);
  bytes.set(PNG_SIGNATURE);
  return new File([bytes], name, { type: 'image/png' });
}

describe('message images — what a message may carry is checked before it is sent', () => {
  it('toBase64 — the bytes as the gateway decodes them, past the chunk the encoder works in', () => {
    const bytes = Uint8Array.from({ length: 100_000 }, (_, i) => (i * 7) % 256);
    expect(toBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
    expect(toBase64(new Uint8Array())).toBe('');
  });

  it('formatSize — rounded up, so a file just over the limit never reads as the limit', () => {
    expect(formatSize(500)).toBe('500 bytes');
    expect(formatSize(MESSAGE_LIMITS.imageBytes)).toBe('3 MiB');
    expect(formatSize(MESSAGE_LIMITS.imageBytes + 1)).toBe('3.1 MiB');
    expect(formatSize(1536)).toBe('1.5 KiB');
  });

  it('readAttachments — images are read base64; another kind, a file too large, one image too many and a misnamed file are each refused by name', async () => {
    const { images, refusals } = await readAttachments(
      [
        png('one.png'),
        new File(['%PDF-1.7'], 'notes.pdf', { type: 'application/pdf' }),
        png('big.png', MESSAGE_LIMITS.imageBytes + 1),
        new File(['not a png at all'], 'fake.png', { type: 'image/png' }),
        png('two.png'),
        png('three.png'),
        png('four.png'),
      ],
      1,
    );
    expect(images.map((image) => image.name)).toEqual(['one.png', 'two.png', 'three.png']);
    expect(images[0]).toMatchObject({ mediaType: 'image/png', data: toBase64(new Uint8Array(await png('one.png').arrayBuffer())) });
    expect(new Set(images.map((image) => image.id)).size).toBe(3);
    expect(refusals).toEqual([
      'notes.pdf is not a PNG, JPEG, GIF, or WebP image',
      'big.png is 3.1 MiB; an image may be at most 3 MiB',
      'fake.png is not really a PNG image (its bytes say otherwise)',
      'four.png: a message holds at most 4 images',
    ]);
  });
});
