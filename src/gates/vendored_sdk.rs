//! The `vendored-sdk` gate: a candidate that vendors code derived from the
//! SDK names where it came from, and carries the SDK's license.
//!
//! The profile's `[vendored_sdk]` names, per candidate, a notice file and a
//! license copy, and three regexes (one capture group each) that read the
//! notice's SDK version, SDK file (relative to site-packages, e.g.
//! `langbot_plugin/api/agent_tools/daemon.py`) and that file's original
//! sha256. Against the install `sdk-record` verified, per candidate:
//!
//! - `sdk-version`: the notice names exactly the pinned version;
//! - `sdk-file`: the named file is a regular file inside the installed
//!   `langbot_plugin` package, listed in the dist-info's RECORD, and its
//!   sha256 equals the notice's;
//! - `license-copy`: the license copy is byte-identical to the installed
//!   distribution's license file (`<dist-info>/licenses/LICENSE` by default;
//!   the wheel has a second, different LICENSE under `langbot_plugin/runtime/`).
//!
//! Observation reads the staged commit and the verified install into a
//! [`VendoredObservation`]; [`decide`] turns it into checks without I/O.

use crate::context::{RunContext, Updates};
use crate::evidence::Check;
use serde::Serialize;
use serde_json::json;

mod observe;

pub use observe::{read_field, read_notice};

/// Gate id.
pub const GATE: &str = "vendored-sdk";

/// The `vendored-sdk` gate.
pub struct VendoredSdk;

/// One field of the notice as its pattern reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "value")]
pub enum Field {
    /// Every match captured this value.
    Found(String),
    /// The pattern did not match.
    Missing,
    /// Matches captured different values (all listed, in order).
    Ambiguous(Vec<String>),
}

/// The three fields of a notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoticeFields {
    /// The SDK version it names.
    pub version: Field,
    /// The SDK file it names (relative to site-packages).
    pub file: Field,
    /// That file's original sha256.
    pub sha256: Field,
}

/// A file as observed: its sha256 and size, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum FileState {
    /// A regular file.
    File {
        /// sha256, lower-case hex.
        sha256: String,
        /// Bytes.
        size: u64,
    },
    /// Missing, a symlink, not a regular file or unreadable (why).
    Unavailable {
        /// Why.
        why: String,
    },
}

/// The SDK file the notice names, as found in the verified install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SdkFile {
    /// The path as the notice names it.
    pub path: String,
    /// Whether it is a plain relative path inside the `langbot_plugin`
    /// package (no `..`, no absolute path).
    pub inside_package: bool,
    /// Whether the dist-info's RECORD lists it.
    pub in_record: bool,
    /// The file in the install.
    pub state: FileState,
}

/// Everything the gate observed for one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VendoredObservation {
    /// Candidate folder.
    pub folder: String,
    /// The notice, relative to the repository (`Runner/x/pkg/RELAY-NOTICE.md`).
    pub notice: String,
    /// Why the notice could not be read; none when it was.
    pub notice_error: Option<String>,
    /// The fields read from the notice.
    pub fields: NoticeFields,
    /// The profile's pinned SDK version.
    pub pinned_version: String,
    /// The installed version `sdk-record` verified.
    pub installed_version: String,
    /// The named SDK file in the install, when the notice names one.
    pub sdk_file: Option<SdkFile>,
    /// The license copy, relative to the repository.
    pub license_copy: String,
    /// Its state.
    pub license_copy_state: FileState,
    /// The installed license file (`<dist-info name>/licenses/LICENSE`).
    pub installed_license: String,
    /// Its state.
    pub installed_license_state: FileState,
}

fn field_problem(name: &str, field: &Field, notice: &str, pattern_key: &str) -> Option<String> {
    match field {
        Field::Found(_) => None,
        Field::Missing => Some(format!(
            "{notice} names no {name}: the profile's `vendored_sdk.{pattern_key}` does not match it; \
             expected the notice to state the {name} the vendored code came from (or fix the pattern)"
        )),
        Field::Ambiguous(values) => Some(format!(
            "{notice} names more than one {name} ({values:?}); expected one: state the one the \
             vendored code came from"
        )),
    }
}

/// One candidate as observed: outside `[vendored_sdk] candidates` (nothing
/// read), or its notice, SDK file and license.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "coverage")]
pub enum CandidateObservation {
    /// The profile does not list this candidate.
    NotCovered {
        /// Candidate folder.
        folder: String,
        /// Candidate path, relative to the repository.
        path: String,
    },
    /// Listed: what was read.
    Covered(Box<VendoredObservation>),
}

/// What the gate observed, per candidate in profile order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Observation {
    /// Every candidate of the run.
    pub candidates: Vec<CandidateObservation>,
}

/// Decides every candidate's checks. Pure.
pub fn decide(obs: &Observation) -> Vec<Check> {
    obs.candidates
        .iter()
        .flat_map(|c| match c {
            CandidateObservation::NotCovered { folder, path } => vec![Check::warn(
                "sdk-version",
                Some(folder),
                format!(
                    "{path} is not listed in [vendored_sdk] candidates: nothing is proved about SDK code it \
                     may vendor; list it when it carries a notice"
                ),
            )
            .with_observed(json!({ "path": path, "covered": false }))],
            CandidateObservation::Covered(o) => decide_candidate(o),
        })
        .collect()
}

/// Decides the three checks of one covered candidate. Pure.
pub fn decide_candidate(o: &VendoredObservation) -> Vec<Check> {
    let unreadable = o.notice_error.as_ref().map(|why| {
        format!(
            "the notice {} {why}; expected it to name the SDK version, file and original sha256 \
             the vendored code came from: add it to the candidate and commit it",
            o.notice
        )
    });
    vec![
        version_check(o, unreadable.as_deref()),
        file_check(o, unreadable.is_some()),
        license_check(o),
    ]
}

/// The `sdk-version` check: the notice names the pinned and installed SDK
/// version; fails with `unreadable` (why the notice could not be read).
fn version_check(o: &VendoredObservation, unreadable: Option<&str>) -> Check {
    let folder = Some(o.folder.as_str());
    match (unreadable, &o.fields.version) {
        (Some(why), _) => Check::fail("sdk-version", folder, why.to_string()),
        (None, Field::Found(v)) if v == &o.pinned_version && v == &o.installed_version => {
            Check::pass(
                "sdk-version",
                folder,
                format!(
                    "{} names langbot-plugin {v}, the pinned and verified installed version",
                    o.notice
                ),
            )
        }
        (None, Field::Found(v)) => Check::fail(
            "sdk-version",
            folder,
            format!(
                "{} names langbot-plugin {v}; expected the pinned version {} (installed and verified: {}): \
                 re-derive the vendored code from the pinned SDK's file and update the notice, or correct \
                 the notice if it misstates the version",
                o.notice, o.pinned_version, o.installed_version
            ),
        ),
        (None, f) => Check::fail(
            "sdk-version",
            folder,
            field_problem("SDK version", f, &o.notice, "version_pattern").unwrap_or_default(),
        ),
    }
    .with_observed(json!({
        "notice": o.notice,
        "version": o.fields.version,
        "pinned_version": o.pinned_version,
        "installed_version": o.installed_version,
    }))
}

/// The `sdk-file` check: the file the notice names is the installed SDK's
/// and hashes to the sha256 it claims; a consequence of `sdk-version` when
/// the notice is `unreadable`.
fn file_check(o: &VendoredObservation, unreadable: bool) -> Check {
    let folder = Some(o.folder.as_str());
    match (unreadable, &o.fields.file, &o.fields.sha256, &o.sdk_file) {
        (true, ..) => Check::fail(
            "sdk-file",
            folder,
            format!(
                "not verified: the notice {} could not be read, so it names no SDK file to look up \
                 (the sdk-version check names the cause)",
                o.notice
            ),
        )
        .consequence_of("sdk-version"),
        (false, Field::Found(_), Field::Found(claimed), Some(f)) => sdk_file_check(o, claimed, f),
        (false, file, sha, _) => {
            let problems: Vec<String> = [
                field_problem("SDK file", file, &o.notice, "file_pattern"),
                field_problem("original sha256", sha, &o.notice, "sha256_pattern"),
            ]
            .into_iter()
            .flatten()
            .collect();
            Check::fail("sdk-file", folder, problems.join("; "))
        }
    }
    .with_observed(json!({
        "notice": o.notice,
        "file": o.fields.file,
        "sha256": o.fields.sha256,
        "installed": o.sdk_file,
    }))
}

/// The `license-copy` check: the candidate's license copy is
/// byte-identical to the installed distribution's license file.
fn license_check(o: &VendoredObservation) -> Check {
    let folder = Some(o.folder.as_str());
    match (&o.license_copy_state, &o.installed_license_state) {
        (_, FileState::Unavailable { why }) => Check::fail(
            "license-copy",
            folder,
            format!(
                "the installed distribution's license file {} {why}; expected the wheel's license \
                 (profile `vendored_sdk.license_source`): check the profile against the installed dist-info",
                o.installed_license
            ),
        ),
        (FileState::Unavailable { why }, FileState::File { sha256, size }) => Check::fail(
            "license-copy",
            folder,
            format!(
                "the license copy {} {why} in the staged commit; expected a byte-identical copy of the \
                 installed {} (sha256 {sha256}, {size} bytes): copy that file there and commit it",
                o.license_copy, o.installed_license
            ),
        ),
        (FileState::File { sha256: a, size: m }, FileState::File { sha256: b, size: n })
            if a == b && m == n =>
        {
            Check::pass(
                "license-copy",
                folder,
                format!(
                    "{} is byte-identical to the installed {} (sha256 {a}, {m} bytes)",
                    o.license_copy, o.installed_license
                ),
            )
        }
        (FileState::File { sha256: a, size: m }, FileState::File { sha256: b, size: n }) => {
            Check::fail(
                "license-copy",
                folder,
                format!(
                    "{} (sha256 {a}, {m} bytes) differs from the installed {} (sha256 {b}, {n} bytes); \
                     expected the upstream license byte for byte: copy the installed file over it and commit",
                    o.license_copy, o.installed_license
                ),
            )
        }
    }
    .with_observed(json!({
        "license_copy": o.license_copy,
        "license_copy_state": o.license_copy_state,
        "installed_license": o.installed_license,
        "installed_license_state": o.installed_license_state,
    }))
}

fn sdk_file_check(o: &VendoredObservation, claimed: &str, f: &SdkFile) -> Check {
    let folder = Some(o.folder.as_str());
    let claimed = claimed.to_ascii_lowercase();
    if !f.inside_package {
        return Check::fail(
            "sdk-file",
            folder,
            format!(
                "{} names the SDK file `{}`, which is not a path inside the installed langbot_plugin \
                 package (expected `langbot_plugin/...`, no `..`, not absolute): name the SDK module \
                 the vendored code came from",
                o.notice, f.path
            ),
        );
    }
    match &f.state {
        FileState::Unavailable { why } => Check::fail(
            "sdk-file",
            folder,
            format!(
                "{} names the SDK file `{}`, which {why} in the verified langbot-plugin {} install; \
                 expected a file of the SDK package the vendored code came from: name the real file",
                o.notice, f.path, o.installed_version
            ),
        ),
        FileState::File { .. } if !f.in_record => Check::fail(
            "sdk-file",
            folder,
            format!(
                "{} names `{}`, which exists in the install but is not listed in its RECORD, so it is \
                 not a file of the verified distribution: name a file the wheel ships",
                o.notice, f.path
            ),
        ),
        FileState::File { sha256, size } if *sha256 == claimed => Check::pass(
            "sdk-file",
            folder,
            format!(
                "{} names `{}` with original sha256 {claimed}; the verified langbot-plugin {} install \
                 holds that file ({size} bytes) with that sha256",
                o.notice, f.path, o.installed_version
            ),
        ),
        FileState::File { sha256, .. } => Check::fail(
            "sdk-file",
            folder,
            format!(
                "{} gives `{}` the original sha256 {claimed}, but the verified langbot-plugin {} install \
                 holds it with sha256 {sha256}; the notice names another revision of the file: \
                 re-derive the vendored code from the installed file and record its sha256, or correct the notice",
                o.notice, f.path, o.installed_version
            ),
        ),
    }
}

impl super::Gate for VendoredSdk {
    fn id(&self) -> &'static str {
        GATE
    }

    fn not_applicable(&self, ctx: &RunContext) -> Option<String> {
        let Some(opts) = &ctx.profile.profile.vendored_sdk else {
            return Some(
                "the profile has no [vendored_sdk] section: no candidate names vendored SDK code, so its \
                 provenance is not established"
                    .into(),
            );
        };
        if !ctx.candidate_specs().iter().any(|c| opts.covers(&c.path)) {
            return Some(
                "no candidate of this run is listed in [vendored_sdk] candidates: vendored SDK provenance \
                 is not established for them"
                    .into(),
            );
        }
        None
    }

    fn run(&self, ctx: &RunContext, _out: &mut Updates) -> Result<Vec<Check>, String> {
        let opts = ctx
            .profile
            .profile
            .vendored_sdk
            .clone()
            .ok_or("the profile has no [vendored_sdk] section")?;
        let staged = ctx.staged_root.clone().ok_or(
            "the staged source is missing (the `stage` gate did not record DIR/staging/source)",
        )?;
        let sdk = ctx
            .verified_sdk
            .clone()
            .ok_or("the verified SDK is missing (the `sdk-record` gate did not pass)")?;
        let installed = ctx
            .sdk
            .version
            .clone()
            .ok_or("sdk-record recorded no installed SDK version")?;
        let pinned = ctx.profile.profile.sdk.version().to_string();
        let record = observe::record_paths(&sdk)?;
        let mut candidates = Vec::new();
        for c in ctx.candidate_specs() {
            if !opts.covers(&c.path) {
                candidates.push(CandidateObservation::NotCovered {
                    folder: c.folder().to_string(),
                    path: c.path.clone(),
                });
                continue;
            }
            candidates.push(CandidateObservation::Covered(Box::new(observe::observe(
                &staged,
                &c.path,
                c.folder(),
                &opts,
                &sdk,
                &record,
                &pinned,
                &installed,
            )?)));
        }
        Ok(decide(&Observation { candidates }))
    }
}

#[cfg(test)]
mod tests;
