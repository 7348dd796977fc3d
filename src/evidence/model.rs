//! The evidence model: one set of types that `evidence.json`, `junit.xml` and
//! the terminal summary render, and from which the JSON schema is generated.
//!
//! Stable fields of v1 (names and meaning kept; more may be added):
//! `schema_version`, `tool`, `verdict`, `source`, `sdk`, `gates[]`,
//! `candidates[]`, `sign_off`. Added since: `candidates[].verdict` (each
//! candidate's own verdict) and `gates[].candidates_left_out` (the
//! candidates a gate did not check because an earlier gate failed them).

use super::observed::Observed;
use crate::manifest::ManifestId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `evidence.json`, version 1.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Always `"1"`.
    pub schema_version: String,
    /// The harness that wrote this file.
    pub tool: Tool,
    /// Overall verdict.
    pub verdict: Verdict,
    /// RFC 3339 UTC time the run started.
    pub started_at: String,
    /// RFC 3339 UTC time the run finished.
    pub finished_at: String,
    /// The profile used.
    pub profile: ProfileRecord,
    /// Which gates were asked for.
    pub selection: Selection,
    /// The repository and exact commit under review.
    pub source: Source,
    /// The interpreter and its SDK, as observed.
    pub sdk: Sdk,
    /// Every gate of the catalogue, in run order.
    pub gates: Vec<GateRecord>,
    /// Every candidate of the profile, in profile order.
    pub candidates: Vec<CandidateRecord>,
    /// The in-toto statement written beside this file.
    pub attestation: Attestation,
    /// For evidence written by `merge`: the partition directories combined.
    #[serde(default)]
    pub merged_from: Option<Vec<MergedPart>>,
    /// Digest of every other file of the evidence directory (staging, logs,
    /// packages, extractions, roots), so the sign-off covers them too: a file
    /// changed together with a rewritten `SHA256SUMS` no longer replays clean.
    #[serde(default)]
    pub files: Option<FilesDigest>,
    /// The repository's own pytest suites as the `suites` gate ran them, once
    /// it ran.
    #[serde(default)]
    pub suites: Option<SuitesRecord>,
    /// The run's wheelhouse (DIR/wheelhouse): every file the candidates'
    /// requirements resolve to, downloaded once by the `dependencies` gate,
    /// from which every later install reads offline; once that gate ran.
    #[serde(default)]
    pub wheelhouse: Option<WheelhouseRecord>,
    /// Every signal the harness sent and every process it reaped, in the
    /// order it did so: one entry per process touched, so a reader can check
    /// that the harness never touched a process its run did not start.
    /// Empty in evidence written before this field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<SignalRecord>,
    /// A profile that groups candidates by SDK pin (`[[candidate]] sdk`):
    /// every group, the default first (this run's own `sdk` and gates),
    /// then each other one, certified by a run of its own with its own
    /// verified interpreter, whose evidence directory lies inside this one
    /// (`groups/<pin>/`). Absent for a profile with one pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_groups: Option<Vec<SdkGroupRecord>>,
    /// What the sweep before sealing removed or cut, in path order: every
    /// symlink, FIFO, socket or device found anywhere in the evidence
    /// directory, and every regular file of a private root (`roots/`) over
    /// the size cap. After sealing the directory holds only regular files
    /// and folders. Empty (absent) when the sweep found nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swept: Vec<SweptEntry>,
    /// The sign-off over everything above.
    pub sign_off: SignOff,
}

/// One SDK group of a run ([`Evidence::sdk_groups`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkGroupRecord {
    /// The group's exact pin (`langbot-plugin==0.6.1`).
    pub requirement: String,
    /// Whether it is the profile's `[sdk] requirement`, certified by this
    /// run's own gates.
    pub default: bool,
    /// Its evidence directory relative to this one (`groups/<pin>`); absent
    /// for the default group (this directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The sign-off digest of that directory's `evidence.json`; absent for
    /// the default group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_sha256: Option<String>,
    /// The group's verdict (its run's).
    pub verdict: Verdict,
    /// Warning checks of its run's required gates (for the default group:
    /// counted in this run's gates, so 0 here). A group's warnings make the
    /// run's statement `WARNED`, as the run's own do.
    #[serde(default)]
    pub warnings: u64,
    /// Its interpreter, as its `sdk-record` verified it: path, SDK version
    /// and RECORD digest (its run's `sdk`).
    pub python: String,
    /// The SDK version `sdk-record` found; absent when it did not run.
    pub version: Option<String>,
    /// sha256 of the installed RECORD; absent when `sdk-record` did not run.
    pub record_sha256: Option<String>,
    /// Its candidates (folder names) and each one's verdict in its run.
    pub candidates: Vec<SdkGroupCandidate>,
    /// Why its run left no evidence though nothing interrupted it (it could
    /// not start, or ended without sealing: killed, crashed); the group's
    /// verdict is then `fail` and `evidence` is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One candidate of an [`SdkGroupRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkGroupCandidate {
    /// Folder name (`candidates[].folder` of the group's evidence).
    pub folder: String,
    /// Its verdict in the group's run; absent when none was assigned.
    pub verdict: Option<CandidateResult>,
    /// The gate and check that stopped it there (`gate/check`), as its
    /// verdict names them; absent for a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// Its archive as the group's run recorded it (`candidates[].archive`
    /// there): path relative to the group's evidence directory, and sha256;
    /// absent when none was built. A subject of this run's statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<SdkGroupArchive>,
}

/// The archive of an [`SdkGroupCandidate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkGroupArchive {
    /// Path relative to the group's evidence directory
    /// (`packages/<folder>/<author>-<name>-<version>.lbpkg`).
    pub path: String,
    /// sha256 (lowercase hex) of the archive.
    pub sha256: String,
}

/// The digest of an evidence directory's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesDigest {
    /// Number of files covered.
    pub count: u64,
    /// sha256 hex of their `SHA256SUMS`-format listing (sorted by path), which
    /// leaves out the files written from the evidence itself:
    /// `evidence.json`, `junit.xml`, `statement.intoto.json`, `report.html`
    /// (since it was added) and `SHA256SUMS`.
    pub sha256: String,
    /// That listing, one entry per file in listing order (its lines are
    /// `<sha256>  <path>`), so `replay` can name a file that changed even
    /// when `SHA256SUMS` was rewritten to match it. Empty in evidence written
    /// before this field existed.
    #[serde(default)]
    pub entries: Vec<FileEntry>,
}

/// One file of [`FilesDigest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// `/`-separated path relative to the evidence directory.
    pub path: String,
    /// sha256 hex of the file.
    pub sha256: String,
}

/// What a [`SweptEntry`] was found to be (`lstat`'s file type; a link is
/// never followed, a FIFO never opened).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SweptKind {
    /// A symbolic link (its target read with `readlink`).
    Symlink,
    /// A named pipe: reading it blocks until a writer comes.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A block device node.
    BlockDevice,
    /// A character device node.
    CharDevice,
    /// A regular file over the size cap, cut to it.
    Oversized,
    /// A regular file with a name outside the evidence directory (its link
    /// count exceeds the names DIR holds for it): a hard link to a host
    /// file, which an upload carries as the host's bytes. Always leaves DIR.
    HardLink,
}

/// One entry the sweep before sealing found ([`Evidence::swept`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweptEntry {
    /// `/`-separated path relative to the evidence directory.
    pub path: String,
    /// What it was.
    pub kind: SweptKind,
    /// A symlink's target as stored (`readlink`), never followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Whether that target leaves the evidence directory (an absolute path
    /// outside it, `..` climbing out of it, or a path through another
    /// link, which cannot be shown to stay inside); `false` for the rest.
    #[serde(default)]
    pub leaves_dir: bool,
    /// The gate whose folder held it (`roots/<gate>/`, `logs/<gate>/`, or
    /// the folder a gate writes: `staging/` stage, `packages/` lbp-build,
    /// `extracted/` archive-members, `wheelhouse/` dependencies); absent
    /// for any other place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// The candidate folder its path names, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
    /// An oversized file's size before it was cut, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// What the sweep did: `removed`, `truncated to <bytes> bytes`, or why
    /// it could not (`not removed: <error>`).
    pub action: String,
}

/// One run combined by `merge`: a `--partition` share, or an unpartitioned
/// run beside the shares (such as `--only suites`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergedPart {
    /// The run's evidence directory.
    pub dir: String,
    /// Its `--partition K/N`; `null` for an unpartitioned run.
    pub partition: Option<crate::profile::Partition>,
    /// Its sign-off evidence digest, verified before merging.
    pub evidence_sha256: String,
    /// Ids of the gates whose merged record comes from this run (a global
    /// gate's from the first share, a per-candidate gate's from every share).
    #[serde(default)]
    pub gates: Vec<String>,
}

/// One process the harness signalled or reaped ([`Evidence::signals`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalRecord {
    /// Milliseconds since the run started (the clock of
    /// [`GateRecord::started_ms`]).
    pub at_ms: u64,
    /// What was done to the process.
    pub action: SignalAction,
    /// The process's pid (host pid namespace).
    pub pid: i32,
    /// Its start time in clock ticks after boot (`/proc/<pid>/stat` field
    /// 22): with the pid, an identity that survives pid reuse; none when it
    /// could not be read.
    pub start_time: Option<u64>,
    /// Its parent when it was signalled or reaped; none when unreadable.
    pub ppid: Option<i32>,
    /// The process group the signal was sent to as a whole (`kill(-pgid)`);
    /// none when the signal went to this process alone, or for a reap.
    pub group: Option<i32>,
    /// Its command line, arguments joined by spaces (at most 200
    /// characters; empty when it could not be read).
    pub cmdline: String,
    /// The gate the signal or reap belongs to; none outside any gate (the
    /// run's setup, the SIGTERM to the whole run when it is interrupted, the
    /// sweep before the evidence is sealed).
    pub gate: Option<String>,
    /// Why it was done.
    pub why: SignalWhy,
    /// The process descended from the run (the harness's pid, through the
    /// parent links of `/proc`) when it was signalled or reaped: the harness
    /// only ever touches its own, so `false` here is a harness defect.
    pub descends_from_run: bool,
    /// For the reap of a step the harness started (a child's leader): when
    /// it was started, in milliseconds since the run started (the clock of
    /// `at_ms`), so a step's span is `started_ms..at_ms`. Absent for a
    /// signal, for a residue reap, and in evidence written before this field
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
}

/// What the harness did to a process.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum SignalAction {
    /// Sent SIGTERM.
    #[serde(rename = "SIGTERM")]
    Term,
    /// Sent SIGKILL.
    #[serde(rename = "SIGKILL")]
    Kill,
    /// Collected its exit status (`waitpid`) after it exited.
    #[serde(rename = "reap")]
    Reap,
}

/// Why the harness signalled or reaped a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SignalWhy {
    /// A step's time limit elapsed: its process group was stopped.
    Timeout,
    /// A step's leader had exited and its process group still held members.
    AfterExit,
    /// A gate ended a child it no longer needed (a server, a worker).
    Stop,
    /// The run was interrupted (SIGINT/SIGTERM): its children were stopped.
    Interrupt,
    /// A step's leader exited on its own and was waited for.
    Exited,
    /// A residue sweep: a process of the run outlived the gates that may
    /// have started it.
    Residue,
    /// A gate's survey of the processes tied to its step.
    Survey,
}

/// The in-toto statement written with the evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attestation {
    /// Path relative to DIR: `statement.intoto.json`.
    pub statement: String,
    /// `https://in-toto.io/Statement/v1`.
    pub statement_type: String,
    /// `https://in-toto.io/attestation/test-result/v0.1`.
    pub predicate_type: String,
    /// Always false: no DSSE envelope, no signature.
    pub signed: bool,
}

/// Tool name and version.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// `verify-coding-candidates`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// Overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every required gate passed.
    Pass,
    /// A required gate failed, was blocked or was skipped.
    Fail,
    /// The run was interrupted.
    Incomplete,
}

impl Verdict {
    /// Upper-case word for the terminal.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Incomplete => "INCOMPLETE",
        }
    }
}

/// The profile used for the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileRecord {
    /// Profile `name`.
    pub name: String,
    /// `built-in` or the file path.
    pub origin: String,
    /// sha256 hex of the profile's text.
    pub sha256: String,
}

/// The gates requested.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    /// `--only` as given, if any.
    pub only: Option<Vec<String>>,
    /// Gates required for the verdict: `--only` plus prerequisites, or all.
    pub required: Vec<String>,
    /// `--partition K/N`, if given: `candidates[]` then holds this share only.
    #[serde(default)]
    pub partition: Option<crate::profile::Partition>,
    /// True when this evidence does not certify the whole commit: some gate
    /// was not run (`--only`, or a `whole` gate in a partition) or only a
    /// share of the candidates was checked (`--partition`). A partial `pass`
    /// is a developer's check or one share of a CI matrix, never a
    /// certification; `merge` combines shares into a non-partial record.
    #[serde(default)]
    pub partial: bool,
    /// Ids of catalogue gates this run did not require (and so did not run).
    #[serde(default)]
    pub gates_not_run: Vec<String>,
    /// Ids of gates the run gave nothing to observe (an input such as
    /// `--release-dir` not supplied, or a profile section absent): recorded
    /// `skipped` with the reason, not required, never a pass. They do not
    /// make a run partial: what they would prove is simply not established.
    #[serde(default)]
    pub not_applicable: Vec<String>,
}

impl Selection {
    /// Builds a selection, deriving `partial` and `gates_not_run` from
    /// `required` and the catalogue.
    pub fn new(
        only: Option<Vec<String>>,
        required: Vec<String>,
        partition: Option<crate::profile::Partition>,
    ) -> Self {
        let gates_not_run: Vec<String> = crate::catalogue::all()
            .iter()
            .filter(|g| !required.contains(&g.id))
            .map(|g| g.id.clone())
            .collect();
        let partial = partition.is_some() || !gates_not_run.is_empty();
        Self {
            only,
            required,
            partition,
            partial,
            gates_not_run,
            not_applicable: Vec::new(),
        }
    }

    /// Moves `ids` (gates skipped for lack of input, not required) from
    /// `gates_not_run` to `not_applicable`, and derives `partial` again.
    #[must_use]
    pub fn with_not_applicable(mut self, ids: Vec<String>) -> Self {
        self.gates_not_run.retain(|id| !ids.contains(id));
        self.partial = self.partition.is_some() || !self.gates_not_run.is_empty();
        self.not_applicable = ids;
        self
    }
}

/// The repository and commit under review.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Absolute path of the repository's top level.
    pub repo: String,
    /// Full commit id of `HEAD`.
    pub commit: String,
    /// Full tree id of `HEAD^{tree}`.
    pub tree: String,
    /// sha256 hex of `DIR/staging/source.tar`, once staged.
    pub archive_sha256: Option<String>,
    /// Ignored files present in the working tree (not judged, listed).
    pub ignored_files: Vec<String>,
    /// Paths carrying `export-ignore` or `export-subst`, with the attribute.
    pub export_attributes: Vec<ExportAttribute>,
    /// `remote.origin.url` of the repository, credentials removed
    /// ([`crate::origin::public_url`]); `null` without an origin or when it
    /// is a local path. The statement names the source by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Set by `--worktree`: the source is the working tree as it was, not a
    /// commit (`commit` and `tree` are then `HEAD`'s, the base the changes
    /// are relative to). `null` for a commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeSource>,
}

/// The working tree a `--worktree` run certified ([`crate::worktree`]).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorktreeSource {
    /// Always `working tree, not a commit`.
    pub label: String,
    /// sha256 hex of the sorted lines `<mode> <blob id>\t<path>\n` of the
    /// staged files ([`crate::worktree::digest`]); `null` until `stage` ran.
    pub digest: Option<String>,
    /// Files staged from the working tree; `null` until `stage` ran.
    pub files: Option<usize>,
    /// What differs from `HEAD` as `tree-clean` saw it (staged, unstaged and
    /// untracked paths), certified as they are.
    pub uncommitted: Vec<String>,
}

/// A path with a git export attribute.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportAttribute {
    /// Repository-relative path.
    pub path: String,
    /// `export-ignore` or `export-subst`.
    pub attribute: String,
}

/// The interpreter and its SDK. Unobserved facts are `null`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sdk {
    /// The profile's requirement, e.g. `langbot-plugin==0.6.0b5`.
    pub requirement: String,
    /// Installed `langbot-plugin` version.
    pub version: Option<String>,
    /// The interpreter path given (`--python` or `$PYTHON`).
    pub python: String,
    /// `sys.executable` as the interpreter reports it.
    pub executable: Option<String>,
    /// `sys.version`.
    pub python_version: Option<String>,
    /// The site-packages directory holding the SDK.
    pub site_packages: Option<String>,
    /// The SDK's dist-info directory.
    pub dist_info: Option<String>,
    /// sha256 hex of the dist-info's RECORD file.
    pub record_sha256: Option<String>,
    /// Rows in RECORD.
    pub record_rows: Option<u64>,
    /// Rows with a sha256 whose file matched (digest and size).
    pub hashed_rows_verified: Option<u64>,
    /// Rows without a hash (RECORD itself and `.pyc` only).
    pub unhashed_rows: Option<u64>,
    /// The interpreter binary with every symlink of `python` resolved.
    #[serde(default)]
    pub interpreter_target: Option<String>,
    /// sha256 (hex) of `interpreter_target`, hashed by the verifier.
    #[serde(default)]
    pub interpreter_sha256: Option<String>,
    /// `sys.prefix` as every `python -I` start sets it (the venv).
    #[serde(default)]
    pub prefix: Option<String>,
    /// `sys.base_prefix`: the base interpreter's installation, whose
    /// standard library is on every `sys.path`.
    #[serde(default)]
    pub base_prefix: Option<String>,
    /// The site directories `site` processes at every `python -I` start.
    #[serde(default)]
    pub site_dirs: Option<Vec<String>>,
    /// Distributions (dist-info directories) found in them.
    #[serde(default)]
    pub environment_distributions: Option<u64>,
    /// Files there that a distribution's RECORD row verified (sha256, size).
    #[serde(default)]
    pub environment_files_verified: Option<u64>,
    /// Every `.pth` file and start-up module (`sitecustomize`,
    /// `usercustomize`) found, each `path (owned by <dist-info>)` or
    /// `path (owned by no verified RECORD)`.
    #[serde(default)]
    pub startup_files: Option<Vec<String>>,
}

/// A gate's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateResult {
    /// Every check passed.
    Pass,
    /// At least one check failed.
    Fail,
    /// Not run; `reason` says why.
    Skipped,
    /// Not run because a prerequisite did not pass; `reason` names it.
    Blocked,
}

impl GateResult {
    /// Lower-case word.
    pub fn word(self) -> &'static str {
        match self {
            GateResult::Pass => "pass",
            GateResult::Fail => "fail",
            GateResult::Skipped => "skipped",
            GateResult::Blocked => "blocked",
        }
    }
}

/// One gate of the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateRecord {
    /// Stable kebab-case id.
    pub id: String,
    /// Result.
    pub result: GateResult,
    /// Why a gate was skipped or blocked, or a one-line failure summary.
    pub reason: Option<String>,
    /// One line summarising what a passing gate observed that a reader should
    /// see first (the isolation backend, the network namespace), if any.
    #[serde(default)]
    pub note: Option<String>,
    /// Catalogue text: what a pass proves.
    pub proves: String,
    /// Catalogue text: what a pass does not prove.
    pub does_not_prove: String,
    /// Whether the verdict depends on this gate.
    pub required: bool,
    /// Wall-clock time, in milliseconds.
    pub duration_ms: u64,
    /// When the gate started, in milliseconds since the run started (the
    /// clock of [`SignalRecord::at_ms`]; with `duration_ms`, which gates ran
    /// at the same time and which signals fell inside the gate); absent for a
    /// gate that did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// Candidate folders this gate did not check, because an earlier gate it
    /// requires, directly or not, failed for them (a failing check naming the
    /// candidate): the gate ran for the other candidates only, and its
    /// result speaks for those. Empty (left out of the file) when it checked
    /// every candidate of the run, or did not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates_left_out: Vec<String>,
    /// The checks, in the order they ran.
    pub checks: Vec<Check>,
}

/// A check's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckResult {
    /// Held.
    Pass,
    /// Did not hold: `detail` says what was expected, what was found, what to do.
    Fail,
    /// Held, with a finding a reviewer should read; does not fail the gate.
    Warn,
}

/// One check of a gate. A passing check carries the observed values it rests
/// on: the schema refuses a `pass` whose `observed` is missing, null, or an
/// empty object, array or string.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("if" = {"properties": {"result": {"const": "pass"}}, "required": ["result"]}))]
#[schemars(extend("then" = {
    "required": ["observed"],
    "properties": {"observed": {"not": {"anyOf": [
        {"type": "null"}, {"const": {}}, {"const": []}, {"const": ""}
    ]}}}
}))]
pub struct Check {
    /// Property checked (`record-rows`, `single-archive`, ...).
    pub name: String,
    /// Candidate folder, for per-candidate checks.
    pub candidate: Option<String>,
    /// Result.
    pub result: CheckResult,
    /// A sentence: what held, or what was expected, found and what to do.
    pub detail: String,
    /// Observed values backing the result.
    pub observed: Option<Observed>,
    /// The `name` of the check (same gate; same candidate, or a gate-wide
    /// check without one) whose finding made this one impossible to
    /// establish: this check is a consequence of that finding, reported under
    /// it, not a separate cause. Absent: a finding of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consequence_of: Option<String>,
}

impl Check {
    /// A passing check.
    pub fn pass(name: &str, candidate: Option<&str>, detail: impl Into<String>) -> Self {
        Self::new(name, candidate, CheckResult::Pass, detail.into())
    }

    /// A failing check.
    pub fn fail(name: &str, candidate: Option<&str>, detail: impl Into<String>) -> Self {
        Self::new(name, candidate, CheckResult::Fail, detail.into())
    }

    /// A warning.
    pub fn warn(name: &str, candidate: Option<&str>, detail: impl Into<String>) -> Self {
        Self::new(name, candidate, CheckResult::Warn, detail.into())
    }

    /// Pass when `ok`, else fail, with one detail text.
    pub fn from_bool(
        name: &str,
        candidate: Option<&str>,
        ok: bool,
        detail: impl Into<String>,
    ) -> Self {
        let result = if ok {
            CheckResult::Pass
        } else {
            CheckResult::Fail
        };
        Self::new(name, candidate, result, detail.into())
    }

    fn new(name: &str, candidate: Option<&str>, result: CheckResult, detail: String) -> Self {
        Self {
            name: name.into(),
            candidate: candidate.map(Into::into),
            result,
            detail,
            observed: None,
            consequence_of: None,
        }
    }

    /// Marks this check a consequence of check `root` (see
    /// [`Check::consequence_of`]).
    #[must_use]
    pub fn consequence_of(mut self, root: &str) -> Self {
        self.consequence_of = Some(root.into());
        self
    }

    /// Attaches observed values.
    pub fn with_observed(mut self, observed: serde_json::Value) -> Self {
        self.observed = Some(observed.into());
        self
    }
}

/// One candidate plugin.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidateRecord {
    /// Folder name (last path component), keys DIR/packages and DIR/extracted.
    pub folder: String,
    /// Repository-relative path.
    pub path: String,
    /// Manifest identity, once read from the staged source.
    pub manifest: Option<ManifestId>,
    /// The built archive, once built and inspected.
    pub archive: Option<ArchiveRecord>,
    /// Host admission of the archive by the SDK (`admission` gate), once run.
    #[serde(default)]
    pub admission: Option<AdmissionRecord>,
    /// The SDK's dependency environment for the archive (`dependencies`
    /// gate), once run.
    #[serde(default)]
    pub dependencies: Option<DependencyRecord>,
    /// What the SDK runtime did with the archive over RPC (`discovery-rpc`
    /// gate), once run.
    #[serde(default)]
    pub discovery: Option<DiscoveryRecord>,
    /// The candidate's own verdict over the run's required gates, set once
    /// every gate ended (how it is read: `src/evidence/verdicts.rs`); absent
    /// in evidence written before this field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<CandidateVerdict>,
    /// The exact SDK pin of the group the candidate was certified in
    /// ([`Evidence::sdk_groups`]); absent for a profile with one pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_group: Option<String>,
    /// Which SDK version the candidate was certified under, and why; absent
    /// in evidence written before this field existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_choice: Option<SdkChoice>,
    /// The manifest's runtime claims and the placement certified for them
    /// (`placement` gate), once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementRecord>,
}

/// Which SDK version a candidate was certified under, and why: its
/// `langbot-plugin` requirement resolved as the installer resolves it today
/// (`src/provision/resolve.rs`), compared with the run's pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkChoice {
    /// The SDK version the candidate was certified under (its group's pin).
    pub sdk: String,
    /// Its `langbot-plugin` requirement line; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement: Option<String>,
    /// The version that requirement resolves to today; absent when it could
    /// not be resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Where `resolved` came from: `pin`, `index`, `offline` (the newest
    /// carried version accepted), or `unresolved`.
    pub source: String,
    /// One line: why, e.g. "unpinned: pip installs 0.7.18 today".
    pub reason: String,
}

/// Where a candidate may run: its own worker, or a worker shared by several
/// installations of one archive digest (SDK 0.7 `SharedPluginWorkerRuntime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// One worker per installation, as every SDK allows.
    Dedicated,
    /// One worker per archive digest, a slot per installation: needs the
    /// stateless-v1 contract proven and, in the host, a signed envelope.
    SharedRuntimeV1,
}

impl Placement {
    /// The word used in evidence, summaries and the statement.
    pub fn word(self) -> &'static str {
        match self {
            Placement::Dedicated => "dedicated",
            Placement::SharedRuntimeV1 => "shared-runtime-v1",
        }
    }
}

/// A candidate's placement (`candidates[].placement`): what its manifest
/// claims, what backs or refutes the claim, and what was certified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlacementRecord {
    /// `execution.sharedRuntime` as written (absent: no claim).
    pub shared_runtime: Option<String>,
    /// `execution.componentModel` as written.
    pub component_model: Option<String>,
    /// The placement the manifest asks for.
    pub claimed: Placement,
    /// The placement certified; absent when the claim could not be
    /// certified (the `placement` gate's `shared-claim` check failed).
    pub certified: Option<Placement>,
    /// Whether the candidate's verified SDK has a shared runtime
    /// (`SharedPluginWorkerRuntime` and `PluginExecutionMode.SHARED_CERTIFIED`).
    pub sdk_shared_runtime: bool,
    /// The `shared-runtime` gate's outcome for this candidate, one line
    /// (`passed`, `not run: ...`, `failed: ...`).
    pub shared_runtime_gate: String,
    /// Why the claim could not be certified, one line per cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// One candidate's verdict: `pass` when every required gate passed for it,
/// else the first required gate, in catalogue order, that did not, and the
/// check that stopped it there. The run's own `verdict` is unchanged by it:
/// any failure fails the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidateVerdict {
    /// The result for this candidate.
    pub result: CandidateResult,
    /// The gate that stopped it (absent for a pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// The failing check of that gate (`checks[].name`): the candidate's own
    /// for `fail`, a gate-wide one for `not-certified`; absent when the gate
    /// did not run (blocked, interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// One line: why, for a result other than `pass`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A candidate's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateResult {
    /// Every required gate passed for this candidate (its checks passed and
    /// no gate-wide check failed).
    Pass,
    /// A check naming this candidate failed; the gates after it that need
    /// that gate did not check it.
    Fail,
    /// No check of its own failed, but a required gate did not pass for
    /// every candidate (a gate-wide check failed, or the gate was blocked or
    /// interrupted): nothing certifies it.
    NotCertified,
}

impl CandidateResult {
    /// Lower-case words, as in `evidence.json`.
    pub fn word(self) -> &'static str {
        match self {
            CandidateResult::Pass => "pass",
            CandidateResult::Fail => "fail",
            CandidateResult::NotCertified => "not-certified",
        }
    }
}

/// What the genuine SDK runtime (`python -m langbot_plugin.cli rt`) did with
/// one archive over its WebSocket control protocol (`discovery-rpc` gate).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryRecord {
    /// The installation binding's `installation_uuid` (random per run).
    pub installation_uuid: String,
    /// The binding's `artifact_digest`: the archive's sha256, as sent.
    pub artifact_digest: String,
    /// sha256 hex of the bytes uploaded in `__file_chunk`s, computed while
    /// streaming them; `null` when the upload did not complete.
    pub uploaded_sha256: Option<String>,
    /// The plugin's `status` in `list_plugins` (`initialized` on success);
    /// `null` when the runtime never listed it.
    pub status: Option<String>,
    /// Components `list_plugins` reports, as `Kind/name`, sorted.
    pub components: Vec<String>,
    /// One entry per Runner component probed with `run_runner`.
    pub runners: Vec<RunnerReplyRecord>,
    /// One entry per Tool, Command, EventListener and KnowledgeEngine
    /// component: the host action that exercised it through the runtime, its
    /// input, and its reply or error, labelled by origin; or why it was
    /// listed and not called.
    #[serde(default)]
    pub component_calls: Vec<ComponentCallRecord>,
    /// Why the plugin did not initialize, with the runtime's message.
    pub failure: Option<String>,
}

/// One `run_runner` probe. The reply is a local protocol fixture, never a
/// vendor call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunnerReplyRecord {
    /// `runner_name`.
    pub runner: String,
    /// The `type` of every streamed result, in order (`run.completed`, ...).
    pub result_types: Vec<String>,
    /// The assistant message of `run.completed`, if any.
    pub reply: Option<String>,
    /// The request's error or the run's failure, if any.
    pub error: Option<String>,
    /// Always `local protocol fixture, not a vendor call`.
    pub label: String,
    /// The fixture the probe pointed the runner at (`builtin:NAME` or a path
    /// in the commit); absent for a generic call (no probe declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<String>,
    /// The fixture program's sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture_sha256: Option<String>,
    /// The negative control (the invalid invocation config): its streamed
    /// result types, which must end in `run.failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative_control_result_types: Option<Vec<String>>,
    /// The negative control's failure as the runner reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative_control_error: Option<String>,
}

/// One non-Runner component exercised through the runtime by
/// `discovery-rpc` (or listed and not called).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentCallRecord {
    /// `Kind/name` (`Tool/echo`, ...).
    pub component: String,
    /// The host action sent to the runtime (`call_tool`, `execute_command`,
    /// `emit_event`, `retrieve_knowledge`); absent when not called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Where the input came from: `profile` (`[[discovery.component_probe]]`)
    /// or `declared` (derived from the component's own declaration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_source: Option<String>,
    /// The input sent (tool parameters, command text, event, query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// `reply` (the component answered), `component-error` (the component's
    /// own error, a warning), `protocol-error` (the call itself failed),
    /// `no-reply` (answered without a reply) or `not-called`.
    pub outcome: String,
    /// The component's reply, as the runtime relayed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<serde_json::Value>,
    /// The error, as the runtime relayed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it was not called, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_called: Option<String>,
}

/// What the SDK's host-side admission did with one archive
/// (`langbot_plugin.runtime.plugin.artifact.PluginArtifactStore.install_package`
/// and the `langbot-plugin` requirement check of
/// `dependency_environment.PluginDependencyEnvironmentStore`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdmissionRecord {
    /// Whether the artifact store accepted the exact archive bytes.
    pub accepted: bool,
    /// The SDK's refusal (`ExceptionType: message`), when it refused.
    pub refusal: Option<String>,
    /// Contents of the artifact's `.verified-sha256` marker, when accepted.
    pub marker: Option<String>,
    /// The artifact store's read-only code directory, relative to DIR
    /// (`roots/admission/<folder>/data/artifacts/sha256/<sha256>/code`).
    pub code_dir: Option<String>,
    /// The installed SDK version both decisions were taken against.
    pub installed_sdk_version: String,
    /// Every `langbot-plugin` line of the archive's `requirements.txt`.
    pub sdk_requirements: Vec<SdkRequirementRecord>,
}

/// One `langbot-plugin` requirement line and the two decisions on it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkRequirementRecord {
    /// 1-based line number in `requirements.txt`.
    pub line: u64,
    /// The line, stripped, as the SDK reads it.
    pub requirement: String,
    /// The harness's decision (PEP 508/440 in Rust, pre-releases allowed).
    pub decision: RequirementDecision,
    /// The SDK's decision: `accepted`, `refused: <ExceptionType: message>`
    /// (its own refusal), or `undecided: its check raised <ExceptionType:
    /// message>` (any other exception: no decision was observed).
    pub sdk_decision: String,
}

/// The harness's decision on a `langbot-plugin` requirement against the
/// installed SDK version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RequirementDecision {
    /// The PEP 440 specifier contains the installed version (or is empty).
    Satisfied,
    /// The specifier excludes the installed version.
    NotSatisfied,
    /// Its environment marker is false here, so it does not apply.
    MarkerExcludes,
    /// A direct URL, which the runtime-provided SDK cannot be.
    DirectUrl,
}

/// The SDK's dependency environment for one archive, prepared twice.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DependencyRecord {
    /// The environment digest each preparation returned, in run order.
    pub digests: Vec<String>,
    /// The environment directory, relative to DIR.
    pub environment: Option<String>,
    /// The runtime profile of the preparation (`oss_dev`).
    pub runtime_profile: String,
    /// The SDK's runtime fingerprint (Python tag and version, profile, SDK
    /// version, installer schema), sha256 hex.
    pub runtime_fingerprint: Option<String>,
    /// sha256 hex of the archive's `requirements.txt` bytes, as the SDK computed it.
    pub requirements_digest: Option<String>,
    /// Requirements left for the installer after the SDK dropped its own pin.
    pub requirements: Vec<String>,
    /// Distributions found in the environment (from their dist-info `METADATA`).
    pub installed: Vec<InstalledDistribution>,
    /// True when the environment holds no distribution at all.
    pub nothing_installed: bool,
    /// The wheelhouse files the installed distributions came from (matched
    /// by PEP 503 name and version), sorted.
    #[serde(default)]
    pub wheelhouse_files: Vec<String>,
}

/// DIR/wheelhouse: what the `dependencies` gate downloaded from the package
/// index, once per distinct requirement set, and the PEP 503 simple index it
/// wrote over those files. Every later install (the gate's own SDK
/// preparations, the runtime in `discovery-rpc`) gets
/// `LANGBOT_PLUGIN_PYPI_INDEX_URL=file://<DIR>/wheelhouse/simple/` and no
/// network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WheelhouseRecord {
    /// The folder holding the files, relative to DIR (`wheelhouse`).
    pub dir: String,
    /// The PEP 503 simple index, relative to DIR (`wheelhouse/simple/`):
    /// `index.html` and one `<normalized-name>/index.html` per project, each
    /// link carrying a `#sha256=` fragment.
    pub index: String,
    /// The package index the files were downloaded from.
    pub upstream_index: String,
    /// One `pip wheel` run per distinct requirement set, in run order; none
    /// when no candidate names a requirement beyond the SDK.
    pub downloads: Vec<WheelhouseDownload>,
    /// Every file of the wheelhouse, sorted by name.
    pub files: Vec<WheelhouseFile>,
    /// The profile's `[dependencies] allow_source_builds`: the projects that
    /// may be built here from their sdist. Empty in evidence written before
    /// this field existed.
    #[serde(default)]
    pub allow_source_builds: Vec<String>,
}

/// One `pip wheel` run of the verified interpreter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WheelhouseDownload {
    /// The candidates whose requirements these are.
    pub candidates: Vec<String>,
    /// The requirements, as the SDK keeps them (its own pin dropped).
    pub requirements: Vec<String>,
    /// Whether pip downloaded (or built) a wheel for every requirement and
    /// everything they depend on.
    pub ok: bool,
    /// The files this run produced (names in the wheelhouse), sorted.
    pub files: Vec<String>,
    /// Wall-clock duration of the run, in milliseconds.
    pub duration_ms: u64,
    /// Log stem relative to DIR (`.stdout`/`.stderr`/`.cmd` appended).
    pub log: String,
    /// Why it failed, when it did.
    pub failure: Option<WheelhouseFailure>,
    /// Where each file of this run came from, per pip's installation report
    /// (`pip install --dry-run --report`): one entry per file, sorted by file
    /// name. Empty in evidence written before this field existed.
    #[serde(default)]
    pub sources: Vec<WheelSource>,
    /// Log stem of the resolution (`pip install --dry-run --report`),
    /// relative to DIR; `log` is then the download's (`pip wheel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_log: Option<String>,
    /// The sandbox both pip steps ran in (pip and any build code it runs
    /// are the code under review's dependencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::sandbox::SandboxRecord>,
    /// What each sandboxed pip step (`resolve`, `download`) left running in
    /// its sandbox when pip exited; empty when unconfined (or in evidence
    /// written before this field existed).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub left_running: std::collections::BTreeMap<String, super::sandbox::LeftRunning>,
}

/// Where one wheelhouse file came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WheelSource {
    /// File name in DIR/wheelhouse.
    pub file: String,
    /// PEP 503 normalized project name (pip's report).
    pub project: String,
    /// Version (pip's report).
    pub version: String,
    /// How the file came to be.
    pub provenance: Provenance,
    /// The URL pip fetched: the wheel itself (`downloaded`) or the sdist it
    /// built the wheel from (`built-from-sdist`), as pip's report names it
    /// (`download_info.url`).
    pub url: String,
    /// The sha256 the index published for that URL
    /// (`download_info.archive_info.hashes.sha256`); pip checked the
    /// download against it (`--require-hashes`). For `downloaded`, the file
    /// in DIR/wheelhouse has exactly this sha256.
    pub published_sha256: String,
    /// For `built-from-sdist`: the log stem (relative to DIR) of the `pip
    /// wheel` run that built it (`.stdout` holds the build output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_log: Option<String>,
}

/// How a wheelhouse file came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// A wheel downloaded, byte for byte, from the index.
    Downloaded,
    /// A wheel built here from an sdist downloaded from the index (its build
    /// code ran here, in the sandbox); only for projects the profile allows.
    BuiltFromSdist,
}

/// A failed `pip wheel` run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WheelhouseFailure {
    /// `exit status 1`, `timed out and was stopped`, or why it could not run.
    pub status: String,
    /// The requirement pip names in its error, when it names one.
    pub requirement: Option<String>,
    /// pip's last lines.
    pub pip_tail: String,
    /// When the failing requirement has no wheel on the index: the sdists
    /// pip skipped for it (URLs), which the profile does not allow building.
    #[serde(default)]
    pub sdists: Vec<String>,
}

/// One file of the wheelhouse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WheelhouseFile {
    /// File name (in DIR/wheelhouse).
    pub name: String,
    /// PEP 503 normalized project name, from the wheel file name.
    pub project: String,
    /// Version, from the wheel file name.
    pub version: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 hex.
    pub sha256: String,
}

/// One distribution in a dependency environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstalledDistribution {
    /// `Name` from METADATA.
    pub name: String,
    /// `Version` from METADATA.
    pub version: String,
}

/// A built `.lbpkg` archive.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveRecord {
    /// Path relative to DIR, `/`-separated.
    pub path: String,
    /// sha256 hex of the whole file.
    pub sha256: String,
    /// File size in bytes.
    pub size: u64,
    /// sha256 hex over the sorted lines `name\0size\0sha256\n` of every member:
    /// stable across rebuilds, unlike the file (the build stamps the clock
    /// into `manifest.yaml`'s ZIP header).
    pub content_digest: String,
    /// Members in archive order.
    pub members: Vec<MemberRecord>,
    /// Path of the exact extraction, relative to DIR.
    pub extracted: Option<String>,
    /// The SDK's `normalized_zip_digest` of the archive (sha256 hex of the
    /// file with its ZIP comment removed: SDK 0.7.18
    /// `langbot_plugin/certification.py`), the digest a certification
    /// envelope signs; set by the `placement` gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized_zip_digest: Option<String>,
}

/// One archive member.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberRecord {
    /// Member name as stored.
    pub name: String,
    /// sha256 hex of the uncompressed bytes.
    pub sha256: String,
    /// Uncompressed size in bytes.
    pub size: u64,
    /// Unix mode from the external attributes, octal text (`0644`), if any.
    pub mode: Option<String>,
}

/// The sign-off block.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignOff {
    /// Same as the top-level verdict.
    pub verdict: Verdict,
    /// sha256 hex of the canonical evidence without `sign_off`: the document
    /// parsed, `sign_off` removed, keys sorted, serialised compactly
    /// (see `evidence::canonical_digest`).
    pub evidence_sha256: String,
    /// `--sign-off-by NAME`, if given.
    pub signed_off_by: Option<String>,
    /// Always false: the harness never signs an archive.
    pub archives_signed: bool,
}

/// The `suites` gate: the repository's own pytest suites, run with the
/// genuine interpreter (`python -I`, one process calling `pytest.main`) once
/// per [`SuiteRun`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuitesRecord {
    /// pytest paths as the profile names them (`[suites] paths`), relative to
    /// the repository root.
    pub paths: Vec<String>,
    /// Files the profile marks historical: excluded from discovery, never collected.
    pub historical: Vec<String>,
    /// The variable pointing the suites at the candidates' extractions
    /// (`CODING_RUNNER_SOURCE_ROOT`).
    pub source_root_env: String,
    /// The pytest configuration file passed with `-c`, relative to the
    /// repository root; `null`: an empty private one.
    pub config: Option<String>,
    /// `pytest.__version__`, as the collection probe reported it.
    pub pytest_version: Option<String>,
    /// The runs, `tree` first, then `extracted` (one after the other), then
    /// each tested candidate's own runs, `<folder>/tree` then
    /// `<folder>/extracted` (its folder's copy, then its extraction's).
    pub runs: Vec<SuiteRun>,
}

/// One pytest run of the suites.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteRun {
    /// `tree` (a private copy of the committed tree) or `extracted` (the same,
    /// with the source-root variable set to DIR/extracted); a candidate's own
    /// runs `<folder>/tree` (a private copy of its committed folder) and
    /// `<folder>/extracted` (of DIR/extracted/<folder>).
    pub name: String,
    /// Working directory and pytest rootdir, relative to DIR
    /// (`roots/suites/<name>/source`, a copy of DIR/staging/source).
    pub cwd: String,
    /// Value given to the source-root variable, relative to DIR
    /// (`extracted`); `null`: the variable was unset.
    pub source_root: Option<String>,
    /// Test items the run collected, as it recorded them at the end of its
    /// collection (`logs/suites/<name>-collection.json`).
    pub collected: u64,
    /// pytest's exit status; `null` when it was stopped (timeout, signal).
    pub exit_code: Option<i32>,
    /// The time limit elapsed and the run's process group was stopped.
    pub timed_out: bool,
    /// The run's JUnit report, relative to DIR (`logs/suites/<name>.xml`),
    /// when pytest wrote one.
    pub junit: Option<String>,
    /// Outcomes counted from the JUnit report.
    pub counts: SuiteCounts,
    /// Every testcase of the JUnit report, in report order.
    pub testcases: Vec<SuiteTestCase>,
    /// Test ids (`classname::name`) that failed in this run and passed in
    /// one of its reruns (`[suites] retries`): flaky, counted as passed
    /// and reported as a warning (`<name>/reruns`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
    /// The reruns of the tests this run failed, in order (`<name>-rerun-<k>`,
    /// each of the node ids still failing before it); empty when none was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<SuiteRun>,
}

/// Outcome counts of one run. `tests` is the sum of the others; a strict
/// xfail is counted in `xfailed`, never in `passed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteCounts {
    /// Testcases in the JUnit report.
    pub tests: u64,
    /// Passed, and not an xfail that passed.
    pub passed: u64,
    /// Failed (a strict XPASS is counted in `xpassed_strict` instead).
    pub failed: u64,
    /// Errors in setup, teardown or collection.
    pub errors: u64,
    /// Skipped (not xfail).
    pub skipped: u64,
    /// Expected failures (`xfail`): reported by pytest as skipped with type `pytest.xfail`.
    pub xfailed: u64,
    /// Non-strict xfail tests that passed (reported by pytest as plain passes).
    pub xpassed: u64,
    /// Strict xfail tests that passed (`[XPASS(strict)]`): failures.
    pub xpassed_strict: u64,
}

/// The outcome of one pytest testcase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteOutcome {
    /// Passed.
    Passed,
    /// Failed.
    Failed,
    /// Error in setup, teardown or collection.
    Error,
    /// Skipped.
    Skipped,
    /// Expected failure (xfail), never a pass.
    Xfailed,
    /// A non-strict xfail test that passed.
    Xpassed,
    /// A strict xfail test that passed: a failure.
    XpassedStrict,
}

/// One pytest testcase, as its JUnit report recorded it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteTestCase {
    /// pytest's `classname` (the test file as a dotted path, plus any class).
    pub classname: String,
    /// pytest's `name` (the test function, with parameters).
    pub name: String,
    /// The outcome.
    pub outcome: SuiteOutcome,
    /// The `message` of the failure, error or skip element.
    pub message: Option<String>,
    /// The element's text (traceback, skip location), first 8 KiB.
    pub text: Option<String>,
    /// pytest's `time`, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// The check of `gate` that `check` is a consequence of: the one its
/// [`Check::consequence_of`] names, with the same candidate or gate-wide
/// (no candidate), which did not pass and is not itself a consequence. `None` when `check` is a finding of its own, or when that root is
/// absent or passed (the views then show `check` as a finding of its own, so
/// nothing is hidden under a root nobody sees).
pub fn root_of<'a>(gate: &'a GateRecord, check: &Check) -> Option<&'a Check> {
    let root = check.consequence_of.as_deref()?;
    gate.checks.iter().find(|c| {
        c.name == root
            && (c.candidate == check.candidate || c.candidate.is_none())
            && c.result != CheckResult::Pass
            && c.consequence_of.is_none()
    })
}

/// The checks of `gate` reported under `root` (those whose [`root_of`] is
/// `root`), in order.
pub fn consequences_of<'a>(gate: &'a GateRecord, root: &'a Check) -> Vec<&'a Check> {
    gate.checks
        .iter()
        .filter(|c| root_of(gate, c).is_some_and(|r| std::ptr::eq(r, root)))
        .collect()
}
