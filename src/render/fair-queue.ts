// The render queue's order: fair shares between clients, first come first served within one client. A client is
// whoever the service can tell apart (the address a request came from). Under overload a client flooding the queue
// (a seeding script, a load test, a crawler) no longer makes a person browsing beside it wait behind all of its
// renders: renderers are handed out to the waiting clients in turn. Within a client, renders go in arrival order,
// so the tiles of one view, asked for together, finish together.
export class FairQueue<T> {
  /** Waiting items per client, oldest first; a client is in here only while it has items. */
  private readonly byClient = new Map<string, T[]>();
  /** Clients in the order their next turn comes. */
  private order: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(client: string, item: T): void {
    let list = this.byClient.get(client);
    if (!list) {
      list = [];
      this.byClient.set(client, list);
      this.order.push(client);
    }
    list.push(item);
    this.count++;
  }

  /** The next item: the oldest of the client whose turn it is; that client then goes to the back of the line. */
  shift(): T | undefined {
    const client = this.order.shift();
    if (client === undefined) return undefined;
    const list = this.byClient.get(client)!;
    const item = list.shift()!;
    this.count--;
    if (list.length) this.order.push(client);
    else this.byClient.delete(client);
    return item;
  }

  /** Takes an item out (a render whose client went away, or whose wait expired); false when it was not queued. */
  remove(client: string, item: T): boolean {
    const list = this.byClient.get(client);
    const i = list ? list.indexOf(item) : -1;
    if (!list || i < 0) return false;
    list.splice(i, 1);
    this.count--;
    if (!list.length) {
      this.byClient.delete(client);
      this.order = this.order.filter((c) => c !== client);
    }
    return true;
  }

  /** Every waiting item (for shutting down). */
  items(): T[] {
    return [...this.byClient.values()].flat();
  }
}
