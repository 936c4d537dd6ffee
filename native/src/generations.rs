//! The data directory's generation file: the key and account generations every process sharing
//! the directory reads without a crossing into LMDB.
//!
//! Why it exists: a per-thread key cache (`keys.rs`, `src/accounts/key-cache.ts`) must drop what
//! it holds as soon as any process of the data directory revokes a key or writes an account
//! (the admin CLI, the cluster's mirror, the server's own commit window crediting points). The
//! generations used to live in LMDB's `meta` table, read with a fresh snapshot on every request:
//! three lmdb-js crossings. LMDB may only be read through lmdb-js in the service's processes, so
//! the generations live here instead, in a small file every process maps (`MAP_SHARED`) and
//! reads with two atomic loads.
//!
//! The protocol, for one write (`begin` … LMDB commit … `end`):
//! - the writer claims a slot with its pid (`begin`) BEFORE its LMDB transaction commits, and
//!   counts itself in `active`;
//! - after the commit is durable it bumps the generation(s) it changed, THEN releases the slot
//!   (`end`).
//! - A reader loads `active` first, then the generations. With `active == 0` the generations it
//!   read count every commit made before that load (a commit precedes its bump, its bump
//!   precedes the slot's release), so an entry read under them is current; with `active != 0`
//!   some write may be committed and not yet counted, and the reader neither trusts nor fills its
//!   cache (the slow path, as correct as before, only slower).
//! - A writer killed (SIGKILL) between `begin` and `end` leaves its slot claimed. Any reader that
//!   sees `active != 0` checks each claimed slot's pid with `kill(pid, 0)`; a pid that no longer
//!   exists (ESRCH) had its write committed or not, and nobody can tell which, so the reader
//!   bumps both generations (every cache re-reads) and then releases the slot. A pid reused by an
//!   unrelated process before that check keeps the slot claimed: every request takes the slow path
//!   (correct, slower) until that process exits. Processes in different pid namespaces must not
//!   share a data directory (a live writer could look dead; its own bump after its commit still
//!   invalidates, only the begin–end window loses its protection).
//! - More writes in progress at once than there are slots (never seen: a write is one short LMDB
//!   transaction): the extra ones count in `active` without a slot; one killed mid-write leaves
//!   `active` above zero for good, and every cache stays disabled (correct, slower) until the
//!   file is removed with every process of the directory stopped.
//!
//! Layout (native-endian, 8-byte words, one page): magic, keys generation, accounts generation,
//! `active`, then [`SLOTS`] writer slots (a pid, 0 when free).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

/// The file's name in the data directory.
pub const FILE_NAME: &str = "generations";
/// Writer slots (one per write in progress).
pub const SLOTS: usize = 64;
/// "LFGEN" and the layout's version, 1.
const MAGIC: u64 = 0x4c46_4745_4e00_0001;
const SIZE: usize = 4096;
const MODE: u32 = 0o600;

#[repr(C)]
struct Layout {
    magic: AtomicU64,
    keys: AtomicU64,
    accounts: AtomicU64,
    active: AtomicU64,
    writers: [AtomicU64; SLOTS],
}

const _: () = assert!(std::mem::size_of::<Layout>() <= SIZE);

/// What a reader sees at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Writes in progress (0: the generations count every committed write).
    pub active: u64,
    pub keys: u64,
    pub accounts: u64,
}

impl Snapshot {
    /// Whether what is read now may be cached under these generations.
    pub fn settled(&self) -> bool {
        self.active == 0
    }
}

/// A write in progress: its slot (or [`SLOTS`]: counted without a slot), released by `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark(pub usize);

#[derive(Debug)]
pub enum GenerationsError {
    Io(io::Error),
    /// The file exists and is not a generation file of this layout.
    Foreign,
}

impl std::fmt::Display for GenerationsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GenerationsError::Io(e) => write!(f, "generation file: {e}"),
            GenerationsError::Foreign => write!(
                f,
                "generation file: not a Landfall generation file (unknown magic)"
            ),
        }
    }
}

/// The mapped file. Every handle of the same file (in this process or another) sees the same
/// words; dropping it unmaps.
pub struct Generations {
    map: *mut Layout,
}

// SAFETY: the mapping is only ever accessed through atomics, and lives until drop.
unsafe impl Send for Generations {}
unsafe impl Sync for Generations {}

impl Drop for Generations {
    fn drop(&mut self) {
        // SAFETY: `map` is the SIZE-byte mapping made by `open`, unmapped once here.
        unsafe { libc::munmap(self.map.cast(), SIZE) };
    }
}

/// Write a zeroed page with the magic into a temporary file of `dir` and link it as `path`;
/// another process's file linked first wins (EEXIST is success).
fn create_whole(dir: &Path, path: &Path) -> io::Result<()> {
    use std::io::Write;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".{FILE_NAME}.{}.{nanos}", std::process::id()));
    let mut page = vec![0u8; SIZE];
    page[..8].copy_from_slice(&MAGIC.to_ne_bytes());
    let made = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(MODE)
            .open(&tmp)?;
        f.write_all(&page)?;
        f.sync_all()?;
        match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    made
}

fn pid() -> u64 {
    u64::from(std::process::id())
}

/// Whether process `pid` is gone (ESRCH). EPERM (another user's process) counts as alive.
fn gone(pid: u64) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks the process exists; nothing is sent.
    let r = unsafe { libc::kill(p, 0) };
    r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

impl Generations {
    /// Map `dir/generations`, creating it (mode 0600) if `create` and absent. The file is made
    /// whole before it gets its name (a page written into a temporary file, then hard-linked):
    /// two processes opening it at once never see a short file or clobber each other's words,
    /// and a full filesystem fails the `write`, never a later store through the mapping
    /// (SIGBUS, as LMDB's lock file does on a full tmpfs).
    pub fn open(dir: &Path, create: bool) -> Result<Generations, GenerationsError> {
        let path = dir.join(FILE_NAME);
        if create && !path.exists() {
            create_whole(dir, &path).map_err(GenerationsError::Io)?;
        }
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(GenerationsError::Io)?;
        let meta = file.metadata().map_err(GenerationsError::Io)?;
        // A file restored by a tool with a wider mode: narrowed as the LMDB files are.
        if meta.permissions().mode() & 0o777 != MODE {
            file.set_permissions(std::fs::Permissions::from_mode(MODE))
                .map_err(GenerationsError::Io)?;
        }
        if meta.len() < SIZE as u64 {
            return Err(GenerationsError::Foreign);
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a shared read-write mapping of SIZE bytes of a file at least that long; the fd
        // may be closed after mmap returns (the mapping keeps the file).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(GenerationsError::Io(io::Error::last_os_error()));
        }
        let g = Generations { map: p.cast() };
        if g.layout().magic.load(SeqCst) != MAGIC {
            return Err(GenerationsError::Foreign);
        }
        Ok(g)
    }

    fn layout(&self) -> &Layout {
        // SAFETY: `map` points to a live, page-aligned mapping at least as large as `Layout`,
        // whose words are only accessed atomically.
        unsafe { &*self.map }
    }

    /// `active`, then the generations (in this order: see the module's protocol). When a write
    /// is in progress, first releases the slots of writers that no longer exist.
    pub fn read(&self) -> Snapshot {
        let s = self.load();
        if s.active == 0 || !self.recover() {
            return s;
        }
        self.load()
    }

    fn load(&self) -> Snapshot {
        let l = self.layout();
        let active = l.active.load(SeqCst);
        Snapshot {
            active,
            keys: l.keys.load(SeqCst),
            accounts: l.accounts.load(SeqCst),
        }
    }

    /// Release the slots of writers that are gone, bumping both generations first (their write
    /// may have committed). Whether any was released.
    pub fn recover(&self) -> bool {
        let l = self.layout();
        let mut released = false;
        for w in &l.writers {
            let p = w.load(SeqCst);
            if p == 0 || !gone(p) {
                continue;
            }
            l.keys.fetch_add(1, SeqCst);
            l.accounts.fetch_add(1, SeqCst);
            if w.compare_exchange(p, 0, SeqCst, SeqCst).is_ok() {
                l.active.fetch_sub(1, SeqCst);
                released = true;
            }
        }
        released
    }

    /// Mark a write as begun (before its LMDB transaction commits).
    pub fn begin(&self) -> Mark {
        let l = self.layout();
        let me = pid();
        // Counted first, so no reader sees the slot claimed and `active` at zero.
        l.active.fetch_add(1, SeqCst);
        for _attempt in 0..2 {
            for (i, w) in l.writers.iter().enumerate() {
                if w.compare_exchange(0, me, SeqCst, SeqCst).is_ok() {
                    return Mark(i);
                }
            }
            if !self.recover() {
                break;
            }
        }
        Mark(SLOTS)
    }

    /// Mark the write ended, after its commit is durable (or failed): bump the generations it may
    /// have changed, then release its slot.
    pub fn end(&self, mark: Mark, keys: bool, accounts: bool) {
        let l = self.layout();
        if keys {
            l.keys.fetch_add(1, SeqCst);
        }
        if accounts {
            l.accounts.fetch_add(1, SeqCst);
        }
        match l.writers.get(mark.0) {
            // Released by a reader that took this process for dead (another pid namespace):
            // it already took the count away.
            Some(w) if w.compare_exchange(pid(), 0, SeqCst, SeqCst).is_err() => {}
            _ => {
                l.active.fetch_sub(1, SeqCst);
            }
        }
    }
}

/// Tests' fresh directory of their own under the system's temporary directory (this module's
/// and `keys.rs`'s), named `<tag>-<pid>-<nanos>`.
#[cfg(test)]
pub(crate) fn test_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> std::path::PathBuf {
        test_dir("lf-gen")
    }

    #[test]
    fn two_handles_share_the_words_and_the_file_is_0600() {
        let d = dir();
        let a = Generations::open(&d, true).unwrap();
        let b = Generations::open(&d, false).unwrap();
        let m = a.begin();
        assert!(!b.read().settled());
        a.end(m, true, false);
        assert_eq!(
            b.read(),
            Snapshot {
                active: 0,
                keys: 1,
                accounts: 0
            }
        );
        let mode = std::fs::metadata(d.join(FILE_NAME))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dead_writers_slot_is_released_with_both_generations_bumped() {
        let d = dir();
        let g = Generations::open(&d, true).unwrap();
        // A slot claimed by a pid that cannot exist (above the kernel's pid_max limit of 2^22).
        g.layout().active.fetch_add(1, SeqCst);
        g.layout().writers[3].store(u64::from(u32::MAX >> 1), SeqCst);
        let s = g.read();
        assert_eq!(
            s,
            Snapshot {
                active: 0,
                keys: 1,
                accounts: 1
            }
        );
        // A live writer (this process) is never released by a reader.
        let m = g.begin();
        assert_eq!(g.read().active, 1);
        g.end(m, false, true);
        assert_eq!(g.read().accounts, 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_foreign_file_is_refused_and_a_missing_one_not_created_without_create() {
        let d = dir();
        assert!(matches!(
            Generations::open(&d, false),
            Err(GenerationsError::Io(_))
        ));
        std::fs::write(d.join(FILE_NAME), vec![7u8; SIZE]).unwrap();
        assert!(matches!(
            Generations::open(&d, true),
            Err(GenerationsError::Foreign)
        ));
        std::fs::write(d.join(FILE_NAME), vec![0u8; 100]).unwrap();
        assert!(matches!(
            Generations::open(&d, true),
            Err(GenerationsError::Foreign)
        ));
        // Nothing left behind by the creations that found the file there.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn processes_creating_it_at_once_share_one_file() {
        let d = dir();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let d = d.clone();
                std::thread::spawn(move || {
                    let g = Generations::open(&d, true).unwrap();
                    let m = g.begin();
                    g.end(m, true, false);
                    g
                })
            })
            .collect();
        let gens: Vec<Generations> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for g in &gens {
            assert_eq!(g.read().keys, 8);
        }
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn more_writers_than_slots_still_count() {
        let d = dir();
        let g = Generations::open(&d, true).unwrap();
        let marks: Vec<Mark> = (0..SLOTS + 2).map(|_| g.begin()).collect();
        assert_eq!(marks[SLOTS], Mark(SLOTS));
        assert_eq!(g.read().active, (SLOTS + 2) as u64);
        for m in marks {
            g.end(m, false, false);
        }
        assert!(g.read().settled());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
