//! The process-wide runtimes the QUIC endpoint runs on (see the module doc of `quic`), the first
//! sends' thread and its priority, and two small helpers every part of the endpoint shares.

use super::error::{check_range, QuicError};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// Worker threads of the shared runtime, unless [`set_runtime_threads`] says otherwise before
/// it starts. One: QUIC work for a few dozen leader connections is a fraction of a core (about
/// 40 µs per send at the service's maximum on this project's 2-core bench machine, 0.2 core),
/// and a second worker mostly wakes to find nothing — tokio wakes a sibling to steal whenever
/// it finds work. A/B in one run (bench/ingress-ab.ts, 3 rounds): one thread instead of two took
/// the QUIC threads from 44–48 to 39–43 µs per send at max and from 147–156 to 119–134 µs at
/// 400 req/s, their wake-ups from 1.8 to 0.9 and 4.8 to 3.0 per send, throughput unchanged.
pub const DEFAULT_RUNTIME_THREADS: usize = 1;

static RUNTIME_THREADS: AtomicUsize = AtomicUsize::new(DEFAULT_RUNTIME_THREADS);
static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// Set the runtime's worker threads (1..=64) before it starts (the first client, server or
/// send starts it). Once it runs, only its own count is accepted again.
pub fn set_runtime_threads(threads: usize) -> Result<(), QuicError> {
    check_range("quicThreads", threads, 1..=64)?;
    match RUNTIME.get() {
        Some(_) if RUNTIME_THREADS.load(Ordering::Acquire) != threads => Err(QuicError::InvalidConfig(format!(
            "quicThreads: the QUIC runtime already runs with {} threads (set it before the first client starts)",
            RUNTIME_THREADS.load(Ordering::Acquire)
        ))),
        Some(_) => Ok(()),
        None => {
            RUNTIME_THREADS.store(threads, Ordering::Release);
            Ok(())
        }
    }
}

/// The process-wide tokio runtime every endpoint, connection and task of this module runs on.
/// Built on first use and never shut down (it lives as long as the process, like the addon).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_THREADS.load(Ordering::Acquire))
            .thread_name("landfall-quic")
            .enable_all()
            .build()
            // Only fails if the OS refuses threads or an epoll fd at startup: nothing to recover.
            .expect("cannot start the QUIC runtime")
    })
}

/// Niceness asked for the first sends' thread ([`set_first_send_nice`]); 0 leaves it as the
/// process's.
pub const DEFAULT_FIRST_SEND_NICE: i32 = -10;

static FIRST_SEND_NICE: AtomicI32 = AtomicI32::new(DEFAULT_FIRST_SEND_NICE);
static FIRST_RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
/// What the first sends' thread got when it started: the niceness it runs at, or why it could
/// not have the one asked for.
static FIRST_SEND_PRIORITY: OnceLock<Result<i32, String>> = OnceLock::new();

/// The first sends' own runtime: one thread (`landfall-first`) that runs only the first sends'
/// lane of every peer — its writes, its handshakes and the drivers of its connections (quinn
/// spawns a connection's driver where the handshake runs), so a first send's packets leave from
/// this thread too. It does the first sends' share of the QUIC work (40–70 µs a send on the
/// 2-core bench machine, two leaders each: a small share of a core at any realistic rate), and
/// gets a higher priority than the rest of the process where the OS allows
/// ([`set_first_send_nice`]).
///
/// Why: on a busy machine the shared runtime's thread, woken for a first send, waited for a CPU
/// (in one bench it waited about as long as it ran): the service-added latency's whole tail.
/// Raising that thread's priority instead cut the tail, but let it run each slot's rebroadcast
/// burst (tens of ms) ahead of the request threads, and the clients' p99 tripled.
pub fn first_runtime() -> &'static tokio::runtime::Runtime {
    FIRST_RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("landfall-first")
            .on_thread_start(|| {
                let _ = FIRST_SEND_PRIORITY.set(crate::priority::set_current_thread_nice(
                    FIRST_SEND_NICE.load(Ordering::Acquire),
                    "the first sends' thread",
                ));
            })
            .enable_all()
            .build()
            .expect("cannot start the first sends' runtime")
    })
}

/// Niceness for the first sends' thread (-20..=19; default [`DEFAULT_FIRST_SEND_NICE`]; 0
/// leaves it as the process's), set before that thread starts (a client's first send to a peer
/// starts it). Once it runs, only its own value is accepted again.
pub fn set_first_send_nice(nice: i32) -> Result<(), QuicError> {
    check_range("quicFirstSendNice", nice, -20..=19)?;
    match FIRST_RUNTIME.get() {
        Some(_) if FIRST_SEND_NICE.load(Ordering::Acquire) != nice => Err(QuicError::InvalidConfig(format!(
            "quicFirstSendNice: the first sends' thread already runs with {} asked for (set it before the first client starts)",
            FIRST_SEND_NICE.load(Ordering::Acquire)
        ))),
        Some(_) => Ok(()),
        None => {
            FIRST_SEND_NICE.store(nice, Ordering::Release);
            Ok(())
        }
    }
}

/// The niceness the first sends' thread runs at, or why it could not have the one asked for;
/// None before it starts.
pub fn first_send_priority() -> Option<Result<i32, String>> {
    FIRST_SEND_PRIORITY.get().cloned()
}

/// [`set_first_send_nice`], then start the first sends' thread (if it is not running yet) and
/// wait for it to say what priority it got (see [`first_send_priority`]). Not from within a
/// runtime's task: it blocks the calling thread (for a thread's start, well under a millisecond).
pub fn start_first_sends(nice: i32) -> Result<Result<i32, String>, QuicError> {
    set_first_send_nice(nice)?;
    // A task runs on the thread only once it has set its priority (`on_thread_start`): its
    // answer is what the thread got.
    let (told, answer) = std::sync::mpsc::channel();
    first_runtime().spawn(async move {
        let _ = told.send(first_send_priority());
    });
    Ok(
        match answer.recv_timeout(std::time::Duration::from_secs(5)) {
            Ok(Some(got)) => got,
            _ => Err("the first sends' thread did not start within 5 s".into()),
        },
    )
}

/// Milliseconds since the Unix epoch, as JavaScript's `Date.now()` counts them (with fractions).
pub(super) fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// A mutex's guard, poisoned or not: nothing here panics while holding a lock, and if something
/// ever did, the data is still consistent (every critical section is a few assignments).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
