//! `QuicClient.sendFirstRoute`: the hot path's whole first send in one call (both rounds, see
//! `crate::quic::FirstRoutes`), resolving once with what JavaScript keeps of it — the attempts
//! for the delivery trace as numbers (JavaScript puts the target and reason names in from lists
//! it holds), the two latencies the histograms observe, or only the failure text when nothing
//! was written. JavaScript walks no per-target result object and makes no second call.

use super::args::check_tx;
use super::client::QuicClient;
use super::targets::{Parsed, TpuTargets};
use crate::error::{internal, to_js, JsCode};
use crate::quic::{self, FailReason, FirstRoutes, QuicError, Round};
use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::net::SocketAddr;
use std::time::Duration;

/// A trace attempt's outcome, by its index in `ATTEMPT_OUTCOMES` (src/store/records.ts); the
/// names in that order are `firstAttemptOutcomes()`, which a unit test holds to the TypeScript list.
const WRITTEN: f64 = 0.0;
const PENDING: f64 = 1.0;
const REFUSED: f64 = 2.0;
const BACKOFF: f64 = 3.0;
const QUEUE_FULL: f64 = 4.0;
const FAILED: f64 = 5.0;

/// The names of the outcome indexes `sendFirstRoute`'s attempts use, in index order.
#[napi]
pub fn first_attempt_outcomes() -> Vec<&'static str> {
    vec![
        "written",
        "pending",
        "refused",
        "backoff",
        "queue_full",
        "failed",
    ]
}

/// Numbers per attempt in `sendFirstRoute`'s result.
const STRIDE: usize = 5;

/// The trace's outcome index of a failure: as `outcomeOf` (src/delivery/trace.ts) has it.
fn outcome_of(reason: FailReason, code: Option<u64>) -> f64 {
    match reason {
        FailReason::Backoff => BACKOFF,
        FailReason::QueueFull => QUEUE_FULL,
        _ if code.is_some() => REFUSED,
        _ => FAILED,
    }
}

/// Where `route`'s targets start among the targets of both routes, `first`'s then `next`'s.
fn route_base(routes: [&Parsed; 2], route: usize) -> usize {
    if route == 0 {
        0
    } else {
        routes[0].addrs.len()
    }
}

/// The index of `addr` among the targets of both routes, `first`'s then `next`'s.
fn target_index(routes: [&Parsed; 2], route: usize, addr: SocketAddr) -> f64 {
    let i = routes[route]
        .addrs
        .iter()
        .position(|a| *a == addr)
        .unwrap_or(0);
    (route_base(routes, route) + i) as f64
}

/// What `sendFirstRoute` resolves with (see there).
enum Answer {
    Written(Vec<f64>),
    Failed(String),
}

impl ToNapiValue for Answer {
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        val: Self,
    ) -> napi::Result<napi::sys::napi_value> {
        match val {
            // Copied into memory V8 owns: an external buffer (napi-rs's `Float64Array::new`)
            // would give the garbage collector a finalizer to run for every send.
            Answer::Written(numbers) => {
                let array = Float64ArraySlice::copy_from(&Env::from_raw(env), &numbers)?;
                ToNapiValue::to_napi_value(env, array)
            }
            Answer::Failed(text) => ToNapiValue::to_napi_value(env, text),
        }
    }
}

/// `rounds` for JavaScript (see `send_first_route`); `since_us` is the request's age when the
/// call was made.
fn first_route(rounds: &[Round], routes: [&Parsed; 2], since_us: f64) -> Answer {
    let Some(w) = rounds.last().and_then(|r| r.sent.written.as_ref()) else {
        let failure = rounds
            .iter()
            .flat_map(|r| {
                let route = routes[r.route];
                r.sent.failures.iter().map(move |f| {
                    let reason = f.reason.map_or("failed", FailReason::as_str);
                    format!("{} ({reason})", route.name(f.addr))
                })
            })
            .collect::<Vec<_>>()
            .join(", ");
        return Answer::Failed(failure);
    };
    let attempts: usize = rounds.iter().map(|r| routes[r.route].addrs.len()).sum();
    let mut out = Vec::with_capacity(2 + STRIDE * attempts);
    out.extend_from_slice(&[0.0, w.elapsed_us as f64]);
    for r in rounds {
        let route = routes[r.route];
        let start = since_us + r.offset_us as f64;
        for f in &r.sent.failures {
            let reason = f.reason.unwrap_or(FailReason::ClientClosed);
            out.extend_from_slice(&[
                target_index(routes, r.route, f.addr),
                outcome_of(reason, f.code),
                f.code.map_or(-1.0, |c| c as f64),
                (start + f.elapsed_us as f64).round().max(0.0),
                f64::from(reason as u8),
            ]);
        }
        let Some(o) = r.sent.written.as_ref() else {
            continue;
        };
        let at = start + o.elapsed_us as f64;
        out[0] = at;
        let written = target_index(routes, r.route, o.addr);
        out.extend_from_slice(&[written, WRITTEN, -1.0, at.round().max(0.0), -1.0]);
        if r.sent.failures.len() + 1 < route.addrs.len() {
            let base = route_base(routes, r.route);
            for (i, addr) in route.addrs.iter().enumerate() {
                let index = (base + i) as f64;
                let failed = r.sent.failures.iter().any(|f| f.addr == *addr);
                if index != written && !failed {
                    out.extend_from_slice(&[index, PENDING, -1.0, start.round().max(0.0), -1.0]);
                }
            }
        }
    }
    Answer::Written(out)
}

/// A whole number of ms in 1..=60000, as `sendFirst`'s `deadlineMs`.
fn budget(name: &str, ms: f64) -> Result<Duration, JsCode> {
    if ms.is_finite() && ms.fract() == 0.0 && (1.0..=60_000.0).contains(&ms) {
        Ok(Duration::from_millis(ms as u64))
    } else {
        Err(to_js(&QuicError::InvalidConfig(format!(
            "{name} must be a whole number in 1..=60000 (got {ms})"
        ))))
    }
}

#[napi]
impl QuicClient {
    /// The hot path's first send, both rounds in one call: `tx` to the `first` route's targets
    /// with `round1Ms` of the `budgetMs` (1..=60000 each); only if none of them had it written,
    /// to the `next` route's with the rest of the budget (whole ms, none under 1). Resolves once,
    /// within the budget; "not written" is final (no target has it and none
    /// will). `sinceUs`: µs from the request to this call, the attempts' and latency's origin.
    /// Throws for bad arguments, as `sendFirst` does.
    ///
    /// Written: a `Float64Array` — µs from the request to the write, µs from the written round's
    /// dispatch to the write (the histograms' two numbers), then 5 numbers per attempt of every
    /// round sent, in order (the round's failures known by then, the written target, then the
    /// round's targets not heard back from, `pending`): the target's index among `first`'s then
    /// `next`'s targets, the outcome's index (`firstAttemptOutcomes()`), the close code or -1,
    /// µs since the request (whole), the failure reason's index in `sendOutcomeReasons()` or -1.
    /// Nothing written: the failure text, every failure of every round sent as "target (reason)"
    /// joined by ", " ('' when no round was sent: no target, or no budget). Numbers, not
    /// strings and objects: one typed array is a few napi calls, the attempts as JavaScript
    /// strings in an array and an object around them some thirty; JavaScript puts the names
    /// in from the route's texts and `sendOutcomeReasons()`, which it holds.
    #[napi(ts_return_type = "Promise<Float64Array | string>")]
    #[allow(clippy::too_many_arguments)]
    pub fn send_first_route<'env>(
        &self,
        env: &'env Env,
        first: &TpuTargets,
        next: &TpuTargets,
        tx: &[u8],
        round1_ms: f64,
        budget_ms: f64,
        since_us: f64,
    ) -> Result<Object<'env>, JsCode> {
        check_tx(tx, None)?;
        FirstRouteBudget::check(round1_ms, budget_ms, since_us)?
            .start(env, self, first, next, tx, 0.0)
    }
}

/// `sendFirstRoute`'s numbers, checked: for it and for the send's one call
/// (`inspectAdmitKeySend`, `node_admit_key.rs`), which checks them before it does anything.
pub(crate) struct FirstRouteBudget {
    round1: Duration,
    total: Duration,
    since_us: f64,
}

impl FirstRouteBudget {
    /// `round1Ms` and `budgetMs` whole ms in 1..=60000, `sinceUs` finite; else the thrown error.
    pub(crate) fn check(round1_ms: f64, budget_ms: f64, since_us: f64) -> Result<Self, JsCode> {
        let round1 = budget("round1Ms", round1_ms)?;
        let total = budget("budgetMs", budget_ms)?;
        if !since_us.is_finite() {
            return Err(to_js(&QuicError::InvalidConfig(format!(
                "sinceUs must be a finite number (got {since_us})"
            ))));
        }
        Ok(FirstRouteBudget {
            round1,
            total,
            since_us,
        })
    }

    /// Send `tx` (checked by the caller: a verified transaction, or `check_tx`) as
    /// `sendFirstRoute` does; `later_us` µs after `sinceUs` (the time the caller spent since it
    /// was given). Throws `QUIC_CLOSED` for a closed client.
    pub(crate) fn start<'env>(
        &self,
        env: &'env Env,
        client: &QuicClient,
        first: &TpuTargets,
        next: &TpuTargets,
        tx: &[u8],
        later_us: f64,
    ) -> Result<Object<'env>, JsCode> {
        let client = client.shared()?;
        start_first_route(
            env,
            client,
            [&first.parsed, &next.parsed],
            Bytes::copy_from_slice(tx),
            self.round1,
            self.total,
            self.since_us + later_us,
        )
    }
}

/// `sendFirstRoute`'s work once its arguments are checked: round 1 queued here, on the JS thread (its writes start without waiting
/// for a task); the rounds gathered on the first sends' thread, which resolves the promise.
fn start_first_route<'env>(
    env: &'env Env,
    client: &std::sync::Arc<quic::QuicClient>,
    routes: [&Parsed; 2],
    tx: Bytes,
    round1: Duration,
    total: Duration,
    since_us: f64,
) -> Result<Object<'env>, JsCode> {
    let routes = [routes[0].clone(), routes[1].clone()];
    let (deferred, promise) = env.create_deferred().map_err(internal)?;
    let sending = FirstRoutes::dispatch(
        client,
        &routes[0].addrs,
        routes[1].addrs.clone(),
        tx,
        round1,
        total,
    );
    // Gathered on the first sends' thread, as `sendFirst`'s are (round 2 is queued there).
    quic::first_runtime().spawn(async move {
        let rounds = sending.settle().await;
        let result = first_route(&rounds.rounds, [&routes[0], &routes[1]], since_us);
        deferred.resolve(move |_| Ok(result));
    });
    Ok(promise)
}
