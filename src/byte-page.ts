// One page of a list, bounded by the bytes of its JSON as well as by its count
// (HANDOFF_LIST_MAX_BYTES): a hundred tasks of a megabyte each made one ListTasks page 199 MB.
//
//   const page = new BytePage(config.listMaxBytes);
//   for (const item of rows) if (!page.add(JSON.stringify(item))) break;   // full: the rest on the next page
//   reply(`{"tasks":${page.json()},…}`);
//
// The first item is always taken, whatever its size: a page is never empty while items remain, so
// a client that follows the next-page token always moves on.

export class BytePage {
  /** The items taken, each as its JSON text. */
  readonly items: string[] = [];
  private bytes = 2;

  constructor(private readonly maxBytes: number) {}

  /** Take an item if it fits (the first one always does); false: the page is full, the item was not taken. */
  add(json: string): boolean {
    const size = Buffer.byteLength(json) + (this.items.length > 0 ? 1 : 0);
    if (this.items.length > 0 && this.bytes + size > this.maxBytes) return false;
    this.items.push(json);
    this.bytes += size;
    return true;
  }

  /** The items taken, as one JSON array. */
  json(): string {
    return `[${this.items.join(',')}]`;
  }
}
