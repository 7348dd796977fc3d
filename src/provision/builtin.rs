//! The lock lists and wheel RECORDs the verifier carries, keyed by SDK pin.
//! Sources: `gates/profiles/sdk/` (see its `*.lock` headers for how each was
//! generated) and the published wheel's own `*.dist-info/RECORD`.

/// One SDK pin the verifier can provision.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinSdk {
    /// The exact requirement (`langbot-plugin==0.6.0b5`).
    pub requirement: &'static str,
    /// The lock list's path in the verifier's source tree, for messages.
    pub lock_label: &'static str,
    /// The lock list's text.
    pub lock: &'static str,
    /// The wheel's own `RECORD`, byte for byte.
    pub wheel_record: &'static str,
}

/// Every pin the verifier carries a lock list for.
pub const SDKS: &[BuiltinSdk] = &[BuiltinSdk {
    requirement: "langbot-plugin==0.6.0b5",
    lock_label: "gates/profiles/sdk/langbot-plugin-0.6.0b5.lock",
    lock: include_str!("../../gates/profiles/sdk/langbot-plugin-0.6.0b5.lock"),
    wheel_record: include_str!("../../gates/profiles/sdk/langbot_plugin-0.6.0b5.RECORD"),
}];

/// The built-in SDK of `requirement` (compared without spaces).
pub fn for_requirement(requirement: &str) -> Option<&'static BuiltinSdk> {
    let squeeze = |s: &str| s.split_whitespace().collect::<String>();
    SDKS.iter()
        .find(|s| squeeze(s.requirement) == squeeze(requirement))
}

/// The pins carried, comma-separated, for messages.
pub fn carried() -> String {
    SDKS.iter()
        .map(|s| s.requirement)
        .collect::<Vec<_>>()
        .join(", ")
}
