//! The genuine interpreter, asked questions by small embedded `.py` probes.
//!
//! Each probe is a real file in this folder, embedded with `include_str!`,
//! run as `python -I -B -c <source> <args>` (isolated: no user site, no
//! `PYTHON*` variables, no script directory on `sys.path`; no bytecode
//! written), printing exactly one JSON document on stdout that Rust parses
//! into a typed struct.

use crate::process::{self, ChildSpec};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Asks for the interpreter's facts and the SDK's dist-info (see `sdk_probe.py`).
pub const SDK_PROBE: &str = include_str!("sdk_probe.py");

/// Time limit of one probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs probe `source` with `args` in `cwd` with exactly `env`, logging under
/// `log_stem`, and parses its stdout as `T`.
///
/// # Errors
/// A sentence naming the probe, the interpreter, the status and the output tail.
pub fn run_probe<T: DeserializeOwned>(
    python: &Path,
    probe_name: &str,
    source: &str,
    args: &[String],
    cwd: &Path,
    env: BTreeMap<String, String>,
    log_stem: &Path,
) -> Result<T, String> {
    let mut full_args = vec![
        "-I".to_string(),
        "-B".to_string(),
        "-c".to_string(),
        source.to_string(),
    ];
    full_args.extend(args.iter().cloned());
    let spec = ChildSpec {
        program: python.to_path_buf(),
        args: full_args,
        cwd: cwd.to_path_buf(),
        env,
        timeout: PROBE_TIMEOUT,
        log_stem: log_stem.to_path_buf(),
        stdin: None,
    };
    let out = process::run(&spec).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "probe {probe_name} with {}: {}; expected one JSON document on stdout; output tail:\n{}",
            python.display(),
            out.describe(),
            out.tail(15)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "probe {probe_name} with {}: stdout is not the expected JSON ({e}); see {}",
            python.display(),
            out.logs.0.display()
        )
    })
}
