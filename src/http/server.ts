/**
 * Listening: start a uWS app on host:port and return a handle that closes it.
 */
import * as uWS from 'uWebSockets.js';

export interface RunningServer {
  port: number;
  close(): void;
}

/** Listen with `app`; resolves once listening (port 0 picks a free port). */
export function listen(app: uWS.TemplatedApp, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) {
        reject(new Error(`cannot listen on ${host}:${port}`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: () => uWS.us_listen_socket_close(socket),
      });
    });
  });
}
