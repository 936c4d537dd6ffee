//! The calling thread's scheduling priority (its niceness), for the threads whose delay a client
//! sees: the first sends' QUIC thread (`quicFirstSendNice`) and the ingress threads
//! (`ingressNice`).

/// Set the calling thread's niceness to `nice` (0: leave it as it is). `thread` names it in the
/// error. Lowering it below the process's needs `CAP_SYS_NICE` (or root, or an `RLIMIT_NICE`
/// that allows it); the error says so, and the thread keeps the priority it had. The range
/// (-20..=19) is the caller's to check.
pub fn set_current_thread_nice(nice: i32, thread: &str) -> Result<i32, String> {
    if nice == 0 {
        return Ok(0);
    }
    // SAFETY: plain syscalls on the calling thread, no pointers.
    let (rc, err) = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let rc = libc::setpriority(libc::PRIO_PROCESS, tid, nice);
        (rc, std::io::Error::last_os_error())
    };
    if rc == 0 {
        Ok(nice)
    } else {
        Err(format!("cannot set {thread} to nice {nice}: {err} (it needs CAP_SYS_NICE; the thread keeps the priority it had)"))
    }
}
