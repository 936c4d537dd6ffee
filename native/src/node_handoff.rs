//! The napi calls of the hand-off queues (`handoff.rs`): the main thread opens one per ingress
//! thread before starting it, drains it on the thread's batch message, and closes it when the
//! thread exits. The push is `recordAccepted`'s last step (`node_record.rs`).

use crate::handoff;
use napi::bindgen_prelude::BufferSlice;
use napi::Env;
use napi_derive::napi;

/// A new hand-off queue: its id (never 0).
#[napi(js_name = "handoffOpen")]
pub fn handoff_open() -> u32 {
    handoff::global().open()
}

/// Drop a hand-off queue and what it holds. True if it was open.
#[napi(js_name = "handoffClose")]
pub fn handoff_close(queue: u32) -> bool {
    handoff::global().close(queue)
}

/// Take the entries of queue `queue` that `seqs` (ascending sequence numbers) names, in that
/// order, as one buffer of `u32 LE entry length | u32 LE value length | value | tail` entries;
/// an entry pushed before a named one and not named itself is dropped. A sequence number that is
/// not a whole number ≥ 1 names nothing.
///
/// The buffer is a copy in memory V8 owns (`napi_create_buffer_copy`), not the drain's own
/// `Vec` lent as an external buffer: with the external buffer, `bench/handoff-clone.ts`'s main
/// side was 7.7 µs a send (load 5.5), with the copy 4.5 (load 4.5; the clone's 7.8 and 6.3).
#[napi(js_name = "handoffDrain")]
pub fn handoff_drain<'env>(
    env: &'env Env,
    queue: u32,
    seqs: Vec<f64>,
) -> napi::Result<BufferSlice<'env>> {
    let seqs: Vec<u64> = seqs
        .into_iter()
        .filter(|s| s.is_finite() && s.fract() == 0.0 && *s >= 1.0)
        .map(|s| s as u64)
        .collect();
    BufferSlice::copy_from(env, handoff::global().drain(queue, &seqs).bytes)
}
