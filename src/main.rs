//! `verify-coding-candidates`: parse, run, map the outcome to an exit code.

fn main() -> std::process::ExitCode {
    verify_coding_candidates::cli::main()
}
