//! The hand-off queues: an ingress thread's accepted sends, on their way to the main thread (the
//! one rebroadcast scheduler and tracker), without a structured clone.
//!
//! `recordAccepted` (`node_record.rs`) already holds the send's status value, which has the wire
//! and every field of the record; it pushes that value, with a tail of the few numbers the value
//! lacks (written by `src/store/handoff-codec.ts`), onto its thread's queue as its last step. The
//! thread's port still carries one small message per batch naming the entries' sequence numbers,
//! so the batch keeps its place among the thread's other messages; the main thread drains exactly
//! those entries, in one call, on that message.
//!
//! One queue per ingress thread, opened by the main thread before it starts the thread and closed
//! when the thread exits (what a dead thread pushed and never named is dropped with it, as its
//! unsent batch always was). Sequence numbers are the queue's own, from 1, one per push; an entry
//! pushed but never named (its send failed between the record and the hand-off) is dropped by
//! the first drain that names a later one, so batches never misalign.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

/// One entry as the drain copies it out: `u32 LE entry length | u32 LE value length | value | tail`
/// (the entry length counts the value length's four bytes, the value and the tail).
const ENTRY_HEADER: usize = 8;

struct Queue {
    /// The sequence number of the next push.
    next: u64,
    /// Pushed, not drained yet, oldest first: (sequence number, where its entry starts in
    /// `bytes`, its length with the header).
    index: VecDeque<(u64, usize, usize)>,
    /// The entries back to back (one buffer, so a push allocates nothing once it has grown and
    /// a drain of consecutive entries copies one run of bytes).
    bytes: Vec<u8>,
}

impl Queue {
    /// Forget the bytes no entry uses any more: all of them once the queue is empty, else the
    /// drained prefix once it is most of the buffer.
    fn compact(&mut self) {
        match self.index.front() {
            None => self.bytes.clear(),
            Some(&(_, first, _)) if first > 64 * 1024 && first > self.bytes.len() / 2 => {
                self.bytes.drain(..first);
                for e in self.index.iter_mut() {
                    e.1 -= first;
                }
            }
            Some(_) => {}
        }
    }
}

/// Every open queue, by id.
pub struct Queues {
    inner: Mutex<Inner>,
}

struct Inner {
    next_id: u32,
    queues: HashMap<u32, Queue>,
}

/// What a drain found: the entries' bytes, back to back, and how many it passed over.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drained {
    pub bytes: Vec<u8>,
    /// Entries taken.
    pub taken: usize,
    /// Entries pushed before a named one and never named themselves (dropped).
    pub orphans: usize,
    /// Named sequence numbers the queue did not hold (none while the thread lives).
    pub missing: usize,
}

impl Default for Queues {
    fn default() -> Self {
        Self::new()
    }
}

impl Queues {
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                next_id: 1,
                queues: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data, consistent between statements.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new, empty queue; its id (never 0, never reused while the process lives).
    pub fn open(&self) -> u32 {
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id = inner.next_id.wrapping_add(1).max(1);
        inner.queues.insert(
            id,
            Queue {
                next: 1,
                index: VecDeque::new(),
                bytes: Vec::new(),
            },
        );
        id
    }

    /// Drop a queue and whatever it holds. True if it was open.
    pub fn close(&self, id: u32) -> bool {
        self.lock().queues.remove(&id).is_some()
    }

    /// Append `value` and `tail` as one entry; its sequence number, or None if the queue is not
    /// open (its thread's queue was closed: nothing will drain it).
    pub fn push(&self, id: u32, value: &[u8], tail: &[u8]) -> Option<u64> {
        let len = 4 + value.len() + tail.len();
        let mut inner = self.lock();
        let q = inner.queues.get_mut(&id)?;
        let seq = q.next;
        q.next += 1;
        let start = q.bytes.len();
        q.bytes.extend_from_slice(&(len as u32).to_le_bytes());
        q.bytes
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        q.bytes.extend_from_slice(value);
        q.bytes.extend_from_slice(tail);
        q.index.push_back((seq, start, 4 + len));
        Some(seq)
    }

    /// Take the entries `seqs` names (ascending), in that order, dropping every entry before a
    /// named one that is not named itself.
    pub fn drain(&self, id: u32, seqs: &[u64]) -> Drained {
        let mut out = Drained::default();
        let mut inner = self.lock();
        let Some(q) = inner.queues.get_mut(&id) else {
            out.missing = seqs.len();
            return out;
        };
        // Runs of consecutive entries (the usual batch is one run), copied once each.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &want in seqs {
            while q.index.front().is_some_and(|(s, _, _)| *s < want) {
                q.index.pop_front();
                out.orphans += 1;
            }
            match q.index.front() {
                Some(&(s, start, len)) if s == want => {
                    q.index.pop_front();
                    out.taken += 1;
                    match runs.last_mut() {
                        Some((_, end)) if *end == start => *end = start + len,
                        _ => runs.push((start, start + len)),
                    }
                }
                _ => out.missing += 1,
            }
        }
        out.bytes = Vec::with_capacity(runs.iter().map(|(a, b)| b - a).sum());
        for (a, b) in runs {
            out.bytes.extend_from_slice(&q.bytes[a..b]);
        }
        q.compact();
        out
    }

    /// Entries held by queue `id` (None if it is not open).
    pub fn len(&self, id: u32) -> Option<usize> {
        self.lock().queues.get(&id).map(|q| q.index.len())
    }
}

/// The process's queues, shared by every thread.
pub fn global() -> &'static Queues {
    static QUEUES: OnceLock<Queues> = OnceLock::new();
    QUEUES.get_or_init(Queues::new)
}

/// The entries of a drain's bytes: (value, tail) each, in order. For tests and the checks of
/// callers in Rust; JavaScript reads the same layout (`src/store/handoff-codec.ts`).
pub fn entries(mut bytes: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    while bytes.len() >= ENTRY_HEADER {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let vlen = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        let Some(entry) = bytes.get(8..4 + len) else {
            break;
        };
        let (value, tail) = entry.split_at(vlen.min(entry.len()));
        out.push((value, tail));
        bytes = &bytes[4 + len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn drains_what_is_named_in_order() {
        let q = Queues::new();
        let id = q.open();
        assert_eq!(q.push(id, b"value-1", b"t1"), Some(1));
        assert_eq!(q.push(id, b"value-2", b""), Some(2));
        assert_eq!(q.push(id, b"v3", b"tail-3"), Some(3));
        let d = q.drain(id, &[1, 2]);
        assert_eq!((d.taken, d.orphans, d.missing), (2, 0, 0));
        assert_eq!(
            entries(&d.bytes),
            vec![(&b"value-1"[..], &b"t1"[..]), (&b"value-2"[..], &b""[..])]
        );
        assert_eq!(q.len(id), Some(1));
        let d = q.drain(id, &[3]);
        assert_eq!(entries(&d.bytes), vec![(&b"v3"[..], &b"tail-3"[..])]);
        assert_eq!(q.len(id), Some(0));
    }

    #[test]
    fn an_entry_never_named_is_dropped_and_the_batches_stay_aligned() {
        let q = Queues::new();
        let id = q.open();
        for i in 1..=5u8 {
            assert_eq!(q.push(id, &[i], &[]), Some(u64::from(i)));
        }
        // 2 was pushed, its send failed after the record: no message names it.
        let d = q.drain(id, &[1, 3]);
        assert_eq!((d.taken, d.orphans, d.missing), (2, 1, 0));
        assert_eq!(
            entries(&d.bytes),
            vec![(&[1u8][..], &[][..]), (&[3u8][..], &[][..])]
        );
        let d = q.drain(id, &[5]);
        assert_eq!((d.taken, d.orphans, d.missing), (1, 1, 0));
        assert_eq!(entries(&d.bytes), vec![(&[5u8][..], &[][..])]);
        // Named twice, or never pushed: missing, nothing else taken.
        let d = q.drain(id, &[5, 9]);
        assert_eq!((d.taken, d.orphans, d.missing), (0, 0, 2));
        assert!(d.bytes.is_empty());
    }

    #[test]
    fn the_buffer_is_compacted_and_entries_after_it_stay_whole() {
        let q = Queues::new();
        let id = q.open();
        let big = vec![7u8; 1000];
        for i in 1..=200u64 {
            assert_eq!(q.push(id, &big, &i.to_le_bytes()), Some(i));
        }
        // Most of the buffer drained: the prefix goes, the rest keeps its bytes.
        let d = q.drain(id, &(1..=150).collect::<Vec<_>>());
        assert_eq!(d.taken, 150);
        let d = q.drain(id, &[151, 200]);
        assert_eq!((d.taken, d.orphans), (2, 48));
        let e = entries(&d.bytes);
        assert_eq!(e[0], (&big[..], &151u64.to_le_bytes()[..]));
        assert_eq!(e[1], (&big[..], &200u64.to_le_bytes()[..]));
        assert_eq!(q.len(id), Some(0));
    }

    #[test]
    fn queues_are_apart_and_a_closed_one_takes_nothing() {
        let q = Queues::new();
        let a = q.open();
        let b = q.open();
        assert_ne!(a, b);
        assert_eq!(q.push(a, b"a1", b""), Some(1));
        assert_eq!(q.push(b, b"b1", b""), Some(1));
        assert!(q.close(a));
        assert!(!q.close(a));
        assert_eq!(q.push(a, b"a2", b""), None);
        let d = q.drain(a, &[1]);
        assert_eq!((d.taken, d.missing), (0, 1));
        assert_eq!(
            entries(&q.drain(b, &[1]).bytes),
            vec![(&b"b1"[..], &b""[..])]
        );
        assert_eq!(q.len(a), None);
    }

    #[test]
    fn pushes_from_threads_drained_by_another_arrive_whole_and_in_order() {
        let q = Arc::new(Queues::new());
        let ids: Vec<u32> = (0..3).map(|_| q.open()).collect();
        let n = 2_000u32;
        let pushers: Vec<_> = ids
            .iter()
            .map(|&id| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    for i in 0..n {
                        let value = vec![(i % 251) as u8; 1 + (i as usize % 700)];
                        assert_eq!(q.push(id, &value, &i.to_le_bytes()), Some(u64::from(i) + 1));
                    }
                })
            })
            .collect();
        // The drainer names each queue's entries in batches as they come, as the port's messages would.
        let mut next = vec![1u64; ids.len()];
        while next.iter().any(|&s| s <= u64::from(n)) {
            for (k, &id) in ids.iter().enumerate() {
                let held = q.len(id).unwrap() as u64;
                let seqs: Vec<u64> = (next[k]..next[k] + held.min(30)).collect();
                let d = q.drain(id, &seqs);
                assert_eq!((d.taken, d.orphans, d.missing), (seqs.len(), 0, 0));
                for (j, (value, tail)) in entries(&d.bytes).into_iter().enumerate() {
                    let i = (next[k] - 1) as u32 + j as u32;
                    assert_eq!(tail, i.to_le_bytes());
                    assert_eq!(value.len(), 1 + (i as usize % 700));
                    assert!(value.iter().all(|&b| b == (i % 251) as u8));
                }
                next[k] += seqs.len() as u64;
            }
        }
        for p in pushers {
            p.join().unwrap();
        }
        for &id in &ids {
            assert_eq!(q.len(id), Some(0));
        }
    }
}
