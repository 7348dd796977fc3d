//! Private network namespaces for children that bind every interface.
//!
//! The SDK runtime's control server binds `0.0.0.0` (hard-coded in
//! `langbot_plugin.runtime.app.RuntimeApplication`). Run inside a fresh
//! network namespace it is reachable only over that namespace's loopback, so
//! the certification run exposes nothing to the machine's networks.
//!
//! [`plan`] tries, in order, `unshare --net` (needs root or `CAP_SYS_ADMIN`)
//! and `unshare --user --map-root-user --net` (needs unprivileged user
//! namespaces), each with a preflight that brings the namespace's loopback
//! up with `ip link set lo up`; the first that works is used and the
//! attempts are recorded. When none works the caller runs without a
//! namespace and must record the exposure.

use crate::process::{self, ChildSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Time limit of one preflight.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(20);

/// How a child's network is isolated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetKind {
    /// `unshare --net`: a new network namespace, as root.
    UnshareNet,
    /// `unshare --user --map-root-user --net`: a user namespace owning a new
    /// network namespace, without privileges.
    UnshareUserNet,
    /// No namespace could be created: the child shares the machine's network.
    None,
}

/// The isolation chosen for a child, and how it was chosen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetPlan {
    /// What is used.
    pub kind: NetKind,
    /// Program and arguments to put before the child's own command line
    /// (empty for [`NetKind::None`]).
    pub wrapper: Vec<String>,
    /// The `ip` program the child uses to bring its loopback up (`None`
    /// without a namespace).
    pub ip: Option<PathBuf>,
    /// One line per attempt: the command and its outcome.
    pub attempts: Vec<String>,
}

impl NetPlan {
    /// A human label: `unshare --net (private network namespace, loopback only)`.
    pub fn label(&self) -> String {
        match self.kind {
            NetKind::None => "none (the machine's network namespace)".into(),
            _ => format!(
                "{} (private network namespace, loopback only)",
                self.wrapper
                    .iter()
                    .filter(|a| *a != "--")
                    .map(|a| {
                        Path::new(a)
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| a.clone())
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }
}

/// Finds `name` on the `PATH` of `env`.
pub fn find_program(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let path = env.get("PATH")?;
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Chooses the isolation for a child: the first namespace whose preflight
/// (`<wrapper> ip link set lo up`) succeeds, else [`NetKind::None`].
/// Preflight logs go to `<log_dir>/netns-preflight-<n>.*`.
pub fn plan(log_dir: &Path, env: &BTreeMap<String, String>) -> NetPlan {
    let mut attempts = Vec::new();
    let (Some(unshare), Some(ip)) = (find_program("unshare", env), find_program("ip", env)) else {
        attempts.push(format!(
            "`unshare` and `ip` (util-linux, iproute2) must both be on PATH ({}); not found",
            env.get("PATH").map(String::as_str).unwrap_or("")
        ));
        return NetPlan {
            kind: NetKind::None,
            wrapper: Vec::new(),
            ip: None,
            attempts,
        };
    };
    let unshare = unshare.display().to_string();
    let candidates = [
        (NetKind::UnshareNet, vec![unshare.clone(), "--net".into()]),
        (
            NetKind::UnshareUserNet,
            vec![
                unshare.clone(),
                "--user".into(),
                "--map-root-user".into(),
                "--net".into(),
            ],
        ),
    ];
    for (n, (kind, mut wrapper)) in candidates.into_iter().enumerate() {
        wrapper.push("--".into());
        let mut args: Vec<String> = wrapper[1..].to_vec();
        args.extend([
            ip.display().to_string(),
            "link".into(),
            "set".into(),
            "lo".into(),
            "up".into(),
        ]);
        let spec = ChildSpec {
            program: PathBuf::from(&wrapper[0]),
            args: args.clone(),
            cwd: log_dir.to_path_buf(),
            env: env.clone(),
            timeout: PREFLIGHT_TIMEOUT,
            log_stem: log_dir.join(format!("netns-preflight-{}", n + 1)),
            stdin: None,
        };
        let line = format!("{} {}", wrapper[0], args.join(" "));
        match process::run(&spec) {
            Ok(out) if out.success() => {
                attempts.push(format!("{line}: ok"));
                return NetPlan {
                    kind,
                    wrapper,
                    ip: Some(ip),
                    attempts,
                };
            }
            Ok(out) => attempts.push(format!(
                "{line}: {} ({})",
                out.describe(),
                out.tail(2).replace('\n', " / ")
            )),
            Err(e) => attempts.push(format!("{line}: {e}")),
        }
    }
    NetPlan {
        kind: NetKind::None,
        wrapper: Vec::new(),
        ip: None,
        attempts,
    }
}

/// Network interfaces visible to this process, from `/proc/net/dev`.
pub fn interfaces() -> Vec<String> {
    std::fs::read_to_string("/proc/net/dev")
        .unwrap_or_default()
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(name, _)| name.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_only_on_the_given_path() {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), "/nonexistent:/bin:/usr/bin".to_string());
        assert!(find_program("sh", &env).is_some());
        env.insert("PATH".to_string(), "/nonexistent".to_string());
        assert!(find_program("sh", &env).is_none());
    }

    #[test]
    fn this_process_sees_a_loopback_interface() {
        assert!(interfaces().iter().any(|i| i == "lo"), "{:?}", interfaces());
    }
}
