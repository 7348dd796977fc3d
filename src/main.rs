//! `verify-coding-candidates`: parse, run, map the outcome to an exit code.

fn main() -> std::process::ExitCode {
    // First, while this is the only thread: the one sound moment to set
    // malloc's tunables and to change the process environment
    // (worker-isolation's canary).
    verify_coding_candidates::heap::one_arena();
    verify_coding_candidates::gates::worker_isolation::install_canary();
    verify_coding_candidates::cli::main()
}
