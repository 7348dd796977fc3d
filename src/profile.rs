//! Profiles: which candidates to certify, against which SDK requirement.
//!
//! A profile is TOML with unknown keys refused. The built-in `coding-runners`
//! profile (`gates/profiles/coding-runners.toml`) is used unless the
//! repository under review has `verify-coding-candidates.toml` at its root or
//! `--profile FILE` is given.

pub mod groups;
pub mod partition;

pub use partition::{partition_share, Partition};

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The built-in profile's source.
pub const BUILTIN_CODING_RUNNERS: &str = include_str!("../gates/profiles/coding-runners.toml");

/// File name of a profile inside the repository under review.
pub const REPO_PROFILE_NAME: &str = "verify-coding-candidates.toml";

/// A parsed profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name, recorded in the evidence.
    pub name: String,
    /// SDK pin.
    pub sdk: SdkPin,
    /// Candidates, by folder path relative to the repository root.
    #[serde(rename = "candidate")]
    pub candidates: Vec<CandidateSpec>,
    /// Canonical shared files.
    #[serde(default)]
    pub shared: Option<SharedFiles>,
    /// Options of the `lbp-build` gate.
    #[serde(default)]
    pub build: BuildOptions,
    /// Options of the `discovery-rpc` gate.
    #[serde(default)]
    pub discovery: DiscoveryOptions,
    /// The repository's own pytest suites (`[suites]`), run by the `suites`
    /// gate; none: the gate runs nothing and says so.
    #[serde(default)]
    pub suites: Option<SuitesOptions>,
    /// Where each candidate names the SDK code it vendors (`[vendored_sdk]`),
    /// read by the `vendored-sdk` gate; none: that gate is skipped.
    #[serde(default)]
    pub vendored_sdk: Option<VendoredSdkOptions>,
    /// Historical archives the SDK must refuse (`[historical_admission]`),
    /// read by the `historical-admission` gate with `--release-dir`.
    #[serde(default)]
    pub historical_admission: Option<HistoricalAdmissionOptions>,
    /// Options of the `dependencies` gate (`[dependencies]`): the package
    /// index and which projects may be built here from their sdist.
    #[serde(default)]
    pub dependencies: DependenciesOptions,
    /// Options of the `admission` gate (`[admission]`): what the profile
    /// asks beyond the SDK's own admission.
    #[serde(default)]
    pub admission: AdmissionOptions,
    /// `[worker_isolation]`: the candidates' runners run jobs through the
    /// SDK's daemon hub (the coding runners do), so the `worker-isolation`
    /// gate applies; none: that gate is skipped, saying why.
    #[serde(default)]
    pub worker_isolation: Option<WorkerIsolationOptions>,
}

/// `[worker_isolation]`: declares that the `worker-isolation` gate applies.
/// It has no keys yet; an empty table declares it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerIsolationOptions {}

/// Options of the `admission` gate (`[admission]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionOptions {
    /// Whether every candidate's `requirements.txt` must hold a
    /// `langbot-plugin` requirement (the SDK the candidate was built and
    /// tested against). Default `false`: the SDK's own admission, which
    /// drops `langbot-plugin` from every install list (the runtime provides
    /// it) and admits an archive with no `requirements.txt` at all. A
    /// `langbot-plugin` requirement that is present is judged either way.
    #[serde(default)]
    pub require_sdk_pin: bool,
}

/// Options of the `dependencies` gate (`[dependencies]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependenciesOptions {
    /// The package index (PEP 503 simple API base URL) every wheelhouse
    /// file is downloaded from; `--index-url` replaces it. Default: the
    /// SDK's own default, `https://pypi.org/simple`.
    #[serde(default = "default_index_url")]
    pub index_url: String,
    /// Projects (PEP 503 names compare) that may be built here from their
    /// sdist: pip runs their build code inside the sandbox and the evidence
    /// records each such wheel as `built-from-sdist`, with the sdist's URL and
    /// published hash and the build log. A listed project is always built from
    /// its sdist, never taken as a wheel. Every other project must come as a
    /// wheel published on the index; one with only an sdist is refused.
    /// Default: none.
    #[serde(default)]
    pub allow_source_builds: Vec<String>,
}

impl Default for DependenciesOptions {
    fn default() -> Self {
        Self {
            index_url: default_index_url(),
            allow_source_builds: Vec::new(),
        }
    }
}

/// Where the files come from: the SDK's own default index
/// (`pkgmgr.DEFAULT_PYPI_INDEX_URL`), the one its installer would reach
/// (the default of `[dependencies] index_url`).
pub const UPSTREAM_INDEX: &str = "https://pypi.org/simple";

fn default_index_url() -> String {
    UPSTREAM_INDEX.into()
}

/// Checks a package index URL: `https://`, `http://` or `file://`, with
/// something after the scheme and no whitespace.
///
/// # Errors
/// A sentence naming what was expected and what was found.
pub fn check_index_url(url: &str) -> Result<(), String> {
    let rest = ["https://", "http://", "file://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme));
    match rest {
        Some(r) if !r.is_empty() && !url.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(format!(
            "expected a package index URL (`https://`, `http://` or `file://`, e.g. \
             `https://pypi.org/simple`), found {url:?}"
        )),
    }
}

/// Options of the `vendored-sdk` gate (`[vendored_sdk]`): a notice file in
/// each candidate names the SDK version and file a vendored copy came from,
/// with that file's original sha256; a license copy holds the SDK's license.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendoredSdkOptions {
    /// Candidate paths carrying the notice; unset: every candidate.
    #[serde(default)]
    pub candidates: Option<Vec<String>>,
    /// The notice, relative to each candidate (`pkg/RELAY-NOTICE.md`).
    pub notice: String,
    /// The license copy, relative to each candidate (`pkg/LICENSE-sdk.txt`).
    pub license_copy: String,
    /// The installed distribution's license file it must equal, relative to
    /// the SDK's dist-info directory (default `licenses/LICENSE`).
    #[serde(default = "default_license_source")]
    pub license_source: String,
    /// Regex with one capture group: the SDK version the notice names.
    pub version_pattern: String,
    /// Regex with one capture group: the SDK file, relative to site-packages
    /// (`langbot_plugin/...`).
    pub file_pattern: String,
    /// Regex with one capture group: that file's original sha256 (64 hex).
    pub sha256_pattern: String,
}

fn default_license_source() -> String {
    "licenses/LICENSE".into()
}

impl VendoredSdkOptions {
    /// Whether candidate `path` carries the notice.
    pub fn covers(&self, path: &str) -> bool {
        self.candidates
            .as_ref()
            .is_none_or(|c| c.iter().any(|p| p == path))
    }
}

/// Options of the `historical-admission` gate (`[historical_admission]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoricalAdmissionOptions {
    /// The exact historical archives (`[[historical_admission.archive]]`).
    #[serde(rename = "archive")]
    pub archives: Vec<HistoricalArchive>,
    /// Seconds one archive's admission may take.
    #[serde(default = "default_historical_timeout")]
    pub timeout_secs: u64,
}

fn default_historical_timeout() -> u64 {
    120
}

/// One historical archive the SDK must refuse.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoricalArchive {
    /// What it is, for people (`ACPAgentRunner 0.1.12`).
    pub name: String,
    /// Its sha256, 64 lower-case hex digits: the only identity trusted.
    pub sha256: String,
    /// Why the SDK must refuse it, for people (`pins b3`).
    pub reason: String,
    /// Text the SDK's refusal must contain for the refusal to be for that
    /// reason (`langbot-plugin==0.6.0b3`).
    pub refusal_contains: String,
}

/// Checks `[vendored_sdk]`.
fn check_vendored_sdk(profile: &Profile, v: &VendoredSdkOptions) -> Result<(), String> {
    for (key, p) in [
        ("notice", &v.notice),
        ("license_copy", &v.license_copy),
        ("license_source", &v.license_source),
    ] {
        if !relative_in_repo(p) {
            return Err(format!(
                "vendored_sdk.{key} {p:?} must be relative, `/`-separated, without `.`, `..` or empty components"
            ));
        }
    }
    for c in v.candidates.iter().flatten() {
        if !profile.candidates.iter().any(|k| &k.path == c) {
            return Err(format!(
                "vendored_sdk.candidates names {c:?}, which is not one of the [[candidate]] paths"
            ));
        }
    }
    for (key, pattern) in [
        ("version_pattern", &v.version_pattern),
        ("file_pattern", &v.file_pattern),
        ("sha256_pattern", &v.sha256_pattern),
    ] {
        let re = regex::Regex::new(pattern)
            .map_err(|e| format!("vendored_sdk.{key} {pattern:?} is not a regex: {e}"))?;
        if re.captures_len() != 2 {
            return Err(format!(
                "vendored_sdk.{key} {pattern:?} has {} capture group(s); expected exactly one, around the value",
                re.captures_len() - 1
            ));
        }
    }
    Ok(())
}

/// Checks `[historical_admission]`.
fn check_historical(h: &HistoricalAdmissionOptions) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in h.archives.iter().enumerate() {
        let at = format!("historical_admission.archive[{i}] ({:?})", a.name);
        if a.sha256.len() != 64
            || !a
                .sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(format!(
                "{at}: sha256 {:?} is not 64 lower-case hex digits; expected the archive's full sha256",
                a.sha256
            ));
        }
        if !seen.insert(a.sha256.as_str()) {
            return Err(format!(
                "{at}: sha256 {} is listed twice; keep one entry",
                a.sha256
            ));
        }
        if a.refusal_contains.trim().is_empty() || a.reason.trim().is_empty() {
            return Err(format!(
                "{at}: `reason` and `refusal_contains` must not be empty; expected e.g. reason = \"pins b3\", \
                 refusal_contains = \"langbot-plugin==0.6.0b3\""
            ));
        }
    }
    if h.timeout_secs == 0 {
        return Err(
            "historical_admission.timeout_secs is 0; expected a positive number of seconds".into(),
        );
    }
    Ok(())
}

/// `[[sdk.group]]`: the digests of one non-default pin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupPin {
    /// The exact pin (`langbot-plugin==0.6.1`), as a candidate's `sdk` names it.
    pub requirement: String,
    /// sha256 of the published wheel (as `[sdk] wheel_sha256`).
    #[serde(default)]
    pub wheel_sha256: Option<String>,
    /// sha256 of that wheel's own `*.dist-info/RECORD` (as `[sdk] record_sha256`).
    #[serde(default)]
    pub record_sha256: Option<String>,
}

/// The exact SDK requirement.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkPin {
    /// PEP 508 requirement with one `==` specifier, e.g. `langbot-plugin==0.6.0b5`.
    pub requirement: String,
    /// sha256 (lowercase hex) of the published wheel of `requirement`: the
    /// provisioned interpreter (`src/provision.rs`) installs only this wheel
    /// (pip `--require-hashes`). Optional; when given it must equal the
    /// verifier's lock list entry for the SDK.
    #[serde(default)]
    pub wheel_sha256: Option<String>,
    /// sha256 (lowercase hex) of that wheel's own `*.dist-info/RECORD`
    /// (`unzip -p WHEEL '*.dist-info/RECORD' | sha256sum`): `sdk-record`
    /// proves the installed RECORD holds exactly the wheel's rows
    /// (`src/gates/sdk_record/provenance.rs`). Optional; without it that
    /// proof is not made.
    #[serde(default)]
    pub record_sha256: Option<String>,
    /// Distributions (names) an interpreter given with `--python` may hold
    /// beside the verifier's lock: `sdk-record`'s `environment-locked`
    /// reports them as a warning instead of failing (never a pass). Default
    /// none. See `docs/trust-boundary.md`.
    #[serde(default)]
    pub extra_distributions: Vec<String>,
    /// `[[sdk.group]]`: the wheel and RECORD digests of a pin other than
    /// `requirement` that some `[[candidate]] sdk` names
    /// ([`groups`]). Optional even then; default none.
    #[serde(default, rename = "group")]
    pub groups: Vec<GroupPin>,
}

impl SdkPin {
    /// The pinned version (the text after `==`).
    pub fn version(&self) -> &str {
        self.requirement
            .split_once("==")
            .map(|(_, v)| v.trim())
            .unwrap_or("")
    }
}

/// One candidate plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateSpec {
    /// Folder relative to the repository root, `/`-separated (`Runner/codex-agent`).
    pub path: String,
    /// The candidate's own pytest paths (files or folders), relative to its
    /// folder, `/`-separated, which the `suites` gate runs from the
    /// candidate's folder and from its extraction. `None` (the key unset):
    /// its `tests/` folder when the committed tree has one holding test
    /// files; `Some([])`: it has none (an `untested` warning).
    #[serde(default)]
    pub tests: Option<Vec<String>>,
    /// The exact SDK pin this candidate is certified under
    /// (`langbot-plugin==0.6.1`), when it is not `[sdk] requirement`: its
    /// group's own verified interpreter ([`groups`]). Unset: the profile's.
    #[serde(default)]
    pub sdk: Option<String>,
}

impl CandidateSpec {
    /// The folder's last component (`codex-agent`): names its directories
    /// under `DIR/packages/` and `DIR/extracted/`.
    pub fn folder(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Files that must be byte-identical in every candidate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedFiles {
    /// Candidate path holding the canonical copies.
    pub owner: String,
    /// Paths relative to each candidate.
    pub files: Vec<String>,
}

/// Options of the `lbp-build` gate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildOptions {
    /// Seconds before the build is stopped.
    #[serde(default = "default_build_timeout")]
    pub timeout_secs: u64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            timeout_secs: default_build_timeout(),
        }
    }
}

/// Options of the `discovery-rpc` gate (`[discovery]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryOptions {
    /// Seconds the runtime has to answer `GET /healthz` after it starts.
    #[serde(default = "default_health_timeout")]
    pub health_timeout_secs: u64,
    /// Seconds one plugin has to be listed `initialized` after
    /// `apply_plugin_installation` (the SDK's own worker ready timeout is 30).
    #[serde(default = "default_plugin_timeout")]
    pub plugin_timeout_secs: u64,
    /// How each candidate's Runner components are probed
    /// (`[[discovery.runner_probe]]`): through the invocation config, against
    /// a local protocol fixture. A candidate with Runner components and no
    /// entry gets one generic call, recorded as a warning.
    #[serde(default, rename = "runner_probe")]
    pub runner_probes: Vec<RunnerProbeSpec>,
    /// The input each listed Tool, Command, EventListener or KnowledgeEngine
    /// component is called with (`[[discovery.component_probe]]`). A
    /// component without an entry is called with an input its own
    /// declaration allows.
    #[serde(default, rename = "component_probe")]
    pub component_probes: Vec<ComponentProbeSpec>,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        Self {
            health_timeout_secs: default_health_timeout(),
            plugin_timeout_secs: default_plugin_timeout(),
            runner_probes: Vec::new(),
            component_probes: Vec::new(),
        }
    }
}

fn default_health_timeout() -> u64 {
    60
}

fn default_plugin_timeout() -> u64 {
    60
}

/// Prefix of a fixture built into the harness (`builtin:NAME`).
pub const BUILTIN_FIXTURE_PREFIX: &str = "builtin:";

/// Placeholders a runner probe's `config` may use in any string value:
/// the verified interpreter (absolute), the fixture program as copied for
/// this probe (absolute), and a fresh private workspace folder (absolute).
pub const PROBE_PLACEHOLDERS: [&str; 3] = ["{python}", "{fixture}", "{workspace}"];

/// Placeholder for the probe's nonce in `expect` (the prompt carries it).
pub const NONCE_PLACEHOLDER: &str = "{nonce}";

/// One runner probe (`[[discovery.runner_probe]]`): two `run_runner` calls
/// through the real runtime, the negative control with `invalid_config`
/// (must end in `run.failed`), then the probe with `config` (must end in
/// `run.completed` with the fixture's text, and no `run.failed`). Every
/// reply is a local protocol fixture's, never a vendor call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerProbeSpec {
    /// The candidate's path, as in `[[candidate]]`.
    pub candidate: String,
    /// The Runner component's `metadata.name`; unset: every Runner
    /// component of the candidate.
    #[serde(default)]
    pub runner: Option<String>,
    /// `builtin:NAME` (a fixture program embedded in the harness; see
    /// `verify-coding-candidates gates`) or a file of the staged commit,
    /// relative to the repository root, `/`-separated.
    pub fixture: String,
    /// The invocation config merged into the run context
    /// (`RunnerContext.config`); strings may use [`PROBE_PLACEHOLDERS`].
    pub config: toml::Table,
    /// The negative control's invocation config.
    #[serde(default = "default_invalid_config")]
    pub invalid_config: toml::Table,
    /// Plugin settings the host answers `get_plugin_settings` with, over the
    /// manifest's `spec.config` defaults (for example `daemon-enabled = false`).
    #[serde(default)]
    pub plugin_config: toml::Table,
    /// Text the completed reply must contain (`{nonce}` is replaced by the
    /// probe's nonce). Required for a repository fixture; a built-in fixture
    /// has its own, which may not be replaced.
    #[serde(default)]
    pub expect: Option<String>,
}

/// Component kinds a `[[discovery.component_probe]]` may name: those the
/// runtime's host actions call (`call_tool`, `execute_command`,
/// `emit_event`, `retrieve_knowledge`).
pub const PROBED_COMPONENT_KINDS: [&str; 4] =
    ["Tool", "Command", "EventListener", "KnowledgeEngine"];

/// One component's probe (`[[discovery.component_probe]]`): the input the
/// `discovery-rpc` gate calls it with through the real runtime, instead of
/// one derived from its declaration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentProbeSpec {
    /// The candidate's path, as in `[[candidate]]`.
    pub candidate: String,
    /// `Kind/name`, as the evidence names components (`Tool/get_weather`).
    pub component: String,
    /// The input: a Tool's parameters; a Command's `params` (a list of
    /// words); an EventListener's `event_name` and event fields; a
    /// KnowledgeEngine's retrieval context (`query`, ...).
    pub input: toml::Table,
}

/// Checks `[[discovery.component_probe]]`.
fn check_component_probes(profile: &Profile) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in profile.discovery.component_probes.iter().enumerate() {
        let at = format!(
            "discovery.component_probe[{i}] (candidate {:?})",
            p.candidate
        );
        if !profile.candidates.iter().any(|c| c.path == p.candidate) {
            return Err(format!(
                "{at}: the candidate is not one of the [[candidate]] paths"
            ));
        }
        match p.component.split_once('/') {
            Some((kind, name)) if PROBED_COMPONENT_KINDS.contains(&kind) && !name.is_empty() => {}
            _ => {
                return Err(format!(
                    "{at}: component {:?} must be `Kind/name` with Kind one of {PROBED_COMPONENT_KINDS:?}",
                    p.component
                ))
            }
        }
        if !seen.insert((p.candidate.clone(), p.component.clone())) {
            return Err(format!(
                "{at}: a second probe for {:?}; keep one",
                p.component
            ));
        }
    }
    Ok(())
}

fn default_invalid_config() -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("location".into(), toml::Value::String("invalid".into()));
    t
}

impl RunnerProbeSpec {
    /// The built-in fixture's name, when `fixture` is `builtin:NAME`.
    pub fn builtin(&self) -> Option<&str> {
        self.fixture.strip_prefix(BUILTIN_FIXTURE_PREFIX)
    }
}

/// Every `{...}` in `s`, appended to `out`.
/// An unclosed `{` is appended with the rest of `s`.
fn scan_placeholders(s: &str, out: &mut Vec<String>) {
    let mut rest = s;
    while let Some((_, after)) = rest.split_once('{') {
        match after.split_once('}') {
            Some((inner, next)) => {
                out.push(format!("{{{inner}}}"));
                rest = next;
            }
            None => {
                out.push(format!("{{{after}"));
                break;
            }
        }
    }
}

/// Every `{...}` in the strings of `value` (keys included), for validation.
fn placeholders(value: &toml::Value, out: &mut Vec<String>) {
    match value {
        toml::Value::String(s) => scan_placeholders(s, out),
        toml::Value::Array(a) => a.iter().for_each(|v| placeholders(v, out)),
        toml::Value::Table(t) => {
            for (k, v) in t {
                scan_placeholders(k, out);
                placeholders(v, out);
            }
        }
        _ => {}
    }
}

/// A runner probe's fixture (`at` names the probe): a built-in one this
/// verifier has, without `expect`; or a repository path with an `expect`
/// that holds the nonce placeholder.
fn check_probe_fixture(
    at: &str,
    p: &RunnerProbeSpec,
    builtin_names: &[&str],
) -> Result<(), String> {
    match p.builtin() {
        Some(name) if !builtin_names.contains(&name) => {
            return Err(format!(
                "{at}: fixture {:?} is not built in; expected one of {}",
                p.fixture,
                builtin_names
                    .iter()
                    .map(|n| format!("\"{BUILTIN_FIXTURE_PREFIX}{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Some(_) if p.expect.is_some() => {
            return Err(format!(
                "{at}: `expect` cannot replace a built-in fixture's reply; remove it"
            ));
        }
        Some(_) => {}
        None if !relative_in_repo(&p.fixture) => {
            return Err(format!(
                "{at}: fixture {:?} must be \"builtin:NAME\" or a path relative to the repository, `/`-separated, without `.`, `..` or empty components",
                p.fixture
            ));
        }
        None if p.expect.as_deref().is_none_or(str::is_empty) => {
            return Err(format!(
                "{at}: a repository fixture needs `expect`, the text its reply must contain (`{NONCE_PLACEHOLDER}` stands for the probe's nonce)"
            ));
        }
        // Without the nonce a fixed reply, written once into the runner,
        // would pass every run: the reply must answer this run's prompt.
        None if !p
            .expect
            .as_deref()
            .unwrap_or_default()
            .contains(NONCE_PLACEHOLDER) =>
        {
            return Err(format!(
                "{at}: `expect` {:?} does not hold `{NONCE_PLACEHOLDER}`; expected the text the fixture answers to this run's prompt, with `{NONCE_PLACEHOLDER}` where it repeats the probe's nonce (a reply without it could be canned)",
                p.expect.as_deref().unwrap_or_default()
            ));
        }
        None => {}
    }
    Ok(())
}

/// Checks `[[discovery.runner_probe]]`; `builtin_names` are the fixtures
/// built into the harness.
fn check_runner_probes(profile: &Profile, builtin_names: &[&str]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in profile.discovery.runner_probes.iter().enumerate() {
        let at = format!("discovery.runner_probe[{i}] (candidate {:?})", p.candidate);
        if !profile.candidates.iter().any(|c| c.path == p.candidate) {
            return Err(format!(
                "{at}: the candidate is not one of the [[candidate]] paths; expected one of {:?}",
                profile
                    .candidates
                    .iter()
                    .map(|c| c.path.as_str())
                    .collect::<Vec<_>>()
            ));
        }
        if !seen.insert((p.candidate.clone(), p.runner.clone())) {
            return Err(format!(
                "{at}: a second probe for the same candidate and runner {:?}; keep one",
                p.runner.as_deref().unwrap_or("(every Runner)")
            ));
        }
        check_probe_fixture(&at, p, builtin_names)?;
        if p.config.is_empty() {
            return Err(format!(
                "{at}: `config` is empty; expected the invocation config that points the runner at the fixture, e.g. {{ command = \"{{python}}\", args-json = [\"{{fixture}}\"], workspace = \"{{workspace}}\" }}"
            ));
        }
        if p.config == p.invalid_config {
            return Err(format!(
                "{at}: `invalid_config` equals `config`; the negative control must be a config the runner refuses"
            ));
        }
        let mut found = Vec::new();
        placeholders(&toml::Value::Table(p.config.clone()), &mut found);
        placeholders(&toml::Value::Table(p.invalid_config.clone()), &mut found);
        if let Some(bad) = found
            .iter()
            .find(|f| !PROBE_PLACEHOLDERS.contains(&f.as_str()))
        {
            return Err(format!(
                "{at}: unknown placeholder {bad:?} in the config; expected only {}",
                PROBE_PLACEHOLDERS.join(", ")
            ));
        }
    }
    Ok(())
}

fn default_build_timeout() -> u64 {
    120
}

/// Options of the `suites` gate (`[suites]`): which pytest suites of the
/// repository to run, twice and at the same time (on a private copy of the
/// committed tree, and with `source_root_env` pointing at DIR/extracted).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuitesOptions {
    /// pytest paths (files or folders) relative to the repository root,
    /// `/`-separated, passed to pytest explicitly and in this order.
    pub paths: Vec<String>,
    /// Files relative to the repository root kept for the record but excluded
    /// from discovery: the gate fails when any of their tests is collected.
    #[serde(default)]
    pub historical: Vec<String>,
    /// Environment variable that points the suites at a folder whose children
    /// are the candidate folders (unset in the tree run).
    #[serde(default = "default_source_root_env")]
    pub source_root_env: String,
    /// pytest configuration file relative to the repository root (passed with
    /// `-c`); none: an empty private one, so no file outside the committed tree
    /// configures pytest.
    #[serde(default)]
    pub config: Option<String>,
    /// Seconds one pytest run (and, separately, its collection) may take
    /// before its process group is stopped.
    #[serde(default = "default_suites_timeout")]
    pub timeout_secs: u64,
    /// pytest node ids (as the run's rootdir, the repository root, writes
    /// them: `Runner/x/test_a.py::test_b[p]`) the runs may deselect
    /// (`--deselect`, `-k`, `-m` in the configuration, a conftest hook);
    /// every other collected test that does not run fails `<run>/deselected`.
    #[serde(default)]
    pub deselected: Vec<String>,
    /// pytest's `python_files` globs (matched on the file name) by which
    /// `<run>/uncollected` names the test files of folders in `paths`;
    /// none: pytest's defaults (`test_*.py`, `*_test.py`). The repository's
    /// own configuration is not read for it.
    #[serde(default)]
    pub python_files: Option<Vec<String>>,
    /// pytest's `python_functions` (prefixes or globs) by which
    /// `<run>/uncollected` names test functions and methods; none: `test`.
    #[serde(default)]
    pub python_functions: Option<Vec<String>>,
    /// pytest's `python_classes` (prefixes or globs) by which
    /// `<run>/uncollected` names test classes; none: `Test`.
    #[serde(default)]
    pub python_classes: Option<Vec<String>>,
    /// pytest plugins (module names, each passed as `-p MODULE`) the runs
    /// load. Entry-point autoload is off (`PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`):
    /// no installed distribution's `pytest11` entry point loads unless its
    /// module is named here. Default: `["pytest_asyncio.plugin"]` (the
    /// lock's one pytest plugin).
    #[serde(default = "default_pytest_plugins")]
    pub pytest_plugins: Vec<String>,
    /// How many times a run reruns the tests it failed (0 to
    /// [`MAX_SUITE_RETRIES`]), as cargo-nextest's `retries`: each rerun is
    /// a pytest run of its own, in the same sandbox with a fresh copy of the
    /// tree and fresh HOME/TMP, of exactly the
    /// node ids that failed before. A test that passes in a rerun is
    /// flaky: a warning (`<run>/flaky`, the statement is never `PASSED`),
    /// not a failure; one that fails every attempt fails `<run>/outcomes`.
    /// Default 0: a failed test fails the run.
    #[serde(default)]
    pub retries: u32,
    /// Candidate paths (as `[[candidate]] path`) these repository-level
    /// suites test through their extraction (`source_root_env` points the
    /// `extracted` run at DIR/extracted): such a candidate without tests of
    /// its own is reported `covered` by these runs instead of `untested`.
    /// Default none. Each must be a profile candidate.
    #[serde(default)]
    pub covers: Vec<String>,
    /// How `<run>/left-running` reports processes a run left running in its
    /// sandbox when pytest exited (a daemon a conftest started and never
    /// stopped): `"fail"` (default) or `"warn"`. Never a pass.
    #[serde(default)]
    pub left_running: LeftRunningPolicy,
}

/// How `left-running` reports processes left running: a failure (default)
/// or a warning (`left_running = "warn"`). Never a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeftRunningPolicy {
    /// A failure.
    #[default]
    Fail,
    /// A warning (the statement is never `PASSED`).
    Warn,
}

/// The most reruns `[suites] retries` may ask for.
pub const MAX_SUITE_RETRIES: u32 = 5;

fn default_pytest_plugins() -> Vec<String> {
    vec!["pytest_asyncio.plugin".into()]
}

fn default_source_root_env() -> String {
    "CODING_RUNNER_SOURCE_ROOT".into()
}

fn default_suites_timeout() -> u64 {
    600
}

/// True for a `/`-separated relative path without empty, `.` or `..` parts.
fn relative_in_repo(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
}

/// Checks `[suites]`; the message names the key, the value and what is expected.
fn check_suites(s: &SuitesOptions) -> Result<(), String> {
    if s.paths.is_empty() {
        return Err("suites.paths is empty; expected at least one pytest file or folder relative to the repository root, \
                    or no [suites] table"
            .into());
    }
    let named = s
        .paths
        .iter()
        .map(|p| ("suites.paths", p))
        .chain(s.historical.iter().map(|p| ("suites.historical", p)));
    for (key, p) in named.chain(s.config.iter().map(|p| ("suites.config", p))) {
        if !relative_in_repo(p) {
            return Err(format!(
                "{key} entry {p:?} must be relative to the repository, `/`-separated, without `.`, `..` or empty components"
            ));
        }
    }
    if let Some(d) = s
        .deselected
        .iter()
        .find(|d| d.trim().is_empty() || d.starts_with('/'))
    {
        return Err(format!(
            "suites.deselected entry {d:?} must be a pytest node id relative to the repository root, \
             e.g. \"Runner/certification-tests/test_a.py::test_b\""
        ));
    }
    let env = &s.source_root_env;
    let reserved = ["PATH", "HOME", "TMPDIR", "LANG", "TZ"];
    if env.is_empty()
        || env.starts_with(|c: char| c.is_ascii_digit())
        || !env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || env.starts_with("PYTHON")
        || reserved.contains(&env.as_str())
    {
        return Err(format!(
            "suites.source_root_env {env:?} must be a variable name of letters, digits and `_`, not PYTHON* \
             nor one of {reserved:?}; expected e.g. \"CODING_RUNNER_SOURCE_ROOT\""
        ));
    }
    if s.timeout_secs == 0 {
        return Err("suites.timeout_secs is 0; expected a positive number of seconds".into());
    }
    if s.retries > MAX_SUITE_RETRIES {
        return Err(format!(
            "suites.retries is {}; expected 0 to {MAX_SUITE_RETRIES} reruns of the tests a run failed",
            s.retries
        ));
    }
    Ok(())
}

/// Where the profile came from.
#[derive(Debug, Clone)]
pub enum ProfileSource {
    /// The built-in `coding-runners` profile.
    Builtin,
    /// A file: `--profile` or the repository's own.
    File(PathBuf),
}

/// A loaded profile with its source text.
#[derive(Debug, Clone)]
pub struct LoadedProfile {
    /// The parsed profile.
    pub profile: Profile,
    /// Where it came from.
    pub source: ProfileSource,
    /// Its text (for the evidence digest).
    pub text: String,
}

/// A profile that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Unreadable file.
    #[error("profile {path}: cannot read: {source}")]
    Read {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// TOML error, including unknown keys (the message names the key).
    #[error("profile {path}: {message}\nexpected: only the keys a profile defines (docs/profiles.md documents each one); fix or remove the offending key")]
    Parse {
        /// Path or `built-in`.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// Semantically invalid.
    #[error("profile {path}: {message}")]
    Invalid {
        /// Path or `built-in`.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// Loads `--profile`, else `<repo>/verify-coding-candidates.toml`, else the built-in.
///
/// # Errors
/// [`ProfileError`] on an unreadable, unparsable or invalid profile.
pub fn load(explicit: Option<&Path>, repo: &Path) -> Result<LoadedProfile, ProfileError> {
    let repo_file = repo.join(REPO_PROFILE_NAME);
    let (text, source) = if let Some(p) = explicit {
        (read(p)?, ProfileSource::File(p.to_path_buf()))
    } else if repo_file.is_file() {
        (read(&repo_file)?, ProfileSource::File(repo_file))
    } else {
        (BUILTIN_CODING_RUNNERS.to_string(), ProfileSource::Builtin)
    };
    let label = match &source {
        ProfileSource::Builtin => "built-in coding-runners".to_string(),
        ProfileSource::File(p) => p.display().to_string(),
    };
    let profile = parse(&text, &label)?;
    Ok(LoadedProfile {
        profile,
        source,
        text,
    })
}

fn read(p: &Path) -> Result<String, ProfileError> {
    std::fs::read_to_string(p).map_err(|source| ProfileError::Read {
        path: p.display().to_string(),
        source,
    })
}

/// The SDK pin's own rules: digests of 64 lowercase hex digits, and an
/// exact `langbot-plugin==` requirement.
fn check_sdk_pin(sdk: &SdkPin) -> Result<(), String> {
    for (key, value) in [
        ("wheel_sha256", &sdk.wheel_sha256),
        ("record_sha256", &sdk.record_sha256),
    ] {
        if let Some(v) = value {
            if v.len() != 64
                || !v
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(format!(
                    "sdk.{key} is {v:?}; expected 64 lowercase hex digits (a sha256)"
                ));
            }
        }
    }
    let req = &sdk.requirement;
    if !req.starts_with("langbot-plugin==") || sdk.version().is_empty() {
        return Err(format!(
            "sdk.requirement is {req:?}; expected an exact pin like \"langbot-plugin==0.6.0b5\""
        ));
    }
    Ok(())
}

/// The candidates' own rules: at least one; each path relative and
/// `/`-separated without `.`, `..` or empty components, and so each tests
/// entry; no two sharing a folder name.
fn check_candidates(candidates: &[CandidateSpec]) -> Result<(), String> {
    if candidates.is_empty() {
        return Err("no [[candidate]] entries; expected at least one candidate path".into());
    }
    let mut folders = std::collections::BTreeSet::new();
    for c in candidates {
        let p = &c.path;
        // An empty path and an absolute one have an empty component.
        if p.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
            return Err(format!(
                "candidate path {p:?} must be relative, `/`-separated, without `.`, `..` or empty components"
            ));
        }
        for t in c.tests.iter().flatten() {
            if !relative_in_repo(t) {
                return Err(format!(
                    "candidate {p:?}: tests entry {t:?} must be relative to the candidate's folder, `/`-separated, \
                     without `.`, `..` or empty components (e.g. \"tests\")"
                ));
            }
        }
        if !folders.insert(c.folder().to_string()) {
            return Err(format!(
                "two candidates share the folder name {:?}; folder names key DIR/packages and DIR/extracted",
                c.folder()
            ));
        }
    }
    Ok(())
}

/// Parses and validates profile `text`; `label` names it in errors.
///
/// # Errors
/// [`ProfileError::Parse`] or [`ProfileError::Invalid`].
pub fn parse(text: &str, label: &str) -> Result<Profile, ProfileError> {
    let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
        path: label.into(),
        message: e.to_string(),
    })?;
    let invalid = |message: String| ProfileError::Invalid {
        path: label.into(),
        message,
    };
    check_sdk_pin(&profile.sdk).map_err(invalid)?;
    check_candidates(&profile.candidates).map_err(invalid)?;
    groups::check(&profile).map_err(invalid)?;
    check_runner_probes(&profile, crate::builtin_fixtures::NAMES).map_err(invalid)?;
    check_component_probes(&profile).map_err(invalid)?;
    if let Some(suites) = &profile.suites {
        check_suites(suites).map_err(invalid)?;
        if let Some(c) = suites
            .covers
            .iter()
            .find(|c| !profile.candidates.iter().any(|k| &k.path == *c))
        {
            return Err(invalid(format!(
                "suites.covers entry {c:?} is not a [[candidate]] path; expected the path of a candidate the \
                 repository-level suites test through its extraction"
            )));
        }
    }
    if let Some(v) = &profile.vendored_sdk {
        check_vendored_sdk(&profile, v).map_err(invalid)?;
    }
    if let Some(h) = &profile.historical_admission {
        check_historical(h).map_err(invalid)?;
    }
    check_index_url(&profile.dependencies.index_url)
        .map_err(|e| invalid(format!("dependencies.index_url: {e}")))?;
    if let Some(shared) = &profile.shared {
        if !profile.candidates.iter().any(|c| c.path == shared.owner) {
            return Err(invalid(format!(
                "shared.owner {:?} is not one of the candidates",
                shared.owner
            )));
        }
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    #[test]
    fn index_urls_must_be_urls() {
        for ok in [
            "https://pypi.org/simple",
            "http://127.0.0.1:8080/simple/",
            "file:///srv/simple",
        ] {
            assert!(check_index_url(ok).is_ok(), "{ok}");
        }
        for bad in ["pypi.org/simple", "https://", "", "https://a b", "ftp://x"] {
            let e = check_index_url(bad).unwrap_err();
            assert!(e.contains("expected a package index URL"), "{e}");
        }
    }

    use super::*;

    #[test]
    fn dependencies_default_to_pypi_and_wheels_only_and_a_bad_index_is_refused() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        assert_eq!(p.dependencies.index_url, "https://pypi.org/simple");
        assert!(p.dependencies.allow_source_builds.is_empty());
        let start = BUILTIN_CODING_RUNNERS.find("[dependencies]").unwrap();
        let end = BUILTIN_CODING_RUNNERS.find("[build]").unwrap();
        let without = format!(
            "{}{}",
            &BUILTIN_CODING_RUNNERS[..start],
            &BUILTIN_CODING_RUNNERS[end..]
        );
        let p = parse(&without, "t").unwrap();
        assert_eq!(p.dependencies.index_url, "https://pypi.org/simple");
        let text = |section: &str| {
            format!(
                "{}{section}\n{}",
                &BUILTIN_CODING_RUNNERS[..start],
                &BUILTIN_CODING_RUNNERS[end..]
            )
        };
        let p = parse(
            &text("[dependencies]\nindex_url = \"https://mirror.example/simple\"\nallow_source_builds = [\"docopt\"]"),
            "t",
        )
        .unwrap();
        assert_eq!(p.dependencies.index_url, "https://mirror.example/simple");
        assert_eq!(p.dependencies.allow_source_builds, ["docopt"]);
        let e = parse(&text("[dependencies]\nindex_url = \"mirror\""), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dependencies.index_url") && e.contains("expected a package index URL"),
            "{e}"
        );
        assert!(parse(&text("[dependencies]\nfind_links = \"/x\""), "t").is_err());
    }

    #[test]
    fn builtin_profile_matches_the_real_repository() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let paths: Vec<_> = p.candidates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "Runner/acp-agent-runner",
                "Runner/claude-code-agent",
                "Runner/codex-agent"
            ]
        );
        assert_eq!(p.sdk.version(), "0.6.0b5");
        let shared = p.shared.unwrap();
        assert_eq!(shared.owner, "Runner/acp-agent-runner");
        assert_eq!(
            shared.files,
            ["pkg/daemon_relay.py", "pkg/runtime_support.py"]
        );
    }

    #[test]
    fn builtin_profile_probes_every_runner_with_a_builtin_fixture() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        assert_eq!(p.discovery.health_timeout_secs, 60);
        let probes: Vec<(&str, Option<&str>)> = p
            .discovery
            .runner_probes
            .iter()
            .map(|r| (r.candidate.as_str(), r.builtin()))
            .collect();
        assert_eq!(
            probes,
            [
                ("Runner/acp-agent-runner", Some("acp-stdio")),
                ("Runner/claude-code-agent", Some("claude-code-stream-json")),
                ("Runner/codex-agent", Some("codex-app-server")),
            ]
        );
        for r in &p.discovery.runner_probes {
            assert_eq!(r.invalid_config["location"].as_str(), Some("invalid"));
            assert_eq!(r.plugin_config["daemon-enabled"].as_bool(), Some(false));
            assert!(r.expect.is_none());
        }
        let codex = &p.discovery.runner_probes[2];
        assert_eq!(codex.config["command"].as_str(), Some("{python} {fixture}"));
    }

    #[test]
    fn placeholders_are_every_brace_pair_in_values_and_keys() {
        let mut found = Vec::new();
        scan_placeholders("a{python}b{}c{fixture}{{x}d{open", &mut found);
        assert_eq!(found, ["{python}", "{}", "{fixture}", "{{x}", "{open"]);
        let value: toml::Value =
            toml::from_str("k = [\"{a}\", [\"{b}\"]]\n\"{c}\" = { d = \"{e}\" }\nn = 1").unwrap();
        let mut found = Vec::new();
        placeholders(&value, &mut found);
        found.sort();
        assert_eq!(found, ["{a}", "{b}", "{c}", "{e}"]);
    }

    #[test]
    fn component_probes_are_checked() {
        let base = "name = \"x\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        let good = format!("{base}[[discovery.component_probe]]\ncandidate = \"R/a\"\ncomponent = \"Tool/echo\"\ninput = {{ text = \"hi\" }}\n");
        let p = parse(&good, "x.toml").unwrap();
        assert_eq!(p.discovery.component_probes[0].component, "Tool/echo");
        assert_eq!(
            p.discovery.component_probes[0].input["text"].as_str(),
            Some("hi")
        );
        for (body, needle) in [
            (good.replace("candidate = \"R/a\"\ncomponent", "candidate = \"R/b\"\ncomponent"), "not one of the [[candidate]]"),
            (good.replace("Tool/echo", "Runner/default"), "must be `Kind/name`"),
            (good.replace("Tool/echo", "Tool/"), "must be `Kind/name`"),
            (good.replace("Tool/echo", "echo"), "must be `Kind/name`"),
            (format!("{good}[[discovery.component_probe]]\ncandidate = \"R/a\"\ncomponent = \"Tool/echo\"\ninput = {{}}\n"), "a second probe"),
        ] {
            let err = parse(&body, "x.toml").unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn runner_probes_are_checked() {
        let base = "name = \"x\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        let probe = |body: &str| format!("{base}[[discovery.runner_probe]]\n{body}\n");
        let good = probe(
            "candidate = \"R/a\"\nfixture = \"R/fx.py\"\nexpect = \"ok {nonce}\"\nconfig = { command = \"{python}\", args = [\"{fixture}\"], workspace = \"{workspace}\" }",
        );
        let p = parse(&good, "x.toml").unwrap();
        let r = &p.discovery.runner_probes[0];
        assert_eq!((r.builtin(), r.runner.as_deref()), (None, None));
        assert_eq!(r.invalid_config["location"].as_str(), Some("invalid"));
        for (body, needle) in [
            (good.replace("candidate = \"R/a\"\nfixture", "candidate = \"R/b\"\nfixture"), "not one of the [[candidate]]"),
            (good.replace("R/fx.py", "builtin:nope"), "\"builtin:nope\" is not built in"),
            (good.replace("R/fx.py", "builtin:acp-stdio"), "`expect` cannot replace"),
            (good.replace("R/fx.py", "../fx.py"), "\"../fx.py\""),
            (good.replace("expect = \"ok {nonce}\"\n", ""), "needs `expect`"),
            (good.replace("ok {nonce}", "ok"), "does not hold `{nonce}`"),
            (good.replace("{workspace}", "{home}"), "unknown placeholder \"{home}\""),
            (good.replace("[\"{fixture}\"]", "[\"{fixture}\", \"{home}\"]"), "unknown placeholder \"{home}\""),
            (good.replace("config = { command = \"{python}\", args = [\"{fixture}\"], workspace = \"{workspace}\" }", "config = {}"), "`config` is empty"),
            (good.replace("config = {", "invalid_config = { location = \"invalid\" }\nconfig = { location = \"invalid\" }\nx = {"), "x"),
            (format!("{good}[[discovery.runner_probe]]\ncandidate = \"R/a\"\nfixture = \"builtin:acp-stdio\"\nconfig = {{ a = 1 }}\n"), "a second probe"),
        ] {
            let err = parse(&body, "x.toml").unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
        let same = probe("candidate = \"R/a\"\nfixture = \"builtin:acp-stdio\"\nconfig = { location = \"invalid\" }");
        let err = parse(&same, "x.toml").unwrap_err().to_string();
        assert!(err.contains("`invalid_config` equals `config`"), "{err}");
        let old = format!("{base}[[discovery.vendor_fixture]]\ncandidate = \"R/a\"\ncommand = \"codex\"\nprogram = \"R/x\"\n");
        let err = parse(&old, "x.toml").unwrap_err().to_string();
        assert!(
            err.contains("vendor_fixture"),
            "the PATH-based vendor fixture is gone: {err}"
        );
    }

    #[test]
    fn builtin_suites_name_the_two_suites_and_the_historical_reproducer() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let s = p.suites.expect("the built-in profile has [suites]");
        assert_eq!(
            s.paths,
            [
                "Runner/certification-tests/test_coding_relay_v1.py",
                "Runner/certification-tests/test_coding_native_lifecycle.py"
            ]
        );
        assert_eq!(
            s.historical,
            ["Runner/certification-tests/historical_coding_runner_shared_blockers.py"]
        );
        assert_eq!(s.source_root_env, "CODING_RUNNER_SOURCE_ROOT");
        assert_eq!(s.config, None);
        // The three coding runners are tested by these suites, not by tests
        // of their own.
        let paths: Vec<&str> = p.candidates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(s.covers, paths);
    }

    #[test]
    fn suites_options_are_checked() {
        let base = "name = \"x\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        let p = parse(
            &format!("{base}[suites]\npaths = [\"t/test_a.py\"]\n"),
            "x.toml",
        )
        .unwrap();
        let s = p.suites.unwrap();
        assert_eq!(
            (s.source_root_env.as_str(), s.timeout_secs, s.config),
            ("CODING_RUNNER_SOURCE_ROOT", 600, None)
        );
        assert!(s.deselected.is_empty());
        let p = parse(
            &format!("{base}[suites]\npaths = [\"t/test_a.py\"]\ndeselected = [\"t/test_a.py::test_b[x]\"]\n"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(p.suites.unwrap().deselected, ["t/test_a.py::test_b[x]"]);
        let p = parse(
            &format!("{base}[suites]\npaths = [\"t.py\"]\ncovers = [\"R/a\"]\n"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(p.suites.unwrap().covers, ["R/a"]);
        assert!(parse(base, "x.toml").unwrap().suites.is_none());
        for (bad, needle) in [
            ("paths = []", "suites.paths is empty"),
            ("paths = [\"../t.py\"]", "\"../t.py\""),
            (
                "paths = [\"t.py\"]\nhistorical = [\"/abs.py\"]",
                "suites.historical",
            ),
            (
                "paths = [\"t.py\"]\nsource_root_env = \"PYTHONPATH\"",
                "PYTHONPATH",
            ),
            ("paths = [\"t.py\"]\nsource_root_env = \"A-B\"", "A-B"),
            (
                "paths = [\"t.py\"]\ndeselected = [\" \"]",
                "suites.deselected entry \" \" must be a pytest node id",
            ),
            (
                "paths = [\"t.py\"]\ndeselected = [\"/t.py::test_a\"]",
                "suites.deselected entry \"/t.py::test_a\"",
            ),
            (
                "paths = [\"t.py\"]\nsource_root_env = \"\"",
                "source_root_env \"\"",
            ),
            (
                "paths = [\"t.py\"]\nsource_root_env = \"1ROOT\"",
                "\"1ROOT\"",
            ),
            ("paths = [\"t.py\"]\nsource_root_env = \"HOME\"", "\"HOME\""),
            (
                "paths = [\"t.py\"]\nconfig = \"a/../b.ini\"",
                "suites.config",
            ),
            ("paths = [\"t.py\"]\ntimeout_secs = 0", "timeout_secs"),
            (
                "paths = [\"t.py\"]\nretries = 6",
                "suites.retries is 6; expected 0 to 5",
            ),
            (
                "paths = [\"t.py\"]\ncovers = [\"R/b\"]",
                "suites.covers entry \"R/b\" is not a [[candidate]] path",
            ),
        ] {
            let err = parse(&format!("{base}[suites]\n{bad}\n"), "x.toml")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
    }

    #[test]
    fn builtin_lists_the_three_historical_archives_and_reads_the_relay_notice() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        let h = p.historical_admission.unwrap();
        let listed: Vec<(&str, &str)> = h
            .archives
            .iter()
            .map(|a| (a.name.as_str(), a.sha256.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                (
                    "ACPAgentRunner 0.1.12",
                    "39dad83666eb27e6b7e2d0f6e28a05bdcc8a53accf517eddb4748a256ba3631a"
                ),
                (
                    "ClaudeCodeAgent 0.1.10",
                    "269c2ed34436234d21a94b7faf234a76ddc40310ad78f518eeaf3873c812a15c"
                ),
                (
                    "CodexAgent 0.1.16",
                    "7aa4721b9b3104b330de23e52b89a45b382498768406c83cb33d13a9fd6469f9"
                ),
            ]
        );
        assert!(h.archives.iter().all(|a| a.reason == "pins b3"));
        let v = p.vendored_sdk.unwrap();
        assert_eq!(
            (v.notice.as_str(), v.license_copy.as_str()),
            ("pkg/RELAY-NOTICE.md", "pkg/LICENSE-sdk.txt")
        );
        assert!(v.covers("Runner/codex-agent"));
    }

    #[test]
    fn vendored_sdk_and_historical_sections_are_checked() {
        let base = "name = \"x\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        let v = "[vendored_sdk]\nnotice = \"n.md\"\nlicense_copy = \"l.txt\"\nversion_pattern = 'v (\\S+)'\nfile_pattern = 'f (\\S+)'\nsha256_pattern = 's ([0-9a-f]{64})'\n";
        // The defaults: the dist-info's license, every candidate covered.
        let opts = parse(&format!("{base}{v}"), "x.toml")
            .unwrap()
            .vendored_sdk
            .unwrap();
        assert_eq!(opts.license_source, "licenses/LICENSE");
        assert!(opts.covers("R/a") && opts.covers("anything"));
        let listed = parse(&format!("{base}{v}candidates = [\"R/a\"]\n"), "x.toml")
            .unwrap()
            .vendored_sdk
            .unwrap();
        assert!(listed.covers("R/a"));
        assert!(!listed.covers("R/b"));
        let h = format!("[historical_admission]\n[[historical_admission.archive]]\nname = \"a\"\nsha256 = \"{}\"\nreason = \"pins b3\"\nrefusal_contains = \"b3\"\n", "a".repeat(64));
        let historical = parse(&format!("{base}{h}"), "x.toml")
            .unwrap()
            .historical_admission
            .unwrap();
        assert_eq!(historical.timeout_secs, 120, "the default time limit");
        // The time limits' defaults: discovery with no [discovery] and with
        // one that sets neither; the build's.
        for text in [base.to_string(), format!("{base}[discovery]\n[build]\n")] {
            let p = parse(&text, "x.toml").unwrap();
            let d = &p.discovery;
            assert_eq!(
                (d.health_timeout_secs, d.plugin_timeout_secs),
                (60, 60),
                "{text}"
            );
            assert_eq!(p.build.timeout_secs, 120, "{text}");
        }
        for (bad, needle) in [
            (v.replace("'v (\\S+)'", "'v \\S+'"), "0 capture group(s)"),
            (v.replace("'f (\\S+)'", "'(f) (\\S+)'"), "2 capture group(s)"),
            (v.replace("'s ([0-9a-f]{64})'", "'s ('"), "is not a regex"),
            (v.replace("n.md", "../n.md"), "vendored_sdk.notice"),
            (format!("{v}candidates = [\"R/b\"]\n"), "\"R/b\""),
            (h.replace(&"a".repeat(64), &"A".repeat(64)), "not 64 lower-case hex"),
            (h.replace("refusal_contains = \"b3\"", "refusal_contains = \" \""), "must not be empty"),
            (format!("{h}[[historical_admission.archive]]\nname = \"b\"\nsha256 = \"{}\"\nreason = \"r\"\nrefusal_contains = \"c\"\n", "a".repeat(64)), "listed twice"),
        ] {
            let err = parse(&format!("{base}{bad}"), "x.toml").unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn the_pin_candidates_and_shared_owner_are_checked() {
        let base = "name = \"x\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        assert!(parse(base, "x.toml").is_ok());
        for (bad, needle) in [
            (
                base.replace("langbot-plugin==0.6.0b5", "other==1"),
                "sdk.requirement is \"other==1\"",
            ),
            (
                base.replace("langbot-plugin==0.6.0b5", "langbot-plugin=="),
                "sdk.requirement is \"langbot-plugin==\"",
            ),
            (
                base.replace("langbot-plugin==0.6.0b5", "langbot-plugin>=0.6"),
                "expected an exact pin",
            ),
            (base.replace("R/a", ""), "candidate path \"\""),
            (base.replace("R/a", "/R/a"), "candidate path \"/R/a\""),
            (base.replace("R/a", "R//a"), "candidate path \"R//a\""),
            (base.replace("R/a", "R/./a"), "candidate path \"R/./a\""),
            (base.replace("R/a", "R/../a"), "candidate path \"R/../a\""),
            (
                format!("{base}[[candidate]]\npath = \"S/a\"\n"),
                "share the folder name \"a\"",
            ),
            (
                format!("{base}[shared]\nowner = \"R/b\"\nfiles = [\"f\"]\n"),
                "shared.owner \"R/b\"",
            ),
        ] {
            let err = parse(&bad, "x.toml").unwrap_err().to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
        let shared = parse(
            &format!("{base}[shared]\nowner = \"R/a\"\nfiles = [\"f\"]\n"),
            "x.toml",
        )
        .unwrap();
        assert_eq!(shared.shared.unwrap().owner, "R/a");
    }

    #[test]
    fn load_takes_the_named_file_then_the_repositorys_then_the_builtin() {
        let repo = tempfile::tempdir().unwrap();
        let builtin = load(None, repo.path()).unwrap();
        assert!(matches!(builtin.source, ProfileSource::Builtin));
        assert_eq!(builtin.text, BUILTIN_CODING_RUNNERS);
        let text = "name = \"mine\"\n[sdk]\nrequirement = \"langbot-plugin==0.6.0b5\"\n[[candidate]]\npath = \"R/a\"\n";
        std::fs::write(repo.path().join(REPO_PROFILE_NAME), text).unwrap();
        let in_repo = load(None, repo.path()).unwrap();
        assert_eq!(in_repo.text, text);
        assert!(
            matches!(&in_repo.source, ProfileSource::File(p) if p == &repo.path().join(REPO_PROFILE_NAME))
        );
        let named = repo.path().join("other.toml");
        std::fs::write(&named, text.replace("mine", "named")).unwrap();
        let explicit = load(Some(&named), repo.path()).unwrap();
        assert!(explicit.text.contains("named"));
        let missing = repo.path().join("missing.toml");
        let err = load(Some(&missing), repo.path()).unwrap_err();
        assert!(matches!(err, ProfileError::Read { .. }), "{err}");
        assert!(err.to_string().contains("missing.toml"), "{err}");
    }

    #[test]
    fn unknown_key_is_an_error_naming_the_key() {
        let text = format!("{BUILTIN_CODING_RUNNERS}\nsurprise = 1\n");
        let err = parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("surprise"), "{err}");
        // Users have the binary, not its source tree: no path of it is named.
        assert!(!err.contains("gates/profiles"), "{err}");
        assert!(err.contains("docs/profiles.md documents each one"), "{err}");
    }

    #[test]
    fn escaping_candidate_path_is_refused() {
        let text = BUILTIN_CODING_RUNNERS.replace("Runner/codex-agent", "../codex-agent");
        let err = parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("../codex-agent"), "{err}");
    }

    #[test]
    fn candidate_tests_are_read_and_an_escaping_entry_is_refused_naming_the_key() {
        let with = |tests: &str| {
            BUILTIN_CODING_RUNNERS.replacen(
                "path = \"Runner/codex-agent\"",
                &format!("path = \"Runner/codex-agent\"\ntests = {tests}"),
                1,
            )
        };
        let p = parse(&with("[\"tests\", \"check/test_x.py\"]"), "x.toml").unwrap();
        let codex = p
            .candidates
            .iter()
            .find(|c| c.folder() == "codex-agent")
            .unwrap();
        assert_eq!(
            codex.tests.as_deref(),
            Some(&["tests".to_string(), "check/test_x.py".to_string()][..])
        );
        let acp = p
            .candidates
            .iter()
            .find(|c| c.folder() == "acp-agent-runner")
            .unwrap();
        assert_eq!(acp.tests, None);
        let none = parse(&with("[]"), "x.toml").unwrap();
        assert_eq!(
            none.candidates
                .iter()
                .find(|c| c.folder() == "codex-agent")
                .unwrap()
                .tests
                .as_deref(),
            Some(&[][..])
        );
        for bad in ["../x", "/abs", "tests/../x", "", "a//b", "./tests"] {
            let err = parse(&with(&format!("[{bad:?}]")), "x.toml")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("tests entry")
                    && err.contains(&format!("{bad:?}"))
                    && err.contains("Runner/codex-agent"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn sdk_digests_must_be_sha256_hex() {
        let p = parse(BUILTIN_CODING_RUNNERS, "built-in").unwrap();
        assert_eq!(
            p.sdk.wheel_sha256.as_deref(),
            Some("15c5a60765db34e5a0216eab205178fb06c6447d286f648008aa89207e75d667")
        );
        let upper = BUILTIN_CODING_RUNNERS.replace("15c5a607", "15C5A607");
        let err = parse(&upper, "x.toml").unwrap_err().to_string();
        assert!(
            err.contains("sdk.wheel_sha256") && err.contains("64 lowercase hex"),
            "{err}"
        );
        let short = BUILTIN_CODING_RUNNERS.replace("064f66f2305ca34b", "064f");
        let err = parse(&short, "x.toml").unwrap_err().to_string();
        assert!(err.contains("sdk.record_sha256"), "{err}");
    }
}
