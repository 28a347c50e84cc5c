//! The CPU device's threads: a rayon pool, and the one helper kernels split work with.
//!
//! - Natively a device either uses rayon's global pool (one std thread per core; the
//!   default) or owns a `rayon::ThreadPool` of the size asked for (tests and benchmarks make
//!   devices with 1, 2 or 4 threads side by side).
//! - On wasm32 the global pool is the only one: the threaded build starts it from JS
//!   (`initThreadPool(n)`, Web Workers on shared memory; [`super::threads`]); in a build
//!   without atomics rayon-core falls back to a pool of one: the calling thread.
//!
//! Kernels get a [`Par`] and call [`Par::for_ranges`] over their output rows or tiles. Every
//! range is computed exactly as one thread would compute it (each output element by the same
//! code, with the same reduction order), so results are bit-identical across thread counts;
//! ranges are disjoint, so each output byte has one writer.
//!
//! The CPU backend runs a split's nodes inside [`Pool::team`]: the pool's other threads join
//! once and spin between nodes, and each `for_ranges` becomes a job whose pieces the team
//! claims from one atomic word (no wake-up per node). Outside a team `for_ranges` goes
//! through rayon's parallel iterator.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::error::{Error, Result};

/// The most threads a CPU device runs (one limit for JS and Rust callers).
pub use super::threads::MAX_THREADS;

/// The threads of one CPU device.
pub struct Pool {
    threads: usize,
    /// Split every node that can be split (see [`Par::eager`]).
    eager: bool,
    /// Natively, a pool of the size asked for (`None`: the global pool, always on wasm).
    own: Option<rayon::ThreadPool>,
}

impl Pool {
    /// Threads of rayon's global pool: the cores natively; on wasm what `initThreadPool`
    /// started (1 in a build without atomics).
    pub fn available() -> usize {
        super::threads::count()
    }

    /// Rayon's global pool, all of it.
    pub fn global() -> Self {
        Self {
            threads: Self::available(),
            eager: false,
            own: None,
        }
    }

    /// A pool of `threads` threads, or of [`Pool::available`] when `None`. Natively any
    /// count up to [`MAX_THREADS`] gets its own std threads; on wasm the count must fit the
    /// global pool (the JS loader sizes it).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let Some(n) = threads else {
            return Ok(Self::global());
        };
        super::threads::check_count(n as f64)?;
        #[cfg(target_arch = "wasm32")]
        {
            let have = Self::available();
            if n > have {
                return Err(Error::InvalidArgument(format!(
                    "threads: {n}, but the wasm thread pool has {have} (threaded build started \
                     with initThreadPool({have}))"
                )));
            }
            Ok(Self {
                threads: n,
                eager: false,
                own: None,
            })
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            // One thread needs no pool: kernels run on the calling thread.
            let own = if n == 1 {
                None
            } else {
                Some(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(n)
                        .thread_name(|i| format!("webtensor-cpu-{i}"))
                        .build()
                        .map_err(|e| Error::Device {
                            device: "CPU".into(),
                            msg: format!("starting {n} threads: {e}"),
                            fault: crate::error::DeviceFault::Failed,
                        })?,
                )
            };
            Ok(Self {
                threads: n,
                eager: false,
                own,
            })
        }
    }

    /// Threads this device computes on.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// This pool with every size threshold off: tests cut the op suite's small nodes over
    /// threads with it.
    pub fn eager(self) -> Self {
        Self {
            eager: true,
            ..self
        }
    }

    /// Runs `body` with this pool's threads held as a team (ggml's thread pool model): the
    /// other threads join once and spin between the [`Par::for_ranges`] calls `body` makes on
    /// the calling thread, taking their pieces at once, instead of sleeping after each and
    /// being woken for the next (a wake-up costs tens of microseconds in a browser, as much
    /// as a small node's work). The team ends with `body`; while it lasts the other threads
    /// busy-wait, so it spans one graph split's CPU nodes and nothing else. With one thread,
    /// or inside a team already, `body` just runs. In the threaded wasm build the team is
    /// the crew (see `crew`), whose members stay between computes.
    pub fn team<R>(&self, body: impl FnOnce() -> R) -> R {
        if self.threads <= 1 || TEAM.with(|t| t.get().is_some()) {
            return body();
        }
        self.lead_team(body)
    }

    /// [`Pool::team`]'s start: the wasm crew (see `crew`).
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    fn lead_team<R>(&self, body: impl FnOnce() -> R) -> R {
        let _lead = Lead::new(crew::join(self.threads));
        body()
    }

    /// [`Pool::team`]'s start: a rayon scope whose spawned jobs serve the team until `body`
    /// ends.
    #[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
    fn lead_team<R>(&self, body: impl FnOnce() -> R) -> R {
        let team = Team::default();
        let threads = self.threads;
        // A panicked piece has already panicked the leader in `Team::run`.
        match &self.own {
            Some(pool) => pool.in_place_scope(|s| lead(s, &team, threads, body)),
            None => rayon::in_place_scope(|s| lead(s, &team, threads, body)),
        }
    }

    /// The handle kernels split work with.
    pub fn par(&self) -> Par<'_> {
        Par {
            threads: self.threads,
            eager: self.eager,
            pool: self.own.as_ref(),
        }
    }
}

/// How a kernel may split its work: a thread count and the pool to run on.
#[derive(Clone, Copy)]
pub struct Par<'a> {
    threads: usize,
    /// Split whatever has two items (thresholds off: the threshold benchmark's baseline).
    eager: bool,
    pool: Option<&'a rayon::ThreadPool>,
}

impl Par<'static> {
    /// Everything on the calling thread.
    pub const SERIAL: Par<'static> = Par {
        threads: 1,
        eager: false,
        pool: None,
    };
}

impl Par<'_> {
    /// Threads work may be split over.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// This handle with every size threshold off: work is split whenever it can be (what
    /// the benchmark that measures the thresholds compares against).
    pub fn eager(self) -> Self {
        Self {
            eager: true,
            ..self
        }
    }

    /// How many threads `n` items share, at least `min` items each: at most one piece per
    /// thread (kernels that size their own tasks by it).
    pub fn pieces(&self, n: usize, min: usize) -> usize {
        let min = if self.eager { 1 } else { min.max(1) };
        (n / min).clamp(1, self.threads)
    }

    /// How many ranges [`Par::for_ranges`] cuts `n` items into (`align` and `min` as there).
    pub fn ranges(&self, n: usize, min: usize, align: usize) -> usize {
        let align = align.max(1);
        let units = n.div_ceil(align);
        let min_units = if self.eager {
            1
        } else {
            min.div_ceil(align).max(1)
        };
        let most = units / min_units;
        if most < 2 || self.threads < 2 {
            return 1;
        }
        most.min(self.threads * PIECES_PER_THREAD)
    }

    /// Calls `f` on disjoint ranges covering `0..n` (in units of `align` items: every range
    /// but the last starts and ends on a multiple of `align`), each of at least `min` items.
    /// One range, on the calling thread, when `n` is too small to give each of two threads
    /// `min` items, or when there is one thread. Otherwise up to [`PIECES_PER_THREAD`] ranges
    /// a thread, which the threads claim as they come free: a thread that starts late (a
    /// worker woken from sleep) or runs slower leaves fewer items to the others' wait.
    pub fn for_ranges(&self, n: usize, min: usize, align: usize, f: impl Fn(Range<usize>) + Sync) {
        let align = align.max(1);
        let pieces = self.ranges(n, min, align);
        // One range: the kernel's closure inlined here (through `for_pieces` it would be an
        // indirect call, and compiled apart from its caller's constants).
        if pieces <= 1 || IN_PIECE.with(Cell::get) {
            if n > 0 {
                f(0..n);
            }
            return;
        }
        self.for_pieces(n, align, pieces, &f)
    }

    /// [`Par::for_ranges`]'s split, through one function: the thread pool's machinery
    /// (rayon's jobs, its producer and consumer) is compiled once, not once for each
    /// kernel's closure (135 copies of rayon's job, 90 KB of the wasm); a range costs one
    /// indirect call.
    fn for_pieces(&self, n: usize, align: usize, pieces: usize, f: &(dyn Fn(Range<usize>) + Sync)) {
        if let Some(team) = TEAM.with(Cell::get) {
            // SAFETY: the pointer is the leader's team, alive while its `Lead` is set.
            let team = unsafe { &*team };
            return team.run(pieces, &|p| f(piece(n, align, pieces, p)));
        }
        let run = || {
            (0..pieces)
                .into_par_iter()
                .for_each(|p| f(piece(n, align, pieces, p)))
        };
        match self.pool {
            Some(pool) => pool.install(run),
            None => run(),
        }
    }
}

/// The team's start in `scope`: `threads - 1` threads serve `team` while the calling thread
/// runs `body`. The team ends however `body` ends (a panic must not leave threads serving,
/// the scope waiting for them).
#[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
fn lead<'s, R>(
    scope: &rayon::Scope<'s>,
    team: &'s Team,
    threads: usize,
    body: impl FnOnce() -> R,
) -> R {
    let _end = End(team);
    for _ in 1..threads {
        scope.spawn(move |_| team.serve());
    }
    let _lead = Lead::new(team);
    body()
}

thread_local! {
    /// The team this thread leads ([`Pool::team`]), if any.
    static TEAM: Cell<Option<*const Team>> = const { Cell::new(None) };
    /// Set while this thread runs a piece of a team's job: a split inside it runs serially.
    static IN_PIECE: Cell<bool> = const { Cell::new(false) };
}

/// Ranges per thread [`Par::for_ranges`] cuts a node into at most, when its items allow.
/// Claiming a piece is one compare-exchange in a team, so a few per thread cost nothing
/// measurable, and they let the threads even out a late start (f32 matvec 4096² in Chromium,
/// 2 threads: one fixed half each left the first thread idle while the second woke).
pub const PIECES_PER_THREAD: usize = 4;

/// Bits of [`Team::claim`]: the job's generation above, its piece count and the next
/// unclaimed piece below (pieces are at most `MAX_THREADS * PIECES_PER_THREAD`, and the
/// claim counter stops one past them).
const PIECE_BITS: u32 = 10;
const PIECE_MASK: u64 = (1 << PIECE_BITS) - 1;
const _: () = assert!(MAX_THREADS * PIECES_PER_THREAD < PIECE_MASK as usize);

/// One job: its pieces' function, on the leader's stack while the job runs.
struct Job<'a> {
    f: &'a (dyn Fn(usize) + Sync),
}

/// The shared state of a team ([`Pool::team`]): the job being run and who took which piece.
struct Team {
    /// `generation << 20 | pieces << 10 | next piece`: one word, so a thread claims a piece
    /// of the job it saw (a compare-exchange fails once the leader has moved on).
    claim: AtomicU64,
    /// The current job (a `*const Job`), stored before `claim` announces it.
    job: AtomicPtr<()>,
    /// Pieces of the current job finished.
    done: AtomicUsize,
    /// The team is over: threads stop serving (rayon teams; the wasm crew never ends).
    #[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
    quit: AtomicBool,
    /// A piece panicked (natively; wasm aborts).
    panicked: AtomicBool,
    /// Members of the wasm crew parked (see `crew`): a job's announcement wakes them.
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    parked: AtomicUsize,
}

impl Default for Team {
    fn default() -> Self {
        Self::new()
    }
}

impl Team {
    const fn new() -> Self {
        Self {
            claim: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            #[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
            quit: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
            parked: AtomicUsize::new(0),
        }
    }

    /// The leader: runs job `f` over `pieces` pieces with whoever of the team is serving,
    /// taking pieces itself, and returns when all are done.
    fn run(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
        let job = Job { f };
        let generation = (self.claim.load(Ordering::Relaxed) >> (2 * PIECE_BITS)) + 1;
        self.done.store(0, Ordering::Relaxed);
        self.job
            .store(&job as *const Job<'_> as *mut (), Ordering::Relaxed);
        // SeqCst with `parked` (a member parks only after seeing no new job; see `crew`).
        self.claim.store(
            generation << (2 * PIECE_BITS) | (pieces as u64) << PIECE_BITS,
            Ordering::SeqCst,
        );
        #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
        if self.parked.load(Ordering::SeqCst) > 0 {
            crew::wake();
        }
        self.take_pieces();
        while self.done.load(Ordering::Acquire) < pieces {
            std::hint::spin_loop();
        }
        if self.panicked.load(Ordering::Acquire) {
            panic!("a CPU kernel panicked on a team thread");
        }
    }

    /// Claims and runs pieces of the announced job until none is left.
    fn take_pieces(&self) {
        let mut c = self.claim.load(Ordering::Acquire);
        loop {
            let (pieces, next) = ((c >> PIECE_BITS) & PIECE_MASK, c & PIECE_MASK);
            if next >= pieces {
                return;
            }
            match self
                .claim
                .compare_exchange_weak(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    // SAFETY: the job stays alive until its pieces are all done, and this
                    // piece is not done yet; the claim's acquire orders the pointer's store.
                    let job = unsafe { &*(self.job.load(Ordering::Acquire) as *const Job<'_>) };
                    IN_PIECE.with(|b| b.set(true));
                    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        (job.f)(next as usize)
                    }))
                    .is_ok();
                    IN_PIECE.with(|b| b.set(false));
                    if !ok {
                        self.panicked.store(true, Ordering::Release);
                    }
                    self.done.fetch_add(1, Ordering::AcqRel);
                    c = self.claim.load(Ordering::Acquire);
                }
                Err(now) => c = now,
            }
        }
    }

    /// A team thread's loop: takes pieces of each job as it is announced, spinning between
    /// jobs, until the team is over.
    #[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
    fn serve(&self) {
        let mut seen = 0;
        loop {
            let c = self.claim.load(Ordering::Acquire);
            if c != seen {
                seen = c;
                self.take_pieces();
                continue;
            }
            if self.quit.load(Ordering::Acquire) {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

/// Ends its team when dropped.
#[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
struct End<'a>(&'a Team);

#[cfg(not(all(target_arch = "wasm32", target_feature = "atomics")))]
impl Drop for End<'_> {
    fn drop(&mut self) {
        self.0.quit.store(true, Ordering::Release);
    }
}

/// Marks the calling thread as its team's leader while alive.
struct Lead;

impl Lead {
    fn new(team: &Team) -> Self {
        TEAM.with(|t| t.set(Some(team as *const Team)));
        Lead
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        TEAM.with(|t| t.set(None));
    }
}

/// The threaded wasm build's team: the pool's workers join once, for good, and wait for jobs
/// between computes, spinning for a while and then parked (`std::thread::park`, a futex on
/// shared memory), woken by the leader with `unpark` when it announces a job.
///
/// Why not a rayon scope per compute, as natively: in Chromium on this project's 2-core test
/// machine, starting one (`scope.spawn`, rayon waking a sleeping worker through its locks,
/// which spin on the page's main thread) and ending it (waiting for that worker to run the
/// job) cost 1–8 ms (medians) whenever the workers had gone to sleep, i.e. after a pause of
/// a millisecond or more between computes (`bench/wake.html`). The cost: the pool's
/// rayon workers are the crew's from the first parallel compute on, so rayon work outside a
/// team runs on the calling thread (nothing in webtensor does that; the pool probe uses a
/// team).
#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
mod crew {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;
    use std::thread::Thread;

    use super::{Pool, Team, MAX_THREADS};

    /// How long a member spins for the next job before it parks (ms): back-to-back computes
    /// (a batch of embeds) find it spinning, a page idle for longer finds it parked.
    const LINGER_MS: f64 = 5.0;

    static TEAM: Team = Team::new();
    /// Members started (rayon workers handed to the crew).
    static STARTED: AtomicUsize = AtomicUsize::new(0);
    /// Members that may take pieces of the current team's jobs (its thread count - 1).
    static WIDTH: AtomicUsize = AtomicUsize::new(0);
    /// Each member's thread, for `unpark`.
    static MEMBERS: [OnceLock<Thread>; MAX_THREADS] = [const { OnceLock::new() }; MAX_THREADS];

    /// The crew's team, with `threads - 1` members taking part (started on first use).
    pub(super) fn join(threads: usize) -> &'static Team {
        if STARTED.load(Ordering::Acquire) == 0 {
            let members = Pool::available().saturating_sub(1);
            if members > 0
                && STARTED
                    .compare_exchange(0, members, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                // Every pool thread but the calling one (index 0: the pool is built with
                // `use_current_thread`) becomes a member. A broadcast, not `rayon::spawn`:
                // spawned jobs go to the caller's own queue, from which it could pop one
                // itself (and never return) while it waits in rayon.
                rayon::spawn_broadcast(|ctx| {
                    if ctx.index() > 0 {
                        member(ctx.index() - 1);
                    }
                });
            }
        }
        WIDTH.store(threads - 1, Ordering::SeqCst);
        &TEAM
    }

    /// Unparks the members taking part (one not parked keeps the token: its next park
    /// returns at once).
    pub(super) fn wake() {
        let width = WIDTH
            .load(Ordering::Acquire)
            .min(STARTED.load(Ordering::Acquire));
        for m in MEMBERS.iter().take(width) {
            if let Some(t) = m.get() {
                t.unpark();
            }
        }
    }

    /// Member `i`'s loop, for the life of the page.
    fn member(i: usize) {
        let _ = MEMBERS[i].set(std::thread::current());
        let mut seen = TEAM.claim.load(Ordering::Acquire);
        let mut spins = 0u32;
        let mut idle_since = crate::clock::now_ms();
        loop {
            let c = TEAM.claim.load(Ordering::Acquire);
            if c != seen {
                seen = c;
                // A member beyond the team's width takes nothing and stays idle (it parks).
                if i < WIDTH.load(Ordering::Acquire) {
                    TEAM.take_pieces();
                    spins = 0;
                    idle_since = crate::clock::now_ms();
                }
                continue;
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 != 0 || crate::clock::now_ms() - idle_since < LINGER_MS {
                std::hint::spin_loop();
                continue;
            }
            // Parked only if no job came since `seen` (SeqCst with the leader's announce,
            // which unparks when it sees `parked`).
            TEAM.parked.fetch_add(1, Ordering::SeqCst);
            if TEAM.claim.load(Ordering::SeqCst) == seen {
                std::thread::park();
            }
            TEAM.parked.fetch_sub(1, Ordering::SeqCst);
            idle_since = crate::clock::now_ms();
        }
    }
}

/// Piece `p` of `0..n` cut into `pieces` near-equal ranges on multiples of `align` (the last
/// may end anywhere): the cut [`Par::for_ranges`] makes, for kernels that cut their own tasks.
pub fn piece(n: usize, align: usize, pieces: usize, p: usize) -> Range<usize> {
    let units = n.div_ceil(align);
    let (u0, u1) = (units * p / pieces, units * (p + 1) / pieces);
    (u0 * align).min(n)..(u1 * align).min(n)
}

/// Runs `tasks` small independent jobs (each a few thousand integer steps) on the CPU
/// device's threads, as kernels split work (a team of the whole pool, `Par::for_ranges`),
/// and returns their checksum and how many distinct pool threads ran at least one: the
/// proof, in tests, that the workers really take work (≥ 2 with a 2-thread pool).
pub fn pool_probe(tasks: usize) -> (u64, usize) {
    let xs: Vec<AtomicU64> = (0..tasks).map(|_| AtomicU64::new(0)).collect();
    let ran: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
    let pool = Pool::global();
    let par = pool.par().eager();
    pool.team(|| {
        par.for_ranges(tasks, 1, 1, |r| {
            for t in r {
                // An LCG chain per task: long enough (~0.5 ms) for idle threads to join.
                let mut x = (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                for _ in 0..200_000 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                }
                xs[t].store(x, Ordering::Relaxed);
                let thread = rayon::current_thread_index().unwrap_or(usize::MAX);
                ran[t].store(thread, Ordering::Relaxed);
            }
        })
    });
    let sum = xs
        .iter()
        .fold(0u64, |a, x| a.wrapping_add(x.load(Ordering::Relaxed)));
    let mut threads: Vec<usize> = ran.iter().map(|t| t.load(Ordering::Relaxed)).collect();
    threads.sort_unstable();
    threads.dedup();
    (sum, threads.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Thread counts a test can make pools of: natively any; on wasm what the pool has.
    fn counts() -> Vec<usize> {
        if cfg!(target_arch = "wasm32") {
            vec![Pool::available()]
        } else {
            vec![1, 2, 3, 4]
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn ranges_cover_every_item_once_aligned_and_at_least_min() {
        for threads in counts() {
            let pool = Pool::new(Some(threads)).unwrap();
            let par = pool.par();
            for (n, min, align) in [(0, 1, 1), (1, 1, 1), (7, 2, 1), (100, 10, 8), (1000, 1, 32)] {
                let seen = Mutex::new(Vec::new());
                par.for_ranges(n, min, align, |r| seen.lock().unwrap().push(r));
                let mut seen = seen.into_inner().unwrap();
                seen.sort_by_key(|r| r.start);
                let pieces = par.ranges(n, min, align);
                assert_eq!(
                    seen.len(),
                    if n == 0 { 0 } else { pieces },
                    "{n} {min} {align}"
                );
                let mut next = 0;
                for (i, r) in seen.iter().enumerate() {
                    assert_eq!(r.start, next);
                    assert!(r.start % align == 0);
                    if i + 1 < seen.len() {
                        assert!(r.len() >= min && r.end % align == 0, "{r:?}");
                    }
                    next = r.end;
                }
                assert_eq!(next, n);
                assert!(seen.len() <= threads * PIECES_PER_THREAD);
            }
        }
    }

    /// In a team, job after job (many small ones, as a graph's nodes) covers every item once,
    /// a split inside a piece runs on its thread, and the threads are free again after.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn a_team_runs_job_after_job_over_every_item_once() {
        use std::sync::atomic::AtomicUsize;
        for threads in counts() {
            let pool = Pool::new(Some(threads)).unwrap();
            let par = pool.par();
            let total = pool.team(|| {
                let mut total = 0;
                for job in 0..2000 {
                    let n = 1 + job % 97;
                    let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                    par.eager().for_ranges(n, 1, 1, |r| {
                        // Nested: serial on this thread, still every item.
                        par.eager().for_ranges(r.len(), 1, 1, |q| {
                            for i in q {
                                hits[r.start + i].fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    });
                    assert!(
                        hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                        "job {job}"
                    );
                    total += n;
                }
                total
            });
            assert_eq!(total, (0..2000).map(|j| 1 + j % 97).sum::<usize>());
            // After the team: plain splits run, and another team starts.
            let sum = AtomicUsize::new(0);
            par.eager().for_ranges(100, 1, 1, |r| {
                sum.fetch_add(r.sum::<usize>(), Ordering::Relaxed);
            });
            assert_eq!(sum.load(Ordering::Relaxed), 4950);
            assert_eq!(pool.team(|| 7), 7);
        }
    }

    /// A panic in a team's piece (natively; wasm aborts) surfaces as a panic of the caller,
    /// and the pool's threads are not left serving (a later team runs).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn a_panicking_piece_ends_the_team_with_a_panic() {
        let pool = Pool::new(Some(2)).unwrap();
        let par = pool.par();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.team(|| {
                par.eager().for_ranges(64, 1, 1, |r| {
                    if r.contains(&63) {
                        panic!("boom");
                    }
                })
            })
        }));
        assert!(r.is_err());
        assert_eq!(pool.team(|| 1 + 1), 2);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn thread_counts_out_of_range_are_errors_naming_the_limit() {
        for n in [0, MAX_THREADS + 1] {
            let e = Pool::new(Some(n)).err().expect("error").to_string();
            assert!(e.contains(&MAX_THREADS.to_string()), "{e}");
        }
        assert_eq!(Pool::new(None).unwrap().threads(), Pool::available());
        if cfg!(target_arch = "wasm32") {
            let have = Pool::available();
            let e = Pool::new(Some(have + 1)).err().expect("error").to_string();
            assert!(e.contains(&format!("has {have}")), "{e}");
        } else {
            assert_eq!(Pool::new(Some(3)).unwrap().threads(), 3);
        }
    }

    /// Without atomics (the SIMD128 build) rayon's global pool falls back to the calling
    /// thread: one thread, and work split through it still runs.
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn wasm_without_atomics_runs_on_the_calling_thread() {
        assert_eq!(Pool::available(), 1);
        let sum = std::sync::atomic::AtomicUsize::new(0);
        Pool::global().par().eager().for_ranges(10, 1, 1, |r| {
            sum.fetch_add(r.sum::<usize>(), std::sync::atomic::Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 45);
        // Rayon's own parallel iterators run too (on the one thread).
        let v: Vec<usize> = (0..4usize).into_par_iter().map(|i| i * 2).collect();
        assert_eq!(v, [0, 2, 4, 6]);
    }

    #[test]
    fn the_pool_probe_sums_every_task() {
        let serial = (0..16u64).fold(0u64, |a, t| {
            let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for _ in 0..200_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            }
            a.wrapping_add(x)
        });
        let (sum, used) = pool_probe(16);
        assert_eq!(sum, serial);
        assert!((1..=Pool::available().max(1)).contains(&used), "{used}");
    }
}
