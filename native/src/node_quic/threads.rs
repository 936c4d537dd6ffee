//! The QUIC runtime's threads, set from JavaScript before they start: how many, and the first
//! sends' thread's priority.

use crate::error::{to_js, JsCode};
use crate::node::{priority_of, ThreadPriority};
use crate::quic;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Worker threads of the process-wide QUIC runtime (1..=64; default 1), set before it starts:
/// before the first `QuicClient` or `QuicServer` of the process. Afterwards only the count it
/// runs with is accepted (`QUIC_INVALID_OPTION` otherwise, naming it).
#[napi]
pub fn set_quic_threads(threads: u32) -> Result<(), JsCode> {
    quic::set_runtime_threads(threads as usize).map_err(|e| to_js(&e))
}

/// Start the first sends' own QUIC thread (`landfall-first`) with niceness `nice` (-20..=19;
/// 0 leaves it as the process's) and say what it got: `{ nice }`, or `{ error }` when the OS
/// refused (lowering it needs `CAP_SYS_NICE`; the thread then runs at the process's priority).
/// A client's first send starts that thread too, with -10, so call this before the first
/// `QuicClient` sends; afterwards only the value it started with is accepted (the result it got
/// is returned again), anything else is `QUIC_INVALID_OPTION`.
#[napi]
pub fn set_quic_first_send_nice(nice: i32) -> Result<ThreadPriority, JsCode> {
    quic::start_first_sends(nice)
        .map(priority_of)
        .map_err(|e| to_js(&e))
}

#[napi]
pub fn quic_first_send_priority() -> Option<ThreadPriority> {
    quic::first_send_priority().map(priority_of)
}
