//! Send targets: "ip:port" strings, parsed on every call, or a [`TpuTargets`] handle parsed once.

use super::args::parse_addr;
use crate::error::JsCode;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::net::SocketAddr;
use std::sync::Arc;

/// TPU addresses parsed once. The hot path sends each transaction to the same few leaders
/// for a whole slot, so the JS side builds one handle per leader set (a slot's route) and
/// passes it to `sendFirst` / `sendMany` / `prewarm` instead of the strings: a call then
/// neither copies the strings out of V8 nor parses them again (measured in `docs/native.md`,
/// "Targets").
#[napi]
pub struct TpuTargets {
    pub(super) parsed: Parsed,
}

/// Targets as the sends use them: the addresses and the text each was given as (results name
/// a target by its text, so two spellings of one address stay apart).
#[derive(Clone)]
pub(super) struct Parsed {
    pub(super) addrs: Arc<[SocketAddr]>,
    pub(super) texts: Arc<[String]>,
}

impl Parsed {
    fn new(texts: Vec<String>) -> Result<Self, JsCode> {
        let addrs = texts
            .iter()
            .map(|t| parse_addr(t))
            .collect::<Result<Arc<[_]>, _>>()?;
        Ok(Parsed {
            addrs,
            texts: texts.into(),
        })
    }

    /// The text `addr` was given as.
    pub(super) fn name(&self, addr: SocketAddr) -> String {
        self.addrs
            .iter()
            .position(|a| *a == addr)
            .map_or_else(|| addr.to_string(), |i| self.texts[i].clone())
    }
}

#[napi]
impl TpuTargets {
    /// Parse "ip:port" targets once; throws `QUIC_INVALID_ADDRESS` naming the first bad one.
    #[napi(constructor)]
    pub fn new(targets: Vec<String>) -> Result<Self, JsCode> {
        Ok(TpuTargets {
            parsed: Parsed::new(targets)?,
        })
    }

    /// How many targets.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        self.parsed.addrs.len() as u32
    }

    /// The targets, as given.
    #[napi]
    pub fn targets(&self) -> Vec<String> {
        self.parsed.texts.to_vec()
    }
}

/// What the send calls take as targets: "ip:port" strings, or a [`TpuTargets`] handle.
pub(super) type Targets<'a> = Either<Vec<String>, ClassInstance<'a, TpuTargets>>;

pub(super) fn parse_targets(targets: Targets<'_>) -> Result<Parsed, JsCode> {
    match targets {
        Either::A(texts) => Parsed::new(texts),
        Either::B(handle) => Ok(handle.parsed.clone()),
    }
}
