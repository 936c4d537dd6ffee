//! A peer's workers: the two tasks, one per [`Lane`], that each take their queue in order, one
//! transaction at a time, over the lane's own connection (see `client.rs` for why one writer per
//! connection, and why first sends have a lane of their own). The state they share is
//! `lanes.rs`'s.

use super::dialer::Dialer;
use super::gate::Gate;
use super::lanes::{Lane, PeerState};
use super::outcome::{FailReason, Failure, SendOutcome};
use super::runtime::lock;
use super::unacked::Unacked;
use bytes::Bytes;
use quinn::{Connection, SendStream, VarInt, WriteError};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// What a peer's queue carries.
pub(super) enum Job {
    Send {
        tx: Bytes,
        queued_at: Instant,
        reply: oneshot::Sender<SendOutcome>,
        gate: Option<Arc<Gate>>,
    },
    Prewarm,
}

/// One lane's task: takes its queue one transaction at a time, over the lane's own connection.
/// A prewarm opens the lane's connection; a connection the lane has not used for `unused_close`
/// is closed.
pub(super) async fn run_lane(
    state: Arc<PeerState>,
    lane: Lane,
    mut jobs: mpsc::Receiver<Job>,
    dialer: Arc<Dialer>,
) {
    // Streams written but maybe not yet acknowledged by the peer.
    let mut unacked = Unacked::default();
    loop {
        let job = tokio::select! {
            job = jobs.recv() => match job {
                Some(job) => job,
                None => break,
            },
            () = tokio::time::sleep(dialer.cfg.unused_close) => {
                state.close_live(lane, &mut unacked, b"unused", false).await;
                continue;
            }
        };
        match job {
            Job::Prewarm => {
                // Starts the handshake if there is no connection (or drops a stale one: every
                // slot's prewarm sweeps the next leaders' connections); never waits for it.
                let _ = state.acquire(&dialer, lane);
            }
            Job::Send {
                tx,
                queued_at,
                reply,
                gate,
            } => {
                let (reused, written) =
                    send_one(&dialer, &state, lane, tx, gate.as_deref(), &mut unacked).await;
                // The caller may have stopped waiting; nothing to do then.
                let _ = reply.send(state.outcome(queued_at, reused, written));
            }
        }
    }
    state
        .close_live(lane, &mut unacked, b"client closed", true)
        .await;
}

/// One queued transaction to this peer: a live connection of `lane` (or the handshake's), then
/// the write. With a gate, nothing is started past its deadline and no wait outlasts it.
async fn send_one(
    dialer: &Arc<Dialer>,
    state: &Arc<PeerState>,
    lane: Lane,
    tx: Bytes,
    gate: Option<&Gate>,
    unacked: &mut Unacked,
) -> (bool, Result<(), Failure>) {
    if let Some(g) = gate.filter(|g| g.passed()) {
        return (false, Err(g.missed()));
    }
    let (conn, reused) = match state.connection(dialer, lane, gate).await {
        Ok(c) => c,
        Err(f) => return (false, Err(f)),
    };
    let written = write_tx(
        &conn,
        tx,
        dialer.cfg.send_timeout,
        gate,
        state.credit_wait(lane),
    )
    .await
    .map(|stream| unacked.push(stream));
    (reused, written)
}

/// One transaction on one new unidirectional stream: open, write, finish. Hands back the
/// finished stream, whose acknowledgement a graceful close waits for. A gate's deadline, when
/// it comes before `limit`, cuts the write short the same way, and the gate must be claimed
/// before the stream is finished.
async fn write_tx(
    conn: &Connection,
    tx: Bytes,
    limit: Duration,
    gate: Option<&Gate>,
    credit_wait: &Mutex<Option<Instant>>,
) -> Result<SendStream, Failure> {
    let own = Instant::now() + limit;
    let by_gate = gate.filter(|g| g.at < own);
    let deadline = tokio::time::Instant::from_std(by_gate.map_or(own, |g| g.at));
    let timed_out = || {
        by_gate.map_or_else(
            || {
                Failure::new(
                    FailReason::SendTimeout,
                    format!("not written within {} ms", limit.as_millis()),
                )
            },
            Gate::missed,
        )
    };
    let mut open = std::pin::pin!(conn.open_uni());
    // One poll first: with credit to spare the stream opens at once, and nothing is recorded.
    let opened = match std::future::poll_fn(|cx| Poll::Ready(open.as_mut().poll(cx))).await {
        Poll::Ready(opened) => Ok(opened),
        Poll::Pending => {
            *lock(credit_wait) = Some(Instant::now());
            let waited = tokio::time::timeout_at(deadline, open).await;
            *lock(credit_wait) = None;
            waited
        }
    };
    let mut stream = match opened {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(Failure::from_connection(FailReason::ConnectionLost, &e)),
        Err(_) => return Err(timed_out()),
    };
    match tokio::time::timeout_at(deadline, stream.write_chunk(tx)).await {
        Ok(Ok(())) => {
            // The point of no return: a finished stream is delivered. Past the deadline, or once
            // the waiter has given up, it must not be: reset, so the peer discards what it got.
            if let Some(g) = gate.filter(|g| !g.claim()) {
                let _ = stream.reset(VarInt::from_u32(0));
                return Err(g.missed());
            }
            match stream.finish() {
                Ok(()) => Ok(stream),
                Err(e) => {
                    if let Some(g) = gate {
                        g.release();
                    }
                    Err(Failure::new(
                        FailReason::ConnectionLost,
                        format!("stream closed before finish: {e}"),
                    ))
                }
            }
        }
        Ok(Err(WriteError::Stopped(code))) => Err(Failure {
            reason: FailReason::StreamStopped,
            code: Some(code.into_inner()),
            detail: format!("peer stopped the stream: code {code}"),
        }),
        Ok(Err(WriteError::ConnectionLost(e))) => {
            Err(Failure::from_connection(FailReason::ConnectionLost, &e))
        }
        Ok(Err(e)) => Err(Failure::new(FailReason::ConnectionLost, e.to_string())),
        Err(_) => {
            // Dropping an unfinished stream would finish it and deliver a truncated
            // transaction; reset it instead so the peer discards what it got.
            let _ = stream.reset(VarInt::from_u32(0));
            Err(timed_out())
        }
    }
}
