//! Local protocol fixtures built into the harness: small Python programs
//! that stand in for a coding runner's vendor process (`builtin:NAME` in a
//! profile's `[[discovery.runner_probe]]`).
//!
//! Each is embedded here, written into the probe's private folder as
//! `fixture.py` and started by the Runner under test, through its own
//! invocation config, with the verified interpreter. Each refuses every
//! network socket (an audit hook), appends what it read and wrote to
//! `transcript.jsonl` beside itself, and answers
//! `[verify-coding-candidates local protocol fixture builtin:NAME] received
//! <nonce>`, where the nonce (`VCC-PROBE-` and 16 hex digits) is the one it
//! found in the prompt. A reply from one is a fixture's, never a vendor's.
//!
//! The protocol facts come from the public coding-runner plugins
//! (`Runner/*/pkg/native_cli.py`, `Runner/acp-agent-runner/pkg/acp_client.py`
//! of `langbot-app/langbot-plugins`); the code is ours.
//!
//! The programs' comments name this file by its former path,
//! `src/python/fixtures.rs`: each program's sha256 is in the evidence
//! (`fixture_sha256`), so its bytes change only with a change meant to show
//! there.

/// A built-in fixture.
#[derive(Debug, Clone, Copy)]
pub struct Fixture {
    /// `NAME` in `builtin:NAME`.
    pub name: &'static str,
    /// What it speaks.
    pub protocol: &'static str,
    /// The program: `builtin_fixtures/common.py` (what every fixture shares)
    /// followed by the fixture's own file.
    pub source: &'static str,
}

/// Every built-in fixture.
pub const ALL: [Fixture; 3] = [
    Fixture {
        name: "claude-code-stream-json",
        protocol: "Claude Code CLI `stream-json` lines on stdio",
        source: concat!(
            include_str!("builtin_fixtures/common.py"),
            include_str!("builtin_fixtures/claude_code_stream_json.py")
        ),
    },
    Fixture {
        name: "codex-app-server",
        protocol: "Codex app-server JSON-RPC on stdio",
        source: concat!(
            include_str!("builtin_fixtures/common.py"),
            include_str!("builtin_fixtures/codex_app_server.py")
        ),
    },
    Fixture {
        name: "acp-stdio",
        protocol: "Agent Client Protocol (ACP) JSON-RPC on stdio",
        source: concat!(
            include_str!("builtin_fixtures/common.py"),
            include_str!("builtin_fixtures/acp_stdio.py")
        ),
    },
];

/// The names of [`ALL`].
pub const NAMES: &[&str] = &["claude-code-stream-json", "codex-app-server", "acp-stdio"];

/// The fixture named `name`.
pub fn get(name: &str) -> Option<&'static Fixture> {
    ALL.iter().find(|f| f.name == name)
}

/// The text a built-in fixture's reply carries for `nonce`.
pub fn reply_text(name: &str, nonce: &str) -> String {
    format!("[verify-coding-candidates local protocol fixture builtin:{name}] received {nonce}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_list_every_fixture_and_each_states_its_reply() {
        assert_eq!(ALL.map(|f| f.name), NAMES);
        for f in ALL {
            assert!(
                f.source.contains("local protocol fixture builtin:"),
                "{} must state in its reply that it is a fixture",
                f.name
            );
            assert!(
                f.source.contains("addaudithook"),
                "{} must refuse network sockets with an audit hook",
                f.name
            );
        }
    }

    #[test]
    fn every_fixture_is_one_valid_program_starting_with_the_shared_part() {
        let common = include_str!("builtin_fixtures/common.py");
        for f in ALL {
            assert!(f.source.starts_with(common), "{}", f.name);
            let own = &f.source[common.len()..];
            assert!(
                own.contains(&format!("NAME = \"{}\"", f.name)),
                "{}",
                f.name
            );
            // What the shared part defines is defined there only once.
            for shared in [
                "def record(",
                "def refuse_network(",
                "class StdinLines",
                "def reply_text(",
            ] {
                assert_eq!(f.source.matches(shared).count(), 1, "{} {shared}", f.name);
            }
        }
    }
}
