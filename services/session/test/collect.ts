/** Every item an async iterable yields, once it ends (e.g. a sandbox's logs without `follow`). */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}
