//! Transactions queued by the client, on their way to their outcomes: every outcome in order,
//! or the first written one (with or without a deadline).

use super::gate::Gate;
use super::outcome::{failed, micros, FailReason, FirstSend, SendOutcome};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;
use tokio::sync::oneshot;

/// A queued send: the reply its peer's task will give, or the refusal it got at once.
pub(super) type Pending = Result<oneshot::Receiver<SendOutcome>, SendOutcome>;

/// Transactions queued by [`QuicClient::dispatch`](super::QuicClient::dispatch), on their way to their outcomes.
pub struct Dispatched {
    pub(super) started: Instant,
    pub(super) pending: Vec<(SocketAddr, Pending)>,
    /// The deadline of [`QuicClient::dispatch_by`](super::QuicClient::dispatch_by).
    pub(super) gate: Option<Arc<Gate>>,
}

impl Dispatched {
    /// The outcomes, in the order of the addresses dispatched to.
    pub async fn outcomes(self) -> Vec<SendOutcome> {
        let mut outcomes = Vec::with_capacity(self.pending.len());
        for (addr, p) in self.pending {
            outcomes.push(outcome(addr, self.started, p).await);
        }
        outcomes
    }

    /// Settle with the first outcome that was written, as soon as it is known (slower or dead
    /// peers are not waited for), or with every failure once all have failed. The outcomes not
    /// awaited any more still reach [`QuicClient::drain_outcomes`](super::QuicClient::drain_outcomes): they are counted where they
    /// are decided, not here.
    ///
    /// With a deadline ([`QuicClient::dispatch_by`](super::QuicClient::dispatch_by)), settles by then at the latest: if nothing
    /// was written by the deadline, the gate is closed (nothing can be written any more) and
    /// the peers not heard back from are listed as failed with `deadline` (their tasks count
    /// them when they get to them).
    pub async fn first_written(self) -> FirstSend {
        let Dispatched {
            started,
            pending,
            gate,
        } = self;
        let mut failures = Vec::new();
        let mut waiting = Vec::with_capacity(pending.len());
        for (addr, p) in pending {
            match p {
                Ok(pending) => waiting.push((addr, pending)),
                Err(refused) => failures.push(refused),
            }
        }
        // Cleared once the gate is closed with a write already claimed: its reply is imminent.
        let mut deadline = gate.as_ref().map(|g| tokio::time::Instant::from_std(g.at));
        let mut closed = false;
        // Nothing written by the deadline: those not heard back from are failed with `deadline`.
        let missed = |waiting: Vec<(SocketAddr, oneshot::Receiver<SendOutcome>)>,
                      mut failures: Vec<SendOutcome>,
                      gate: &Gate| {
            for (addr, _) in waiting {
                let f = gate.missed();
                failures.push(SendOutcome {
                    addr,
                    reason: Some(f.reason),
                    code: None,
                    detail: Some(f.detail),
                    elapsed_us: micros(started),
                    reused: false,
                });
            }
            FirstSend {
                written: None,
                elapsed_us: micros(started),
                failures,
            }
        };
        while !waiting.is_empty() {
            // Whichever reply is in first. A handful of peers, so each wake-up polls them all;
            // a ready receiver is removed at once and never polled again.
            let next = std::future::poll_fn(|cx| {
                for (i, (_, pending)) in waiting.iter_mut().enumerate() {
                    if let Poll::Ready(reply) = Pin::new(pending).poll(cx) {
                        return Poll::Ready((i, reply));
                    }
                }
                Poll::Pending
            });
            let (i, reply) = match deadline {
                None => next.await,
                Some(at) => match tokio::time::timeout_at(at, next).await {
                    Ok(r) => r,
                    Err(_) => {
                        let gate = gate.as_deref().expect("a deadline comes with its gate");
                        closed = true;
                        if !gate.close() {
                            return missed(waiting, failures, gate);
                        }
                        // A write claimed the gate just in time: its outcome is imminent.
                        deadline = None;
                        continue;
                    }
                },
            };
            let (addr, _) = waiting.swap_remove(i);
            // The task only drops the reply if the runtime is shutting down.
            let o = reply.unwrap_or_else(|_| failed(addr, started, FailReason::ClientClosed));
            if o.ok() {
                return FirstSend {
                    elapsed_us: o.elapsed_us,
                    written: Some(o),
                    failures,
                };
            }
            failures.push(o);
            if let Some(gate) = gate.as_deref().filter(|g| closed && g.claims() == 0) {
                // The claimed write failed after all, and no other can claim any more.
                return missed(waiting, failures, gate);
            }
        }
        FirstSend {
            written: None,
            elapsed_us: micros(started),
            failures,
        }
    }
}

/// The outcome of one submitted transaction, once its peer's task reports it.
pub(super) async fn outcome(addr: SocketAddr, started: Instant, submitted: Pending) -> SendOutcome {
    match submitted {
        // The task only drops the reply if the runtime is shutting down.
        Ok(pending) => pending
            .await
            .unwrap_or_else(|_| failed(addr, started, FailReason::ClientClosed)),
        Err(refused) => refused,
    }
}
