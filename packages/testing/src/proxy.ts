import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Address } from './server.js';
import { checkInteger } from './validate.js';

/** `upstream`: client to server (requests); `downstream`: server to client (replies). */
export type ProxyDirection = 'upstream' | 'downstream';

/** What the proxy currently does with the bytes and connections it carries. */
export type ProxyMode =
  | { readonly kind: 'pass' }
  | { readonly kind: 'delay'; readonly upstream: number; readonly downstream: number }
  | { readonly kind: 'drop' }
  | { readonly kind: 'blackhole' }
  | {
      readonly kind: 'reset';
      readonly after: number;
      readonly direction: ProxyDirection;
      /** Resets left before the proxy returns to `pass` by itself. */
      readonly times: number;
    };

/** Options of `startProxy`. */
export interface StartProxyOptions {
  /** The server the proxy forwards to, e.g. a `RedisServer` (it has `host` and `port`). Required. */
  target: Address;
}

/**
 * A TCP proxy on a loopback port in front of one server, for network faults that `tc netem` and
 * iptables cannot make here. Point a client at `host`/`port` and switch modes while it runs.
 * Order of the bytes in each direction is always kept. If the listener fails while it runs (an
 * accept error), the proxy refuses new connections from then on, and every mode switch and
 * `stop()` throw that failure.
 */
export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  readonly target: Address;
  /** ioredis options that reach the target through the proxy: `{ host, port }`. */
  readonly redisOptions: Address;
  readonly mode: ProxyMode;
  /** Client connections open right now. */
  readonly connections: number;
  /** Connections reset by `resetAfter` so far. */
  readonly resets: number;
  /** Forwards every byte at once (bytes already held or delayed go first, in order). */
  pass(): void;
  /** Forwards each chunk `ms` after it arrived; a number delays both directions. */
  delay(ms: number | { upstream?: number; downstream?: number }): void;
  /**
   * Closes every open connection at once, discarding the bytes a `delay` or `blackhole` still
   * holds, and closes every new connection as soon as it is accepted, until the mode changes.
   * To say "the request ran, the reply was lost", use `resetAfter`.
   */
  drop(): void;
  /**
   * Accepts and keeps connections open but forwards nothing, in either direction, closes
   * included: the half-open partition. Bytes are held, not lost, and flow once the mode
   * changes, as TCP retransmits them when a real partition heals.
   */
  blackhole(): void;
  /**
   * Forwards `bytes` more bytes in `direction` on each connection (counted from now, or from
   * when a new connection opens), then resets both ends (RST). `resetAfter(0, 'downstream')`
   * lets requests reach the server and resets before any reply comes back. After `times`
   * resets the proxy returns to `pass` by itself, so a reconnecting client gets through.
   * Defaults: direction `'downstream'`, times `Infinity`.
   */
  resetAfter(bytes: number, direction?: ProxyDirection, times?: number): void;
  /**
   * Closes the listener and every connection, and cancels every pending forward. Idempotent.
   * Rejects, once all is closed, if the listener failed while it ran (see the mode switches).
   */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a TCP proxy on a free loopback port, forwarding to `target` in `pass` mode. */
export async function startProxy(options: StartProxyOptions): Promise<TcpProxy> {
  const target = options?.target;
  if (typeof target?.host !== 'string' || !Number.isInteger(target.port)) {
    throw new TypeError(`target must be { host, port }, got ${JSON.stringify(target)}`);
  }
  // Checked here: net.connect throws a port out of range from the accept handler, at the first
  // client, where nothing catches it.
  if (target.port < 1 || target.port > 65_535) {
    throw new RangeError(
      `target must be { host, port } with a port from 1 to 65535, got ${JSON.stringify(target)}`,
    );
  }
  const proxy = new ProxyServer({ host: target.host, port: target.port });
  await proxy.listen();
  return proxy;
}

/**
 * Bytes, or the end (FIN), clean close or failure (a close after an error) of the sending side,
 * forwarded in order like bytes.
 */
type Item = Buffer | 'end' | 'close' | 'fail';

interface Pending {
  readonly chunk: Item;
  readonly due: number;
}

/** One direction of one connection: a queue that keeps order under delay and blackhole. */
class Pipe {
  private readonly queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Bytes still allowed before a reset, or Infinity. */
  budget = Number.POSITIVE_INFINITY;

  constructor(
    private readonly proxy: ProxyServer,
    private readonly link: Link,
    readonly direction: ProxyDirection,
    private readonly to: Socket,
  ) {}

  push(chunk: Item): void {
    if (this.link.closed) return;
    this.queue.push({ chunk, due: performance.now() + this.proxy.delayOf(this.direction) });
    this.pump();
  }

  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.proxy.mode.kind === 'blackhole' || this.link.closed) return;
    // Back to `pass`, bytes still held by an earlier delay go at once, ahead of the new ones.
    const now = this.proxy.mode.kind === 'pass' ? Number.POSITIVE_INFINITY : performance.now();
    while (this.queue.length > 0 && this.queue[0]!.due <= now) {
      const { chunk } = this.queue.shift()!;
      if (chunk === 'close') {
        this.link.shutdown();
        return;
      }
      if (chunk === 'fail') {
        this.link.abort();
        return;
      }
      if (chunk === 'end') {
        this.to.end();
        continue;
      }
      if (chunk.length >= this.budget) {
        if (this.budget > 0) this.to.write(chunk.subarray(0, this.budget));
        this.link.reset();
        return;
      }
      this.budget -= chunk.length;
      this.to.write(chunk);
    }
    const next = this.queue[0];
    if (next) this.timer = setTimeout(() => this.pump(), next.due - now);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

/** A client connection and its connection to the target. */
class Link {
  closed = false;
  readonly up: Pipe;
  readonly down: Pipe;

  constructor(
    private readonly proxy: ProxyServer,
    private readonly client: Socket,
    private readonly server: Socket,
  ) {
    this.up = new Pipe(proxy, this, 'upstream', server);
    this.down = new Pipe(proxy, this, 'downstream', client);
    client.on('data', (chunk: Buffer) => this.up.push(chunk));
    server.on('data', (chunk: Buffer) => this.down.push(chunk));
    client.on('end', () => this.up.push('end'));
    server.on('end', () => this.down.push('end'));
    // A side that fails or closes ends the pair once the bytes before it went through (never
    // during a blackhole); the proxy never throws for a peer's failure.
    client.on('close', (hadError) => {
      this.up.push(hadError ? 'fail' : 'close');
      this.gone();
    });
    server.on('close', (hadError) => {
      this.down.push(hadError ? 'fail' : 'close');
      this.gone();
    });
    client.on('error', () => {});
    server.on('error', () => {});
  }

  pipes(): Pipe[] {
    return [this.up, this.down];
  }

  /** Sends RST to both ends. */
  reset(): void {
    this.finish();
    this.proxy.counted();
    this.client.resetAndDestroy();
    this.server.resetAndDestroy();
    this.proxy.forget(this);
  }

  /** Closes both ends at once, throwing away what is queued or not yet written. */
  abort(): void {
    this.finish();
    this.client.destroy();
    this.server.destroy();
    this.proxy.forget(this);
  }

  /**
   * One side closed cleanly: each end is closed once its writes are flushed, as the kernel
   * would; destroy() at once would throw away what a slow reader has not taken yet.
   */
  shutdown(): void {
    this.finish();
    for (const socket of [this.client, this.server]) socket.end(() => socket.destroy());
  }

  /** A link still flushing after `shutdown` counts as a connection until both ends closed. */
  private gone(): void {
    if (this.client.destroyed && this.server.destroyed) this.proxy.forget(this);
  }

  private finish(): void {
    this.closed = true;
    this.up.cancel();
    this.down.cancel();
  }
}

class ProxyServer implements TcpProxy {
  readonly host = '127.0.0.1';
  port = 0;
  mode: ProxyMode = { kind: 'pass' };
  resets = 0;
  private readonly links = new Set<Link>();
  private readonly server: Server;
  /** Once the listener closed, by `stop()` or by a failure. */
  private readonly closed: Promise<void>;
  private stopped: Promise<void> | undefined;
  /**
   * What broke the listener after it listened (a failed accept). Without a listener for it the
   * error would be an uncaught exception that ends the whole test process; kept instead, and
   * thrown by the next mode switch and by `stop()`, so the test that used this proxy fails.
   */
  private failure: Error | undefined;

  constructor(readonly target: Address) {
    this.server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => this.accept(client));
    this.closed = new Promise((resolve) => this.server.once('close', () => resolve()));
  }

  get redisOptions(): Address {
    return { host: this.host, port: this.port };
  }

  get connections(): number {
    return this.links.size;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host: this.host, port: 0 }, () => {
        this.server.off('error', reject);
        this.server.on('error', (error) => this.fail(error));
        this.port = (this.server.address() as { port: number }).port;
        resolve();
      });
    });
  }

  delayOf(direction: ProxyDirection): number {
    return this.mode.kind === 'delay' ? this.mode[direction] : 0;
  }

  pass(): void {
    this.switchTo({ kind: 'pass' });
  }

  delay(ms: number | { upstream?: number; downstream?: number }): void {
    const { upstream = 0, downstream = 0 } = typeof ms === 'number' ? { upstream: ms, downstream: ms } : ms;
    checkInteger('delay upstream', upstream, 0);
    checkInteger('delay downstream', downstream, 0);
    this.switchTo({ kind: 'delay', upstream, downstream });
  }

  drop(): void {
    // Closed first: switching the mode first would flush what a blackhole holds to the server,
    // which a partition ending in a reset never delivers.
    for (const link of [...this.links]) link.abort();
    this.switchTo({ kind: 'drop' });
  }

  blackhole(): void {
    this.switchTo({ kind: 'blackhole' });
  }

  resetAfter(
    bytes: number,
    direction: ProxyDirection = 'downstream',
    times = Number.POSITIVE_INFINITY,
  ): void {
    checkInteger('bytes', bytes, 0);
    if (direction !== 'upstream' && direction !== 'downstream') {
      throw new RangeError(`direction must be 'upstream' or 'downstream', got ${String(direction)}`);
    }
    if (times !== Number.POSITIVE_INFINITY) checkInteger('times', times, 1);
    this.switchTo({ kind: 'reset', after: bytes, direction, times });
  }

  counted(): void {
    this.resets += 1;
    if (this.mode.kind !== 'reset') return;
    const times = this.mode.times - 1;
    if (times > 0) this.mode = { ...this.mode, times };
    // Called from a connection's data handler: nothing there could catch a throw.
    else this.apply({ kind: 'pass' });
  }

  forget(link: Link): void {
    this.links.delete(link);
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      for (const link of [...this.links]) link.abort();
      if (this.server.listening) this.server.close();
      await this.closed;
    })();
    return this.stopped.then(() => {
      if (this.failure) throw this.failure;
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private fail(error: Error): void {
    this.failure ??= new Error(`proxy on port ${this.port} stopped accepting: ${error.message}`, {
      cause: error,
    });
    // libuv retries a failing accept at once, and the next fails too: a listener that failed is
    // closed, so new clients are refused instead of left waiting.
    if (this.server.listening) this.server.close();
  }

  private switchTo(mode: ProxyMode): void {
    if (this.failure) throw this.failure;
    if (this.stopped) throw new Error(`proxy on port ${this.port} is stopped`);
    this.apply(mode);
  }

  private apply(mode: ProxyMode): void {
    this.mode = mode;
    for (const link of this.links) {
      for (const pipe of link.pipes()) {
        this.arm(pipe);
        pipe.pump();
      }
    }
  }

  private arm(pipe: Pipe): void {
    const { mode } = this;
    pipe.budget =
      mode.kind === 'reset' && mode.direction === pipe.direction ? mode.after : Number.POSITIVE_INFINITY;
  }

  private accept(client: Socket): void {
    if (this.mode.kind === 'drop' || this.stopped) {
      client.on('error', () => {});
      client.destroy();
      return;
    }
    const server = connect({
      host: this.target.host,
      port: this.target.port,
      allowHalfOpen: true,
      noDelay: true,
    });
    const link = new Link(this, client, server);
    this.links.add(link);
    for (const pipe of link.pipes()) this.arm(pipe);
  }
}
