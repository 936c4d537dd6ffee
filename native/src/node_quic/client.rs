//! The `QuicClient` class: a handle to the process's shared client for one identity, and its
//! send calls. Promises are settled from the runtime's threads through napi deferreds.

use super::args::{check_tx, fail, millis, parse_seed, whole};
use super::results::{
    to_peer_stats, to_send_result, FirstSend, OutcomeCount, PeerStats, SendResult,
};
use super::targets::{parse_targets, Targets};
use crate::base58;
use crate::error::{internal, to_js, JsCode};
use crate::quic::{self, runtime, QuicError};
use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;
use std::time::Duration;

/// Options of `new QuicClient(...)`. Clients are shared per identity across the whole process
/// (all worker threads): constructing one for an identity that already has a live client
/// returns a handle to it, and these options are then ignored.
#[napi(object)]
pub struct QuicClientOptions {
    /// The identity's 32-byte ed25519 secret seed; its certificate is what validators see.
    pub identity: Uint8Array,
    /// Transactions waiting per validator before sends fail with `queue_full` (default 1024).
    pub max_queue_per_peer: Option<f64>,
    /// Idle timeout, ms (default 10 000, at most 10 000).
    pub idle_timeout_ms: Option<f64>,
    /// Keep-alive interval, ms, below the idle timeout (default 1000).
    pub keep_alive_ms: Option<f64>,
    /// A connection whose validator has not been heard from (any packet) for longer than this
    /// is stale: sends on it fail with `connection_stale` and it is dropped, ms (default 1.5 ×
    /// the keep-alive interval; above it, at most the idle timeout).
    pub alive_window_ms: Option<f64>,
    /// Handshake timeout, ms (default 2000).
    pub handshake_timeout_ms: Option<f64>,
    /// A transaction not written within this fails with `send_timeout`, ms (default 2000).
    pub send_timeout_ms: Option<f64>,
    /// First back-off after a validator closes or cannot be reached, ms (default 200).
    pub backoff_base_ms: Option<f64>,
    /// Longest back-off, ms (default 10 000).
    pub backoff_max_ms: Option<f64>,
}

/// A QUIC TPU client: one connection per validator TPU address, shared by every thread of the
/// process that uses the same identity.
#[napi]
pub struct QuicClient {
    /// None once `close()`d.
    inner: Option<Arc<quic::QuicClient>>,
    identity: String,
}

#[napi]
impl QuicClient {
    #[napi(constructor)]
    pub fn new(opts: QuicClientOptions) -> Result<Self, JsCode> {
        let seed = parse_seed(&opts.identity)?;
        let d = quic::ClientConfig::default();
        let idle_timeout = millis("idleTimeoutMs", opts.idle_timeout_ms, d.idle_timeout)?;
        let keep_alive = millis("keepAliveMs", opts.keep_alive_ms, d.keep_alive)?;
        let cfg = quic::ClientConfig {
            max_queue_per_peer: whole(
                "maxQueuePerPeer",
                opts.max_queue_per_peer,
                d.max_queue_per_peer as u64,
                1_000_000,
            )? as usize,
            idle_timeout,
            keep_alive,
            alive_window: millis(
                "aliveWindowMs",
                opts.alive_window_ms,
                (keep_alive * 3 / 2).min(idle_timeout),
            )?,
            handshake_timeout: millis(
                "handshakeTimeoutMs",
                opts.handshake_timeout_ms,
                d.handshake_timeout,
            )?,
            send_timeout: millis("sendTimeoutMs", opts.send_timeout_ms, d.send_timeout)?,
            backoff_base: millis("backoffBaseMs", opts.backoff_base_ms, d.backoff_base)?,
            backoff_max: millis("backoffMaxMs", opts.backoff_max_ms, d.backoff_max)?,
            unused_close: d.unused_close,
        };
        let inner = quic::QuicClient::new(&seed, cfg).map_err(|e| to_js(&e))?;
        let identity = base58::encode(&inner.identity());
        Ok(QuicClient {
            inner: Some(inner),
            identity,
        })
    }

    /// The identity public key, base58.
    #[napi(getter)]
    pub fn identity(&self) -> String {
        self.identity.clone()
    }

    /// The shared client (for the flight table, `flights.rs`).
    pub(super) fn shared(&self) -> Result<&Arc<quic::QuicClient>, JsCode> {
        self.client()
    }

    fn client(&self) -> Result<&Arc<quic::QuicClient>, JsCode> {
        self.inner
            .as_ref()
            .ok_or_else(|| fail("QUIC_CLOSED", "this QuicClient was closed"))
    }

    /// Send one transaction (1..=1232 bytes) to every target ("ip:port") at once, one
    /// unidirectional stream each. Resolves with one result per target, in order; never
    /// rejects for network failures (they are results). Throws for bad arguments.
    #[napi(ts_return_type = "Promise<SendResult[]>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        tx: &[u8],
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let targets = parse_targets(targets)?;
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        // Queued here, on the JS thread: the writes start without waiting for a runtime task.
        let dispatched = client.dispatch(&targets.addrs, tx);
        runtime().spawn(async move {
            let outcomes = dispatched.outcomes().await;
            let results: Vec<SendResult> = targets
                .texts
                .iter()
                .cloned()
                .zip(outcomes)
                .map(to_send_result)
                .collect();
            deferred.resolve(move |_| Ok(results));
        });
        Ok(promise)
    }

    /// The hot path's send: the same writes as `send` (one stream per target, all at once), but
    /// resolves as soon as ONE target has the transaction written, without waiting for slower
    /// or dead targets, or once every target has failed. Outcomes that come later are counted
    /// for `drainOutcomes`. Throws for bad arguments, as `send` does.
    ///
    /// With `deadlineMs` (1..=60000): resolves within that many ms whatever the targets do, and
    /// the transaction is written by then or never — if it resolves with `target: null`, no
    /// target has it and none will (the targets not heard back from are listed with
    /// `deadline`).
    #[napi(ts_return_type = "Promise<FirstSend>")]
    pub fn send_first<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        tx: &[u8],
        deadline_ms: Option<f64>,
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        check_tx(tx, None)?;
        let targets = parse_targets(targets)?;
        let budget = match deadline_ms {
            None => None,
            Some(ms) if ms.is_finite() && ms.fract() == 0.0 && (1.0..=60_000.0).contains(&ms) => {
                Some(Duration::from_millis(ms as u64))
            }
            Some(ms) => {
                return Err(to_js(&QuicError::InvalidConfig(format!(
                    "deadlineMs must be a whole number in 1..=60000 (got {ms})"
                ))))
            }
        };
        let tx = Bytes::copy_from_slice(tx);
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = match budget {
            Some(budget) => client.dispatch_by(&targets.addrs, tx, budget),
            None => client.dispatch(&targets.addrs, tx),
        };
        // Gathered on the first sends' thread, as they are written: the answer does not wait for
        // the shared runtime's thread (busy with rebroadcast rounds, or waiting for a CPU).
        quic::first_runtime().spawn(async move {
            let first = dispatched.first_written().await;
            let target = first
                .written
                .as_ref()
                .map_or(Either::B(Null), |o| Either::A(targets.name(o.addr)));
            let failures: Vec<SendResult> = first
                .failures
                .into_iter()
                .map(|o| to_send_result((targets.name(o.addr), o)))
                .collect();
            let elapsed_us = first.elapsed_us as f64;
            deferred.resolve(move |_| {
                Ok(FirstSend {
                    target,
                    elapsed_us,
                    failures,
                })
            });
        });
        Ok(promise)
    }

    /// Every transaction of `txs` (a rebroadcast round) to every target, queued at once in the
    /// order given. Resolves when every outcome is known with one outcome word per
    /// (transaction, target), `result[i * targets.length + t]` for `txs[i]` to `targets[t]`:
    /// low byte 1 if it was written, else 2 + the reason's index in `sendOutcomeReasons()`;
    /// high byte the validator's close code + 1 behind a failure (capped at 255), 0 for none.
    /// (Every outcome is also counted for `drainOutcomes`.) Every transaction and target is
    /// checked before anything is queued; throws `QUIC_TX_EMPTY` / `QUIC_TX_TOO_LARGE` naming
    /// the index.
    #[napi(ts_return_type = "Promise<Uint16Array>")]
    pub fn send_many<'env>(
        &self,
        env: &'env Env,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'env>,
        txs: Vec<Uint8Array>,
    ) -> Result<Object<'env>, JsCode> {
        let client = self.client()?;
        for (i, tx) in txs.iter().enumerate() {
            check_tx(tx, Some(i))?;
        }
        let addrs = parse_targets(targets)?.addrs;
        // Copied once, here, on the JS thread: nothing JavaScript owns crosses to the runtime.
        let txs: Vec<Bytes> = txs.iter().map(|tx| Bytes::copy_from_slice(tx)).collect();
        let (deferred, promise) = env.create_deferred().map_err(internal)?;
        let dispatched = client.dispatch_batch(&addrs, &txs);
        runtime().spawn(async move {
            let words: Vec<u16> = dispatched
                .outcomes()
                .await
                .iter()
                .map(quic::SendOutcome::word)
                .collect();
            deferred.resolve(move |_| Ok(Uint16Array::new(words)));
        });
        Ok(promise)
    }

    /// Counts of every send outcome per target and reason (`ok` or the failure reason) since
    /// the last call, from every send path of this process's client for the identity (`send`,
    /// `sendFirst` including outcomes after it resolved, `sendMany`), resetting them. Targets
    /// and reasons with no outcome are left out.
    #[napi]
    pub fn drain_outcomes(&self) -> Result<Vec<OutcomeCount>, JsCode> {
        Ok(self
            .client()?
            .drain_outcomes()
            .into_iter()
            .map(|c| OutcomeCount {
                target: c.addr.to_string(),
                reason: c.reason.map_or("ok", quic::FailReason::as_str).to_owned(),
                count: c.count as f64,
            })
            .collect())
    }

    /// Open connections to `targets` ahead of the first send; returns at once.
    #[napi]
    pub fn prewarm(
        &self,
        #[napi(ts_arg_type = "string[] | TpuTargets")] targets: Targets<'_>,
    ) -> Result<(), JsCode> {
        let client = self.client()?;
        client.prewarm(&parse_targets(targets)?.addrs);
        Ok(())
    }

    /// Connection state and counters of every validator this process's client has reached.
    #[napi]
    pub fn peer_stats(&self) -> Result<Vec<PeerStats>, JsCode> {
        Ok(self
            .client()?
            .peer_stats()
            .into_iter()
            .map(to_peer_stats)
            .collect())
    }

    /// Give up this handle. The shared client closes when the process's last handle for the
    /// identity is closed (or garbage-collected): connections linger until what was written is
    /// acknowledged, at most 2 s. Closing twice does nothing.
    #[napi]
    pub fn close(&mut self) {
        self.inner = None;
    }
}
