import { createServer, type Server, type Socket, connect } from "node:net";

export interface TcpProxy {
  /** The loopback port clients connect to. */
  readonly port: number;
  /** An outage as a database restart looks from outside: open connections are cut, new ones refused. */
  cut(): Promise<void>;
  /** Accepts connections again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback TCP proxy in front of a real server (PostgreSQL), so a test can
 * take its own store away and bring it back without touching the server that
 * other tests share.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      // A cut connection errors on both sides; that is the point.
      socket.on("error", () => undefined);
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await listen(server, 0);
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  // close() alone waits for open connections to end: they are destroyed at once instead.
  const cutAll = async () => {
    const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    cut: cutAll,
    async restore() {
      if (!server.listening) await listen(server, port);
    },
    async close() {
      await cutAll();
    },
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
}
