//! TEST-ONLY hostile worker variants.
//!
//! When the harness's own environment holds [`VARIANT_VAR`] (for example
//! `VCC_TEST_WORKER_VARIANT=leak-env`), worker A runs `worker.py` followed by
//! the variant's file from `src/python/hostile_workers/` instead of the
//! genuine launcher line; worker B stays genuine. The integration tests use
//! this to prove each check can fail. A run with a variant records a `warn`
//! check named `test-hook`, so such evidence is never mistaken for a genuine
//! run. An unknown variant name is a gate error.

/// The harness environment variable selecting a hostile variant (tests only).
pub const VARIANT_VAR: &str = "VCC_TEST_WORKER_VARIANT";

/// The genuine launcher appended to `worker.py`.
pub const GENUINE_LAUNCHER: &str = "main(Hooks())\n";

/// A hostile variant: its name and the Python appended to `worker.py`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// `leak-env`, `ignore-cancel`, `setsid-escape`, `any-token` or
    /// `write-outside`.
    pub name: &'static str,
    /// The check it is built to fail.
    pub targets: &'static str,
    /// Source appended after `worker.py` (ends with its own `main(...)`).
    pub source: &'static str,
}

/// Every variant.
pub const VARIANTS: &[Variant] = &[
    Variant {
        name: "leak-env",
        targets: "environment-allowlist",
        source: include_str!("../../python/hostile_workers/leak_env.py"),
    },
    Variant {
        name: "ignore-cancel",
        targets: "cancel-quiescence",
        source: include_str!("../../python/hostile_workers/ignore_cancel.py"),
    },
    Variant {
        name: "setsid-escape",
        targets: "teardown",
        source: include_str!("../../python/hostile_workers/setsid_escape.py"),
    },
    Variant {
        name: "any-token",
        targets: "listener-token-separation",
        source: include_str!("../../python/hostile_workers/any_token.py"),
    },
    Variant {
        name: "write-outside",
        targets: "private-roots",
        source: include_str!("../../python/hostile_workers/write_outside.py"),
    },
];

/// The variant named by [`VARIANT_VAR`], if set.
///
/// # Errors
/// When the variable names no known variant.
pub fn from_env() -> Result<Option<Variant>, String> {
    match std::env::var(VARIANT_VAR) {
        Ok(name) if !name.is_empty() => {
            VARIANTS
                .iter()
                .find(|v| v.name == name)
                .copied()
                .map(Some)
                .ok_or_else(|| {
                    format!(
                    "{VARIANT_VAR}={name}: unknown test-only worker variant; expected one of: {}",
                    VARIANTS.iter().map(|v| v.name).collect::<Vec<_>>().join(", ")
                )
                })
        }
        _ => Ok(None),
    }
}

/// The full worker source: `worker.py` plus the genuine launcher, or plus
/// `variant`'s file.
pub fn worker_source(variant: Option<&Variant>) -> String {
    let tail = variant.map_or(GENUINE_LAUNCHER, |v| v.source);
    format!("{}\n\n{}", crate::python::WORKER, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genuine_source_ends_with_the_genuine_launcher() {
        let src = worker_source(None);
        assert!(src.starts_with(crate::python::WORKER));
        assert!(src.ends_with(GENUINE_LAUNCHER));
    }

    #[test]
    fn each_variant_subclasses_the_hooks_and_launches_itself() {
        for v in VARIANTS {
            let src = worker_source(Some(v));
            assert!(v.source.contains("(Hooks):"), "{}", v.name);
            assert!(v.source.trim_end().ends_with("Hooks())"), "{}", v.name);
            assert!(v.source.contains("TEST-ONLY"), "{}", v.name);
            assert!(!src.contains(GENUINE_LAUNCHER), "{}", v.name);
        }
    }
}
