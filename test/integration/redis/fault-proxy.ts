/**
 * @module A TCP proxy for the fault suites, between a Redis client and a real redis-server: requests pass
 * at once, replies pass, or are delayed by a fixed time each, or trickle through a few bytes at a time, or
 * are held (frozen) until the proxy passes again. Switching the fault takes effect for the bytes still
 * held too, so a suite can start and end a fault mid-run without dropping a connection.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { HOST } from './harness.js';

/** What happens to Redis' replies on their way to the client. */
export type ReplyFault =
  | { readonly kind: 'pass' }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'trickle'; readonly bytes: number; readonly everyMs: number }
  | { readonly kind: 'freeze' };

/** The replies of one connection, in order, released as the current fault allows. */
class ReplyPipe {
  private readonly held: { at: number; buf: Buffer }[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly out: Socket,
    private readonly fault: () => ReplyFault,
  ) {}

  push(buf: Buffer): void {
    const f = this.fault();
    if (f.kind === 'pass' && this.held.length === 0) {
      this.out.write(buf);
      return;
    }
    this.held.push({ at: performance.now() + (f.kind === 'delay' ? f.ms : 0), buf });
    this.schedule();
  }

  /** Called when the fault changes: held bytes follow the new one. */
  kick(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.release();
    this.schedule();
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.held.length = 0;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.held.length === 0) return;
    const f = this.fault();
    const head = this.held[0] as { at: number };
    const wait =
      f.kind === 'trickle' ? f.everyMs : f.kind === 'delay' ? Math.max(0, head.at - performance.now()) : f.kind === 'pass' ? 0 : 5;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.release();
      this.schedule();
    }, wait);
  }

  private release(): void {
    const f = this.fault();
    if (f.kind === 'freeze') return;
    if (f.kind === 'trickle') {
      let budget = f.bytes;
      while (budget > 0 && this.held.length > 0) {
        const head = this.held[0] as { buf: Buffer };
        const part = head.buf.subarray(0, budget);
        head.buf = head.buf.subarray(part.length);
        if (head.buf.length === 0) this.held.shift();
        budget -= part.length;
        this.out.write(part);
      }
      return;
    }
    const now = performance.now();
    while (this.held.length > 0 && (f.kind === 'pass' || (this.held[0] as { at: number }).at <= now)) {
      this.out.write((this.held.shift() as { buf: Buffer }).buf);
    }
  }
}

export class FaultProxy {
  private current: ReplyFault = { kind: 'pass' };
  private readonly pipes = new Set<ReplyPipe>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** A proxy on a free loopback port in front of the redis-server on `targetPort`. */
  static async start(targetPort: number): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer((client) => proxy?.pair(client, targetPort));
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    const address = server.address();
    proxy = new FaultProxy(server, typeof address === 'object' && address !== null ? address.port : 0);
    return proxy;
  }

  /** Sets what happens to replies from now on, including those held now. */
  set(fault: ReplyFault): void {
    this.current = fault;
    for (const pipe of this.pipes) pipe.kick();
  }

  get fault(): ReplyFault {
    return this.current;
  }

  /** Drops every connection open now, as a network blip does; the clients' reconnects pass. */
  drop(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    for (const p of this.pipes) p.close();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private pair(client: Socket, targetPort: number): void {
    const server = connect(targetPort, HOST);
    const pipe = new ReplyPipe(client, () => this.current);
    this.pipes.add(pipe);
    this.sockets.add(client).add(server);
    client.on('data', (d) => server.write(d));
    server.on('data', (d) => pipe.push(d));
    const end = () => {
      pipe.close();
      this.pipes.delete(pipe);
      this.sockets.delete(client);
      this.sockets.delete(server);
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  }
}
