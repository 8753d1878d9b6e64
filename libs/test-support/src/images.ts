/** A real 1×1 PNG, base64: what a test sends as a person's image. */
export const TINY_PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A PNG of `bytes` bytes (its signature, then filler): within or past a size limit, as a test needs. */
export function pngOfSize(bytes: number): Buffer {
  const png = Buffer.alloc(bytes, 0x20);
  Buffer.from('89504e470d0a1a0a', 'hex').copy(png);
  return png;
}
