/** Starts `http-server.ts` in a child process and resolves with its base URL. */
import { fork } from 'node:child_process';
import path from 'node:path';

export interface ServerProcess {
  baseUrl: string;
  close(): Promise<void>;
}

export async function startServer(): Promise<ServerProcess> {
  const child = fork(path.join(import.meta.dirname, 'http-server.ts'), [], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n')[0];
      if (text.includes('\n') && line) resolve(Number(line));
    });
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.disconnect();
      }),
  };
}
