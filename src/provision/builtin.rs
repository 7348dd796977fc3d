//! The lock lists, wheel RECORDs and records files (`*.records`, what every
//! locked wheel's RECORD says) the verifier carries, keyed by SDK pin.
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
    /// What every locked wheel's RECORD says ([`super::wheel_records`]),
    /// generated from the lock by `cargo xtask wheel-records`.
    pub wheel_records: &'static str,
    /// The records file's path in the verifier's source tree, for messages.
    pub records_label: &'static str,
}

/// The [`BuiltinSdk`] of `langbot-plugin==$v`, from its files under
/// `gates/profiles/sdk/` (`langbot-plugin-$v.{lock,records}`,
/// `langbot_plugin-$v.RECORD`).
macro_rules! builtin_sdk {
    ($v:literal) => {
        BuiltinSdk {
            requirement: concat!("langbot-plugin==", $v),
            lock_label: concat!("gates/profiles/sdk/langbot-plugin-", $v, ".lock"),
            lock: include_str!(concat!(
                "../../gates/profiles/sdk/langbot-plugin-",
                $v,
                ".lock"
            )),
            wheel_record: include_str!(concat!(
                "../../gates/profiles/sdk/langbot_plugin-",
                $v,
                ".RECORD"
            )),
            wheel_records: include_str!(concat!(
                "../../gates/profiles/sdk/langbot-plugin-",
                $v,
                ".records"
            )),
            records_label: concat!("gates/profiles/sdk/langbot-plugin-", $v, ".records"),
        }
    };
}

/// Every pin the verifier carries a lock list for.
pub const SDKS: &[BuiltinSdk] = &[
    builtin_sdk!("0.6.0b5"),
    // The first 0.6 release; plugins published against it pin it exactly.
    builtin_sdk!("0.6.1"),
    // The newest 0.7 release when this list was made; plugins requiring a
    // 0.7 range (`>=0.7.3,<0.8`) are placed in its group by `profile init`.
    builtin_sdk!("0.7.18"),
];

/// A lock list beside an SDK's, with its records file.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinExtras {
    /// The lock list's path in the verifier's source tree.
    pub lock_label: &'static str,
    /// The lock list's text.
    pub lock: &'static str,
    /// The records file's path in the verifier's source tree.
    pub records_label: &'static str,
    /// What every locked wheel's RECORD says ([`super::wheel_records`]).
    pub wheel_records: &'static str,
}

/// The verifier's own test extras (`junitparser`, `xmlschema`,
/// `elementpath`), which `cargo xtask sdk` installs beside the SDK's lock
/// into `target/sdk-venv`: hash-locked like it, so `sdk-record` accepts them
/// (named) in an interpreter it verifies.
pub const TEST_EXTRAS: BuiltinExtras = BuiltinExtras {
    lock_label: "xtask/test-extras.lock",
    lock: include_str!("../../xtask/test-extras.lock"),
    records_label: "xtask/test-extras.records",
    wheel_records: include_str!("../../xtask/test-extras.records"),
};

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

#[cfg(test)]
mod tests {
    use super::super::{lock_list, wheel_records};
    use super::*;

    /// Every locked wheel (name, version and sha256) has its line in the
    /// records file beside its lock, and no line is for a wheel not locked:
    /// a lock changed without `cargo xtask wheel-records` fails here.
    #[test]
    fn every_records_file_covers_exactly_its_lock() {
        let pairs = SDKS
            .iter()
            .map(|s| (s.lock, s.lock_label, s.wheel_records, s.records_label))
            .chain([(
                TEST_EXTRAS.lock,
                TEST_EXTRAS.lock_label,
                TEST_EXTRAS.wheel_records,
                TEST_EXTRAS.records_label,
            )]);
        for (lock, lock_label, records, records_label) in pairs {
            let lock = lock_list::parse(lock, lock_label).unwrap();
            let records = wheel_records::parse(records, records_label).unwrap();
            assert_eq!(
                wheel_records::uncovered(&lock, &records),
                Vec::<String>::new(),
                "{records_label}: run `cargo xtask wheel-records`"
            );
            assert_eq!(records.len(), lock.entries.len(), "{records_label}");
        }
    }
}
