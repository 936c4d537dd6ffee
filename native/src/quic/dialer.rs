//! One handshake with a peer, and what it needs: the endpoint, the TLS configuration, the
//! settings. Knows nothing of a peer's lanes or sends (`lanes.rs` runs the handshakes, each in a
//! task of its own, and records their end).

use super::config::ClientConfig;
use super::heard::Heard;
use super::outcome::{Close, FailReason, Failure};
use super::tls;
use quinn::{ConnectError, Connection, ConnectionError, Endpoint};
use std::net::SocketAddr;
use std::sync::Arc;

/// How a handshake ended, as the sends waiting for it see it.
pub(super) type Dialed = Result<Connection, Failure>;

/// What a peer's task needs to (re)connect; shared by all of them, never referring back to the
/// client (so dropping the client ends them).
pub(super) struct Dialer {
    pub(super) cfg: ClientConfig,
    pub(super) endpoint: Endpoint,
    pub(super) quinn: quinn::ClientConfig,
    /// When each peer was last heard from, stamped by the endpoint's socket.
    pub(super) heard: Arc<Heard>,
}

impl Dialer {
    /// One handshake with `addr`; a failure comes with the close to record (and back off on)
    /// when it is the peer's doing.
    pub(super) async fn handshake(
        &self,
        addr: SocketAddr,
    ) -> Result<Connection, (Failure, Option<Close>)> {
        let closed = || {
            (
                Failure::new(FailReason::ClientClosed, "client closed"),
                None,
            )
        };
        let connecting =
            match self
                .endpoint
                .connect_with(self.quinn.clone(), addr, &tls::server_name(addr))
            {
                Ok(c) => c,
                Err(ConnectError::EndpointStopping) => return Err(closed()),
                Err(e) => {
                    let detail = format!("cannot connect to {addr}: {e}");
                    return Err((
                        Failure::new(FailReason::ConnectFailed, detail.clone()),
                        Some(Close {
                            code: None,
                            reason: detail,
                        }),
                    ));
                }
            };
        match tokio::time::timeout(self.cfg.handshake_timeout, connecting).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(ConnectionError::LocallyClosed)) => Err(closed()),
            Ok(Err(e)) => Err((
                Failure::from_connection(FailReason::ConnectFailed, &e),
                Some(Close::of(&e)),
            )),
            Err(_) => {
                let detail = format!(
                    "no handshake within {} ms",
                    self.cfg.handshake_timeout.as_millis()
                );
                Err((
                    Failure::new(FailReason::HandshakeTimeout, detail.clone()),
                    Some(Close {
                        code: None,
                        reason: detail,
                    }),
                ))
            }
        }
    }
}
