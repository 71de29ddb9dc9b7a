//! Where batch rollouts run: a rayon pool of their own (never tokio's threads, which keep
//! serving RPCs), its threads at a lowered scheduling priority, and a round-robin queue of
//! work slices so that batch runs in flight at once share the cores.
//!
//! Each run is split into blocks ([`Slice`]s). A pool task takes the block at the front of
//! the queue, plays it for one time slice, and puts it back at the end if it is not done; so
//! every block of every run gets a turn in order, whichever run was submitted first.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::lock;

/// How long a block plays before it yields its thread to the next one in the queue.
pub const TIME_SLICE: Duration = Duration::from_millis(20);

/// The nice value added to each pool thread, over the process's own: interactive RPCs on the
/// runtime's threads win the CPU whenever they want it.
pub const NICE_INCREMENT: i32 = 10;

/// The highest (weakest) nice value Linux has.
const NICEST: i32 = 19;

/// How a pool thread is made to yield to the serving threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lowered {
    /// Nice raised to this value (the process's own + [`NICE_INCREMENT`], at most 19).
    Nice(i32),
    /// The process is already at nice 19: `SCHED_IDLE`, which runs only when nothing else at
    /// any nice value wants the CPU.
    Idle,
}

/// What a thread of a process at nice `own` becomes.
fn lowered_from(own: i32) -> Lowered {
    if own >= NICEST {
        Lowered::Idle
    } else {
        Lowered::Nice(own.saturating_add(NICE_INCREMENT).min(NICEST))
    }
}

/// The calling thread's nice value (on Linux the nice value is per thread).
fn own_nice() -> std::io::Result<i32> {
    let tid = nix::unistd::gettid().as_raw();
    let who = libc::id_t::try_from(tid).map_err(std::io::Error::other)?;
    // getpriority may answer -1 as a value: errno tells an error apart.
    nix::errno::Errno::clear();
    // SAFETY: getpriority reads only its integer arguments.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, who) };
    if nice == -1 && nix::errno::Errno::last_raw() != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(nice)
}

/// Lowers the calling thread's scheduling priority below `own`, the nice value of the thread
/// that built the pool (the serving threads'), whatever it is.
fn lower_priority(own: i32) {
    let tid = nix::unistd::gettid().as_raw();
    let Ok(who) = libc::id_t::try_from(tid) else {
        return;
    };
    let rc = match lowered_from(own) {
        // SAFETY: setpriority reads only its integer arguments.
        Lowered::Nice(nice) => unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) },
        Lowered::Idle => {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sched_setscheduler reads the parameter struct it is given, which lives
            // across the call.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) }
        }
    };
    if rc != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not lower a batch thread's priority; batch runs compete with RPCs as equals"
        );
    }
}

/// `threads` rayon threads (at least 1) named `<name>-<i>`, each at a lower scheduling
/// priority than the calling thread's (which stands for the serving threads'): work on them
/// never takes the CPU from an RPC that wants it.
pub(crate) fn lowered_threads(
    name: &'static str,
    threads: usize,
) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    let own = own_nice().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the evaluator's nice value; assuming 0");
        0
    });
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(move |_| lower_priority(own))
        .build()
}

/// A unit of batch work that runs in slices.
pub trait Slice: Send {
    /// Plays for about [`TIME_SLICE`]; says whether the work is done.
    fn run_slice(&mut self) -> bool;

    /// `run_slice` panicked and the work is dropped: settle what it owed (a block ends its
    /// run as failed, so the run cannot stay unfinished).
    fn abandon(&mut self) {}
}

type Queue = Arc<Mutex<VecDeque<Box<dyn Slice>>>>;

pub struct Pool {
    threads: rayon::ThreadPool,
    queue: Queue,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads.current_num_threads())
            .finish()
    }
}

impl Pool {
    /// A pool of `threads` threads (at least 1).
    pub fn new(threads: usize) -> Result<Pool, rayon::ThreadPoolBuildError> {
        Ok(Pool {
            threads: lowered_threads("ale-batch", threads)?,
            queue: Arc::default(),
        })
    }

    pub fn threads(&self) -> usize {
        self.threads.current_num_threads()
    }

    /// Runs `job` once on a pool thread, in its turn: it joins the back of the queue, as a
    /// block does. (A job handed to rayon from outside the pool waits in rayon's global queue
    /// until a thread has nothing local to do, which never happens while blocks take turns:
    /// a run submitted during another would stay queued until that one ended.)
    /// `on_panic` runs instead if `job` panics.
    pub fn spawn_or(
        &self,
        job: impl FnOnce() + Send + 'static,
        on_panic: impl FnOnce() + Send + 'static,
    ) {
        self.schedule(Box::new(Once {
            job: Some(Box::new(job)),
            on_panic: Some(Box::new(on_panic)),
        }));
    }

    /// Queues `work` to run slice by slice until done.
    pub fn schedule(&self, work: Box<dyn Slice>) {
        lock(&self.queue).push_back(work);
        let queue = self.queue.clone();
        self.threads.spawn(move || turn(queue));
    }
}

/// A job that runs once, as one slice.
struct Once {
    job: Option<Box<dyn FnOnce() + Send>>,
    on_panic: Option<Box<dyn FnOnce() + Send>>,
}

impl Slice for Once {
    fn run_slice(&mut self) -> bool {
        if let Some(job) = self.job.take() {
            job();
        }
        true
    }

    fn abandon(&mut self) {
        if let Some(on_panic) = self.on_panic.take() {
            on_panic();
        }
    }
}

/// One turn: the block at the front plays a slice and, unless done, goes to the back. One
/// turn is in the pool's queue for each block in ours, so each block is always picked up.
fn turn(queue: Queue) {
    let Some(mut work) = lock(&queue).pop_front() else {
        return;
    };
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.run_slice()))
        .unwrap_or_else(|_| {
            tracing::error!("a batch block panicked; it is dropped");
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.abandon())).is_err() {
                tracing::error!("settling the dropped batch block panicked too");
            }
            true
        });
    if !done {
        lock(&queue).push_back(work);
        rayon::spawn(move || turn(queue));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting {
        left: usize,
        log: Arc<Mutex<Vec<char>>>,
        name: char,
        finished: Arc<AtomicUsize>,
    }

    impl Slice for Counting {
        fn run_slice(&mut self) -> bool {
            lock(&self.log).push(self.name);
            self.left -= 1;
            if self.left == 0 {
                self.finished.fetch_add(1, Ordering::SeqCst);
            }
            self.left == 0
        }
    }

    #[test]
    fn blocks_of_two_runs_take_turns() {
        let pool = Pool::new(1).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let finished = Arc::new(AtomicUsize::new(0));
        // Hold the only thread so both runs are queued before either plays.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        pool.spawn_or(
            move || {
                let _ = rx.recv();
            },
            || {},
        );
        for name in ['a', 'b'] {
            pool.schedule(Box::new(Counting {
                left: 3,
                log: log.clone(),
                name,
                finished: finished.clone(),
            }));
        }
        tx.send(()).unwrap();
        while finished.load(Ordering::SeqCst) < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(*lock(&log), vec!['a', 'b', 'a', 'b', 'a', 'b']);
    }

    /// The calling thread's scheduling policy and nice value.
    fn priority_of_this_thread() -> (i32, i32) {
        // SAFETY: sched_getscheduler(0) asks about the calling thread.
        let policy = unsafe { libc::sched_getscheduler(0) };
        (policy, own_nice().unwrap())
    }

    /// Whether a thread at `(policy, nice)` runs strictly below one at `base`.
    fn is_lower(thread: (i32, i32), base: (i32, i32)) -> bool {
        let (policy, nice) = thread;
        let (base_policy, base_nice) = base;
        (policy == libc::SCHED_IDLE && base_policy != libc::SCHED_IDLE)
            || (policy == base_policy && nice > base_nice)
    }

    #[test]
    fn pool_threads_run_at_a_lower_priority() {
        // Whatever nice value the tests run under (`nice -n 10 cargo test`, or 19).
        let base = priority_of_this_thread();
        let pool = Pool::new(1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.spawn_or(move || tx.send(priority_of_this_thread()).unwrap(), || {});
        let pool_thread = rx.recv().unwrap();
        assert!(
            is_lower(pool_thread, base),
            "pool thread at (policy, nice) {pool_thread:?}, the serving thread at {base:?}"
        );
        if base.1 < NICEST {
            assert_eq!(pool_thread.1, (base.1 + NICE_INCREMENT).min(NICEST));
        }
    }

    #[test]
    fn a_process_at_nice_19_gets_idle_pool_threads() {
        assert_eq!(lowered_from(0), Lowered::Nice(10));
        assert_eq!(lowered_from(10), Lowered::Nice(19));
        assert_eq!(lowered_from(15), Lowered::Nice(19));
        assert_eq!(lowered_from(-5), Lowered::Nice(5));
        assert_eq!(lowered_from(19), Lowered::Idle);
        // On a thread of its own, so this test's process keeps its priority.
        std::thread::spawn(|| {
            // SAFETY: setpriority on the calling thread (tid), integer arguments only.
            let tid = nix::unistd::gettid().as_raw() as libc::id_t;
            assert_eq!(
                unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, NICEST) },
                0
            );
            let base = priority_of_this_thread();
            let pool = Pool::new(1).unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            pool.spawn_or(move || tx.send(priority_of_this_thread()).unwrap(), || {});
            let pool_thread = rx.recv().unwrap();
            assert_eq!(pool_thread.0, libc::SCHED_IDLE, "{pool_thread:?}");
            assert!(is_lower(pool_thread, base));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn work_that_panics_is_settled_by_its_abandon() {
        struct Panicking(Arc<std::sync::atomic::AtomicBool>);
        impl Slice for Panicking {
            fn run_slice(&mut self) -> bool {
                panic!("a block panicked");
            }
            fn abandon(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let pool = Pool::new(1).unwrap();
        let abandoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        pool.schedule(Box::new(Panicking(abandoned.clone())));
        let (tx, rx) = std::sync::mpsc::channel();
        pool.spawn_or(|| panic!("the load panicked"), move || tx.send(()).unwrap());
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("on_panic ran");
        assert!(abandoned.load(Ordering::SeqCst));
    }
}
