import { connect, type Socket } from 'node:net';

/** An answer read off the wire: status, headers by lower-case name, body as text. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function parseRawAnswer(answer: string): RawAnswer {
  const [head = '', body = ''] = answer.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** Opens a connection to the server on 127.0.0.1:`port` and collects what it answers until it closes. */
export function openRaw(port: number): Promise<{ socket: Socket; answer: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const answer = new Promise<string>((done, fail) => {
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      socket.on('close', () => done(received));
      socket.on('error', fail);
    });
    socket.once('connect', () => resolve({ socket, answer }));
    socket.once('error', reject);
  });
}

/** Sends bytes as they are and returns the whole answer (the request asks the server to close). */
export async function rawRequest(port: number, bytes: string | Buffer): Promise<RawAnswer> {
  const { socket, answer } = await openRaw(port);
  socket.write(bytes);
  return parseRawAnswer(await answer);
}
