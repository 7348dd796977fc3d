//! `cargo xtask fuzz [--execs N] [--seed S] [--only NAME]`: runs every
//! reader of untrusted bytes ([`verify_coding_candidates::fuzz::targets`])
//! for N executions (default 1,000,000) on inputs mutated from valid seeds,
//! in process, and prints per reader: executions, time, executions per
//! second, the share of inputs the reader accepted (the rest were refused
//! with an error, as they should be), panics, the largest single
//! allocation, and the verdict.
//!
//! Bounded allocation: a counting global allocator refuses any single
//! allocation above `ALLOC_LIMIT` (inputs are at most 64 KiB, so only a
//! size read from the input can ask for more); the refusal saves the input
//! and aborts. Hangs: a watchdog aborts when one execution runs longer than
//! `HANG_LIMIT`, saving the input. Panics are caught, counted, and the first
//! input of each reader is saved. Inputs are saved under
//! `target/fuzz/findings/`. Exit status 0 only when no reader panicked.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verify_coding_candidates::fuzz::{self, Rng, Scratch};

/// The largest single allocation a reader may make: 64 MiB.
const ALLOC_LIMIT: usize = 64 << 20;
/// The longest one execution may run.
const HANG_LIMIT: Duration = Duration::from_secs(10);

struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static IN_HOOK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The input being executed and its reader, for the reports that abort.
static CURRENT: Mutex<(String, Vec<u8>)> = Mutex::new((String::new(), Vec::new()));

fn findings_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("fuzz").join("findings")
}

/// Saves the current input as `<reader>-<kind>.bin` and returns its path.
fn save_current(kind: &str) -> String {
    let (name, data) = match CURRENT.try_lock() {
        Ok(g) => (g.0.clone(), g.1.clone()),
        Err(_) => return "(input not saved: busy)".into(),
    };
    let dir = findings_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}-{kind}.bin"));
    match std::fs::write(&path, data) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(input not saved: {e})"),
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size();
        if ARMED.load(Ordering::Relaxed) {
            LARGEST.fetch_max(size, Ordering::Relaxed);
            if size > ALLOC_LIMIT && !IN_HOOK.with(|h| h.replace(true)) {
                // Re-entrant allocations below are small and pass through.
                ARMED.store(false, Ordering::Relaxed);
                let saved = save_current("alloc");
                eprintln!(
                    "fuzz: UNBOUNDED ALLOCATION: one allocation of {size} bytes (limit {ALLOC_LIMIT}); input saved to {saved}"
                );
                std::process::abort();
            }
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ARMED.load(Ordering::Relaxed) {
            LARGEST.fetch_max(new_size, Ordering::Relaxed);
            if new_size > ALLOC_LIMIT && !IN_HOOK.with(|h| h.replace(true)) {
                ARMED.store(false, Ordering::Relaxed);
                let saved = save_current("alloc");
                eprintln!(
                    "fuzz: UNBOUNDED ALLOCATION: a reallocation to {new_size} bytes (limit {ALLOC_LIMIT}); input saved to {saved}"
                );
                std::process::abort();
            }
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Options {
    execs: u64,
    seed: u64,
    only: Option<String>,
    replay: Option<PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        execs: 1_000_000,
        seed: 0x5EED,
        only: None,
        replay: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--execs" => {
                o.execs = value("--execs")?
                    .replace('_', "")
                    .parse()
                    .map_err(|e| format!("--execs: {e}"))?
            }
            "--seed" => {
                o.seed = value("--seed")?
                    .parse()
                    .map_err(|e| format!("--seed: {e}"))?
            }
            "--only" => o.only = Some(value("--only")?),
            "--replay" => o.replay = Some(PathBuf::from(value("--replay")?)),
            other => return Err(format!(
                "unknown argument {other:?}; usage: fuzz [--execs N] [--seed S] [--only READER] [--replay FILE --only READER]"
            )),
        }
    }
    Ok(o)
}

fn main() -> std::process::ExitCode {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    // Panics are counted and reported below, not printed one by one.
    let last_panic: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    {
        let slot = Arc::clone(&last_panic);
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(mut s) = slot.lock() {
                *s = Some(info.to_string());
            }
        }));
    }
    // A private scratch directory, on tmpfs when there is one.
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let scratch_dir = base.join(format!("vcc-fuzz-{}", std::process::id()));
    let mut scratch = Scratch::new(&scratch_dir).expect("create the scratch directory");
    if let Some(file) = &o.replay {
        // One saved input, panics printed: `--replay FILE --only READER`.
        let _ = std::panic::take_hook();
        let data = std::fs::read(file).expect("read the input to replay");
        let Some(target) = fuzz::targets()
            .into_iter()
            .find(|t| Some(t.name) == o.only.as_deref())
        else {
            eprintln!("--replay needs --only READER");
            return std::process::ExitCode::from(2);
        };
        let start = Instant::now();
        (target.run)(&mut scratch, &data);
        println!(
            "{}: {} bytes read without panic in {:?}",
            target.name,
            data.len(),
            start.elapsed()
        );
        let _ = std::fs::remove_dir_all(&scratch_dir);
        return std::process::ExitCode::SUCCESS;
    }

    // Watchdog: one execution longer than HANG_LIMIT aborts the run.
    let started_ms = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    {
        let started_ms = Arc::clone(&started_ms);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let s = started_ms.load(Ordering::Relaxed);
            // `s` is the start in ms since `epoch`, plus one (0: idle).
            let now = epoch.elapsed().as_millis() as u64 + 1;
            if s != 0 && now.saturating_sub(s) > HANG_LIMIT.as_millis() as u64 {
                let saved = save_current("hang");
                eprintln!(
                    "fuzz: HANG: one execution ran longer than {} s; input saved to {saved}",
                    HANG_LIMIT.as_secs()
                );
                std::process::abort();
            }
        });
    }

    println!(
        "{:<22} {:>10} {:>9} {:>10} {:>9} {:>7} {:>13}  verdict",
        "reader", "execs", "seconds", "execs/s", "accepted", "panics", "largest alloc"
    );
    let mut any_panic = false;
    let mut total = 0u64;
    let all_start = Instant::now();
    for target in fuzz::targets() {
        if o.only.as_deref().is_some_and(|n| n != target.name) {
            continue;
        }
        let mut rng = Rng::new(o.seed ^ target.name.len() as u64);
        let mut panics = 0u64;
        let mut accepted = 0u64;
        let mut first_panic: Option<(String, String)> = None;
        LARGEST.store(0, Ordering::Relaxed);
        let start = Instant::now();
        for _ in 0..o.execs {
            let input = fuzz::mutate(&mut rng, &target.seeds);
            {
                let mut g = CURRENT.lock().expect("not poisoned");
                g.0.clear();
                g.0.push_str(target.name);
                g.1.clear();
                g.1.extend_from_slice(&input);
            }
            started_ms.store(epoch.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
            ARMED.store(true, Ordering::Relaxed);
            let result =
                std::panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&mut scratch, &input)));
            accepted += u64::from(matches!(result, Ok(true)));
            ARMED.store(false, Ordering::Relaxed);
            started_ms.store(0, Ordering::Relaxed);
            if result.is_err() {
                panics += 1;
                if first_panic.is_none() {
                    let message = last_panic
                        .lock()
                        .ok()
                        .and_then(|mut s| s.take())
                        .unwrap_or_default();
                    first_panic = Some((message, save_current("panic")));
                }
            }
        }
        let secs = start.elapsed().as_secs_f64();
        total += o.execs;
        let verdict = if panics == 0 { "ok" } else { "PANIC" };
        any_panic |= panics > 0;
        println!(
            "{:<22} {:>10} {:>9.1} {:>10.0} {:>8.1}% {:>7} {:>13}  {verdict}",
            target.name,
            o.execs,
            secs,
            o.execs as f64 / secs.max(1e-9),
            100.0 * accepted as f64 / o.execs.max(1) as f64,
            panics,
            LARGEST.load(Ordering::Relaxed)
        );
        if let Some((message, saved)) = first_panic {
            println!("    first panic: {message}\n    input: {saved}");
        }
    }
    let _ = std::fs::remove_dir_all(&scratch_dir);
    println!(
        "total: {total} executions in {:.1} s; no hang over {} s and no single allocation over {} MiB (either would have aborted the run)",
        all_start.elapsed().as_secs_f64(),
        HANG_LIMIT.as_secs(),
        ALLOC_LIMIT >> 20
    );
    if any_panic {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
