// bench:acquire's leanest HTTP client: tRPC's request for a mutation, byte for byte as its
// httpLink sends it (the path, the content type, the token, the superjson-serialized input as the
// JSON body), written by hand on keep-alive connections, and the answer read as the link reads
// it. The bench's clients share the machine's two cores with the server and PostgreSQL, which
// agents on their own machines do not: through node:http each request cost the clients 0.25-0.5
// ms of CPU, through this about 0.12 ms, so less of the server's time goes to them.
// bench-acquire-raw-client.test.ts holds it to what tRPC's own client sends and reads.
import net from "node:net";
import superjson from "superjson";

/** One answer read off a keep-alive connection: its status and body. */
interface RawAnswer {
  status: number;
  body: Buffer;
}

/**
 * A keep-alive HTTP/1.1 connection that sends one request at a time and reads answers framed by
 * Content-Length (what the server sends for a JSON answer).
 */
class RawConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: { resolve(answer: RawAnswer): void; reject(error: Error): void } | null = null;
  /** False once the socket closed (the server ends a keep-alive connection idle for 5 s). */
  open = true;
  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
      this.take();
    });
    socket.on("error", (error) => this.fail(error));
    socket.on("close", () => {
      this.open = false;
      this.fail(new Error("the server closed a keep-alive connection"));
    });
  }

  static connect(url: URL): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  send(head: string, body: Buffer): Promise<RawAnswer> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
    });
  }

  private take(): void {
    const end = this.buffered.indexOf("\r\n\r\n");
    if (end < 0 || !this.waiting) return;
    const head = this.buffered.subarray(0, end).toString("latin1");
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) return this.fail(new Error(`an answer without Content-Length: ${head}`));
    const bodyEnd = end + 4 + Number(length[1]);
    if (this.buffered.length < bodyEnd) return;
    const status = Number(head.slice(9, 12));
    const body = this.buffered.subarray(end + 4, bodyEnd);
    this.buffered = this.buffered.subarray(bodyEnd);
    const waiting = this.waiting;
    this.waiting = null;
    waiting.resolve({ status, body });
  }

  private fail(error: Error): void {
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }

  close(): void {
    this.socket.destroy();
  }
}

/**
 * tRPC's request for a mutation as its httpLink sends it (the path, the content type, the token,
 * the superjson-serialized input as the JSON body), on keep-alive connections of its own, and
 * the answer read as the link reads it.
 */
export function rawMutation(url: string, token: string) {
  const target = new URL(url);
  const idle: RawConnection[] = [];
  const all: RawConnection[] = [];
  return {
    async mutate(path: string, input: unknown): Promise<unknown> {
      let connection = idle.pop();
      while (connection && !connection.open) connection = idle.pop();
      if (!connection) {
        connection = await RawConnection.connect(target);
        all.push(connection);
      }
      const body = Buffer.from(JSON.stringify(superjson.serialize(input)));
      const head =
        `POST ${target.pathname}/${path} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: keep-alive\r\n` +
        `content-type: application/json\r\nauthorization: Bearer ${token}\r\ncontent-length: ${body.length}\r\n\r\n`;
      const answer = await connection.send(head, body);
      idle.push(connection);
      const json = JSON.parse(answer.body.toString("utf8")) as { result?: { data: unknown }; error?: unknown };
      if (answer.status !== 200 || !json.result)
        throw new Error(`HTTP ${answer.status}: ${answer.body.toString("utf8")}`);
      return superjson.deserialize(json.result.data as Parameters<typeof superjson.deserialize>[0]);
    },
    close: () => all.forEach((c) => c.close()),
  };
}
