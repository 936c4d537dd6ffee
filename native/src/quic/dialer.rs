//! Connections are dialled by a task of their own, never by a send: a send (or a prewarm) that
//! finds no connection starts the handshake or joins the one under way, so a caller that stops
//! waiting never cuts a handshake short, and the next send finds the connection it paid for.

use super::config::ClientConfig;
use super::gate::Gate;
use super::heard::Heard;
use super::outcome::{Close, FailReason, Failure};
use super::tls;
use super::worker::{Acquired, Lane, PeerState};
use quinn::{ConnectError, Connection, ConnectionError, Endpoint};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

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
    /// The live connection of the peer's `lane` (`reused` = true), or the one the handshake this
    /// send started or joined established, or why there is none. With a gate, waits for a
    /// handshake no longer than its deadline; the handshake itself goes on, for the next send.
    pub(super) async fn connection(
        self: &Arc<Self>,
        state: &Arc<PeerState>,
        lane: Lane,
        gate: Option<&Gate>,
    ) -> Result<(Connection, bool), Failure> {
        let mut dialing = match state.acquire(self, lane) {
            Acquired::Live(conn) => return Ok((conn, true)),
            Acquired::Failed(f) => return Err(f),
            Acquired::Dialing(dialing) => dialing,
        };
        let done = async move {
            dialing
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|d| d.clone())
        };
        let dialed = match gate {
            None => done.await,
            Some(g) => tokio::time::timeout_at(tokio::time::Instant::from_std(g.at), done)
                .await
                .map_err(|_| g.missed())?,
        };
        // The dial task only ends without a result if the runtime is shutting down.
        dialed
            .unwrap_or_else(|| Err(Failure::new(FailReason::ClientClosed, "client closed")))
            .map(|conn| (conn, false))
    }

    /// One handshake with `addr`; a failure comes with the close to record (and back off on)
    /// when it is the peer's doing.
    async fn handshake(&self, addr: SocketAddr) -> Result<Connection, (Failure, Option<Close>)> {
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

/// A handshake for the peer's `lane`, in a task of its own (see the module doc): its end is
/// recorded in the lane's state and handed to every send waiting for it.
pub(super) async fn dial(
    dialer: Arc<Dialer>,
    state: Arc<PeerState>,
    lane: Lane,
    done: watch::Sender<Option<Dialed>>,
) {
    let result = dialer.handshake(state.addr).await;
    let dialed = state.dialed(lane, result, &dialer);
    if let Ok(conn) = &dialed {
        lane.runtime().spawn(watch_close(
            conn.clone(),
            state.clone(),
            lane,
            dialer.cfg.clone(),
        ));
    }
    done.send_replace(Some(dialed));
}

/// Notices a peer closing the connection while nothing is being sent, so the back-off starts
/// then and not at the next send.
async fn watch_close(conn: Connection, state: Arc<PeerState>, lane: Lane, cfg: ClientConfig) {
    let err = conn.closed().await;
    state.note_closed(lane, conn.stable_id(), &err, &cfg);
}
