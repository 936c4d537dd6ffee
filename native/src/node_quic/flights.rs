//! The `RebroadcastFlights` class: the rebroadcast scheduler's flight table on the QUIC runtime
//! (`crate::quic::Flights`), for the main thread's `Rebroadcaster`. Flights are numbered (the id
//! `add` returns); each slot's round is one call; a trace's attempts are read on demand, packed.

use super::args::{check_tx, parse_addr};
use super::client::QuicClient;
use crate::error::JsCode;
use crate::quic::{self, FlightSpec, Leader, Resumed, Route, TraceRounds};
use bytes::Bytes;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

/// `add`'s flags.
const ANTI_MEV: u32 = 1;
const UNTIL_EXPIRY: u32 = 2;
const HELD: u32 = 4;
const RESUMED_RESTART: u32 = 8;
const RESUMED_ROLLBACK: u32 = 16;

/// Numbers per attempt in a packed trace (`packed`).
const STRIDE: usize = 6;

/// One of a slot's targets, as the chain view has it (`Leader` in src/delivery/chain-view.ts).
#[napi(object)]
pub struct RoundLeader {
    /// The first slot from now it leads.
    pub slot: f64,
    pub identity: Option<String>,
    /// Its TPU QUIC address ("ip:port"); null when unknown.
    #[napi(ts_type = "string | null")]
    pub tpu_quic: Option<String>,
}

/// The rebroadcast flight table of one `QuicClient` (see `crate::quic::Flights`).
#[napi]
pub struct RebroadcastFlights {
    inner: quic::Flights,
}

fn leaders(list: Vec<RoundLeader>) -> Result<Vec<Leader>, JsCode> {
    list.into_iter()
        .map(|l| {
            let tpu = match l.tpu_quic {
                Some(text) => {
                    let addr = parse_addr(&text)?;
                    Some((Arc::<str>::from(text), addr))
                }
                None => None,
            };
            Ok(Leader {
                slot: l.slot as i64,
                identity: l.identity.map(Arc::from),
                tpu,
            })
        })
        .collect()
}

/// A flight's rounds, packed: `[omitted, outstanding]`, then per attempt `at_us, slot, round,
/// word, leader, tpu` (the last two indexes into `names()`, -1 for none); `word` is `sendMany`'s
/// outcome word, 0 for a released hold.
fn packed(r: TraceRounds) -> Float64Array {
    let mut out = Vec::with_capacity(2 + r.attempts.len() * STRIDE);
    out.push(f64::from(r.omitted));
    out.push(f64::from(r.outstanding));
    for a in &r.attempts {
        out.extend_from_slice(&[
            a.at_us,
            a.slot as f64,
            f64::from(a.round),
            f64::from(a.word),
            f64::from(a.leader),
            f64::from(a.tpu),
        ]);
    }
    Float64Array::new(out)
}

#[napi]
impl RebroadcastFlights {
    /// A table writing with `client`'s connections; a trace keeps at most `maxAttempts` attempts.
    #[napi(constructor)]
    pub fn new(client: &QuicClient, max_attempts: u32) -> Result<Self, JsCode> {
        Ok(RebroadcastFlights {
            inner: quic::Flights::new(client.shared()?, max_attempts as usize),
        })
    }

    /// Flights in the rounds.
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.inner.size() as u32
    }

    /// Start rounds for a transaction (the table copies `wire` once); returns its id.
    /// `flags`: 1 anti-MEV, 2 until expiry, 4 held, 8 resumed after a restart, 16 after a rollback.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &self,
        wire: &[u8],
        max_retries: u32,
        flags: u32,
        base_slot: f64,
        last_valid: Option<f64>,
        deadline: f64,
        replay_until: f64,
        draw: f64,
        accepted_us: Option<f64>,
        covered_tpu: Option<String>,
        covered_slot: f64,
    ) -> Result<u32, JsCode> {
        check_tx(wire, None)?;
        let resumed = if flags & RESUMED_RESTART != 0 {
            Resumed::Restart
        } else if flags & RESUMED_ROLLBACK != 0 {
            Resumed::Rollback
        } else {
            Resumed::No
        };
        Ok(self.inner.add(FlightSpec {
            wire: Bytes::copy_from_slice(wire),
            anti_mev: flags & ANTI_MEV != 0,
            max_retries: i64::from(max_retries),
            until_expiry: flags & UNTIL_EXPIRY != 0,
            base_slot: base_slot as i64,
            held: flags & HELD != 0,
            resumed,
            last_valid: last_valid.map(|v| v as i64),
            deadline,
            replay_until: replay_until as i64,
            draw: draw as i64,
            accepted_us,
            covered: covered_tpu.map(|t| (Arc::from(t), covered_slot as i64)),
        }))
    }

    /// This slot's round (see `crate::quic::Flights::round`): `[n, …n dropped ids, …finished ids]`,
    /// the flights the round dropped and the ended ones whose traces are complete (`take` them).
    #[napi]
    pub fn round(
        &self,
        slot: f64,
        height: f64,
        plain: Vec<RoundLeader>,
        plain_hold: bool,
        anti_mev: Vec<RoundLeader>,
        anti_mev_hold: bool,
    ) -> Result<Uint32Array, JsCode> {
        let plain = Route {
            first: leaders(plain)?,
            hold: plain_hold,
        };
        let anti_mev = Route {
            first: leaders(anti_mev)?,
            hold: anti_mev_hold,
        };
        let r = self
            .inner
            .round(slot as i64, height as i64, &plain, &anti_mev);
        let mut out = Vec::with_capacity(1 + r.dropped.len() + r.finished.len());
        out.push(r.dropped.len() as u32);
        out.extend(r.dropped);
        out.extend(r.finished);
        Ok(Uint32Array::new(out))
    }

    /// Out of the rounds (settled, replaced, closing); true when its trace is complete now.
    #[napi]
    pub fn end(&self, id: u32) -> bool {
        self.inner.end(id)
    }

    /// Its trace's rounds so far, packed (see `packed`); an ended flight's record is let go
    /// once its trace is complete.
    #[napi]
    pub fn take(&self, id: u32) -> Option<Float64Array> {
        self.inner.take(id).map(packed)
    }

    /// Its trace's rounds so far, packed (a live view).
    #[napi]
    pub fn trace(&self, id: u32) -> Option<Float64Array> {
        self.inner.trace(id).map(packed)
    }

    /// The leader identities and TPU addresses the packed attempts number, from the `from`th on
    /// (the JavaScript side keeps a copy and asks only for the ones it has not seen).
    #[napi]
    pub fn names(&self, from: u32) -> Vec<String> {
        self.inner
            .names(from as usize)
            .iter()
            .map(|n| n.to_string())
            .collect()
    }

    /// A chain rollback: every flight again from the next slot, every slot up to `replayUntil`.
    #[napi]
    pub fn rewind(&self, replay_until: f64) {
        self.inner.rewind(replay_until as i64);
    }

    #[napi]
    pub fn refill(&self, id: u32, max_retries: u32) -> bool {
        self.inner.refill(id, i64::from(max_retries))
    }

    #[napi]
    pub fn landed(&self, id: u32, slot: f64) -> bool {
        self.inner.landed(id, slot as i64)
    }

    #[napi]
    pub fn next_round_slot(&self, id: u32) -> Option<f64> {
        self.inner.next_round_slot(id).map(|s| s as f64)
    }

    /// `[rebroadcasts, released, held, heldExpired, deadlinePassed, roundErrors, resent]`.
    #[napi]
    pub fn counters(&self) -> Float64Array {
        let c = self.inner.counters();
        Float64Array::new(
            [
                c.rebroadcasts,
                c.released,
                c.held,
                c.held_expired,
                c.deadline_passed,
                c.round_errors,
                c.resent,
            ]
            .iter()
            .map(|&n| n as f64)
            .collect(),
        )
    }
}

/// The slot offset of rebroadcast round `k` of `n` over `span` slots (`crate::quic::round_offset`).
#[napi]
pub fn rebroadcast_round_offset(k: f64, n: f64, span: f64, draw: f64) -> f64 {
    quic::round_offset(k as i64, n as i64, span as i64, draw as i64) as f64
}

/// Slots a flight's rounds stay stopped after the push said it landed (`LANDED_PAUSE_SLOTS`).
#[napi]
pub const REBROADCAST_LANDED_PAUSE_SLOTS: u32 = quic::LANDED_PAUSE_SLOTS as u32;

/// With `rebroadcast_until_expiry`: a round every slot for this many, then one every this many.
#[napi]
pub const REBROADCAST_UNTIL_EXPIRY_GAP: u32 = quic::UNTIL_EXPIRY_GAP as u32;
