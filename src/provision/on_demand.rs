//! Lock lists made on demand: an SDK version the verifier carries no lock
//! list for (`gates/profiles/sdk/`) is locked from the package index the
//! first time it is needed, and the lock is cached beside the provisioned
//! interpreters (`<cache>/verify-coding-candidates/sdk/locks/`) and reused.
//! The carried locks stay the offline fast path.
//!
//! A lock made here holds what a carried one holds (see
//! [`super::builtin::BuiltinSdk`]):
//!
//! - `langbot-plugin-V.lock`: the full dependency set pip resolves for
//!   `langbot-plugin==V` and the suites' pytest and pytest-asyncio (the
//!   versions the newest carried lock pins), `pip install --dry-run
//!   --ignore-installed --only-binary :all: --report`, every wheel with the
//!   sha256 the index publishes, in the lock-list format
//!   ([`super::lock_list`]);
//! - `langbot-plugin-V.records`: every locked wheel's RECORD, normalised
//!   ([`super::wheel_records`]), computed here from the wheels downloaded
//!   with `pip download --require-hashes` and checked again against their
//!   locked sha256 before they are read;
//! - `langbot_plugin-V.RECORD`: the SDK wheel's own RECORD, byte for byte;
//! - `langbot-plugin-V.pip-report.json`: pip's report, kept.
//!
//! The `.lock` file is renamed into place last: a lock is complete once it
//! exists. Trust: an on-demand lock is what the index published when it was
//! made; later runs are held to it exactly as to a carried lock.

use super::lock_list::{self, LockList};
use super::wheel_records::{self, normalised_rows, render_line, RecordSide, WheelRecord};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A lock list's files, carried or made on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkFiles {
    /// The exact requirement (`langbot-plugin==0.7.4`).
    pub requirement: String,
    /// Where the lock list is, for messages.
    pub lock_label: String,
    /// The lock list's text.
    pub lock: String,
    /// The SDK wheel's own RECORD.
    pub wheel_record: String,
    /// The records file's text.
    pub wheel_records: String,
    /// Where the records file is, for messages.
    pub records_label: String,
}

impl SdkFiles {
    fn of_builtin(b: &super::builtin::BuiltinSdk) -> SdkFiles {
        SdkFiles {
            requirement: b.requirement.into(),
            lock_label: b.lock_label.into(),
            lock: b.lock.into(),
            wheel_record: b.wheel_record.into(),
            wheel_records: b.wheel_records.into(),
            records_label: b.records_label.into(),
        }
    }
}

/// `<cache>/verify-coding-candidates/sdk/locks`.
///
/// # Errors
/// As [`super::cache::sdk_root`].
pub fn locks_dir() -> Result<PathBuf, String> {
    Ok(super::cache::sdk_root()?.join("locks"))
}

/// The version of an exact `langbot-plugin==V` requirement.
fn version_of(requirement: &str) -> Option<String> {
    let squeezed: String = requirement.split_whitespace().collect();
    let (name, v) = squeezed.split_once("==")?;
    (lock_list::normalize_name(name) == super::resolve::SDK && !v.is_empty()).then(|| v.to_string())
}

/// The file names of version `v`'s lock in [`locks_dir`]:
/// `(lock, records, RECORD, report)`.
pub fn file_names(v: &str) -> [String; 4] {
    [
        format!("langbot-plugin-{v}.lock"),
        format!("langbot-plugin-{v}.records"),
        format!("langbot_plugin-{v}.RECORD"),
        format!("langbot-plugin-{v}.pip-report.json"),
    ]
}

/// The files of `requirement`: carried, else made on demand earlier and
/// found in `dir`.
pub fn files_in(dir: &Path, requirement: &str) -> Option<SdkFiles> {
    if let Some(b) = super::builtin::for_requirement(requirement) {
        return Some(SdkFiles::of_builtin(b));
    }
    let v = version_of(requirement)?;
    let [lock, records, record, _] = file_names(&v);
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    Some(SdkFiles {
        requirement: format!("{}=={v}", super::resolve::SDK),
        lock_label: dir.join(&lock).display().to_string(),
        lock: read(&lock)?,
        wheel_record: read(&record)?,
        wheel_records: read(&records)?,
        records_label: dir.join(&records).display().to_string(),
    })
}

/// [`files_in`] the user's [`locks_dir`].
pub fn files_for(requirement: &str) -> Option<SdkFiles> {
    if let Some(b) = super::builtin::for_requirement(requirement) {
        return Some(SdkFiles::of_builtin(b));
    }
    files_in(&locks_dir().ok()?, requirement)
}

/// Every lock the verifier knows: the carried ones, then those made on
/// demand in the user's cache.
pub fn all_files() -> Vec<SdkFiles> {
    let mut out: Vec<SdkFiles> = super::builtin::SDKS
        .iter()
        .map(SdkFiles::of_builtin)
        .collect();
    let Ok(dir) = locks_dir() else { return out };
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let Some(v) = name
            .strip_prefix("langbot-plugin-")
            .and_then(|n| n.strip_suffix(".lock"))
        else {
            continue;
        };
        let req = format!("{}=={v}", super::resolve::SDK);
        if super::builtin::for_requirement(&req).is_none() {
            out.extend(files_in(&dir, &req));
        }
    }
    out
}

/// The pytest and pytest-asyncio pins every lock adds (the suites gate runs
/// them), as the newest carried lock pins them.
fn test_pins() -> Vec<String> {
    let newest = super::builtin::SDKS.last().expect("a carried SDK");
    let lock = lock_list::parse(newest.lock, newest.lock_label).expect("a carried lock parses");
    ["pytest", "pytest-asyncio"]
        .iter()
        .filter_map(|n| lock.find(n))
        .map(|e| format!("{}=={}", e.name, e.version))
        .collect()
}

/// The lock-list text of pip's installation `report`, made by `command` from
/// `index_url`: the interpreter from the report's `environment`, one line
/// per wheel with the index's sha256.
///
/// # Errors
/// A sentence when the report is not one, an item is not a wheel from the
/// index, or has no sha256.
pub fn lock_from_report(
    report: &str,
    requirement: &str,
    command: &str,
    index_url: &str,
) -> Result<String, String> {
    let r: serde_json::Value =
        serde_json::from_str(report).map_err(|e| format!("pip's report is not JSON ({e})"))?;
    let env = &r["environment"];
    let text = |v: &serde_json::Value, what: &str| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("pip's report has no {what}"))
    };
    let implementation = text(
        &env["implementation_name"],
        "environment.implementation_name",
    )?;
    if implementation != "cpython" {
        return Err(format!(
            "pip's report is for {implementation}; expected CPython (the lock's `# python: cp3NN`)"
        ));
    }
    let python_version = text(&env["python_version"], "environment.python_version")?;
    let tag = format!("cp{}", python_version.replace('.', ""));
    let sys = text(&env["sys_platform"], "environment.sys_platform")?;
    let machine = text(&env["platform_machine"], "environment.platform_machine")?;
    let mut out = format!(
        "# Lock list of the SDK interpreter for {requirement} (with pytest and pytest-asyncio, which the suites gate runs).\n\
         # Made on demand by verify-coding-candidates with pip's resolver report from {index_url}:\n\
         #   {command}\n\
         # on CPython {} ({implementation}), {sys} {machine}; every line is one wheel: name==version, its sha256 and its file name.\n\
         # The verifier installs exactly these with `pip install --require-hashes --only-binary :all: --no-deps`.\n\
         # python: {tag}\n\
         # platform: {sys} {machine}\n",
        env["python_full_version"].as_str().unwrap_or(&python_version),
    );
    let items = r["install"]
        .as_array()
        .ok_or("pip's report has no `install` list")?;
    for item in items {
        let name = text(&item["metadata"]["name"], "metadata.name")?;
        let version = text(&item["metadata"]["version"], "metadata.version")?;
        let url = text(&item["download_info"]["url"], "download_info.url")?;
        let wheel = url
            .rsplit('/')
            .next()
            .unwrap_or("")
            .split('#')
            .next()
            .unwrap_or("");
        if !wheel.ends_with(".whl") {
            return Err(format!(
                "{name}=={version}: pip would install {url}, which is not a wheel; expected wheels only \
                 (--only-binary :all:)"
            ));
        }
        let sha256 = item["download_info"]["archive_info"]["hashes"]["sha256"]
            .as_str()
            .ok_or_else(|| {
                format!(
                    "{name}=={version}: the index published no sha256 for {wheel}; expected one"
                )
            })?;
        out.push_str(&format!(
            "{name}=={version} --hash=sha256:{sha256}  # {wheel}\n"
        ));
    }
    lock_list::parse(&out, requirement)?;
    Ok(out)
}

/// The records file of `lock` (labelled `lock_label`) from the wheels in
/// `wheels`, each checked against its locked sha256 first, and the SDK
/// wheel's own RECORD text.
///
/// # Errors
/// A wheel missing, not of its locked sha256, or without a readable RECORD.
pub fn records_from_wheels(
    lock: &LockList,
    lock_label: &str,
    wheels: &Path,
) -> Result<(String, String), String> {
    let mut out = format!(
        "# What each wheel of {lock_label} ships, by its own *.dist-info/RECORD:\n\
         # `name==version wheel=SHA256 rows=N record=SHA256  # wheel file`, where record is the sha256 of the\n\
         # RECORD's normalised rows (src/provision/wheel_records.rs). Computed by verify-coding-candidates\n\
         # from the locked wheels, each checked against its locked sha256; do not edit.\n"
    );
    let mut sdk_record = None;
    for entry in &lock.entries {
        let path = wheels.join(&entry.wheel);
        let bytes = std::fs::read(&path).map_err(|e| {
            format!(
                "{}: expected the locked wheel, found none ({e})",
                path.display()
            )
        })?;
        let found = crate::hash::sha256_bytes(&bytes);
        if found != entry.sha256 {
            return Err(format!(
                "{}: expected sha256 {} ({lock_label}), found {found}",
                path.display(),
                entry.sha256
            ));
        }
        let (dist_info, text) =
            wheel_record(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let rows = normalised_rows(&text, &dist_info, RecordSide::Wheel)
            .map_err(|e| format!("{}: {dist_info}/RECORD: {e}", path.display()))?;
        out.push_str(&render_line(entry, &rows));
        out.push('\n');
        if entry.key() == super::resolve::SDK {
            sdk_record = Some(text);
        }
    }
    let sdk_record = sdk_record.ok_or_else(|| {
        format!(
            "{lock_label}: expected a {} wheel, found none",
            super::resolve::SDK
        )
    })?;
    Ok((out, sdk_record))
}

/// The `(dist-info folder, RECORD text)` of wheel `bytes`.
fn wheel_record(bytes: &[u8]) -> Result<(String, String), String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("not a zip archive ({e})"))?;
    let name = zip
        .file_names()
        .find(|n| {
            n.split_once('/')
                .is_some_and(|(dir, file)| dir.ends_with(".dist-info") && file == "RECORD")
        })
        .map(str::to_string)
        .ok_or("expected a *.dist-info/RECORD, found none")?;
    let mut text = String::new();
    zip.by_name(&name)
        .map_err(|e| e.to_string())?
        .read_to_string(&mut text)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok((name.trim_end_matches("/RECORD").to_string(), text))
}

/// Locks `langbot-plugin==version` from `index_url` with `python`'s pip into
/// [`locks_dir`] (see the module docs), or returns the lock found there.
///
/// # Errors
/// A sentence naming the step (pip's resolution, the download, a wheel).
pub fn lock(
    version: &str,
    python: &Path,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<SdkFiles, String> {
    let dir = locks_dir()?;
    lock_in(&dir, version, python, index_url, progress)
}

/// pip's arguments to resolve `requirement` from `index_url` without
/// installing it (wheels only, the test pins beside it), its report
/// written to `report_path`.
fn dry_run_args(report_path: &Path, index_url: &str, requirement: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "install",
        "--dry-run",
        "--ignore-installed",
        "--only-binary",
        ":all:",
        "--report",
    ]
    .map(String::from)
    .to_vec();
    args.push(report_path.display().to_string());
    args.extend([
        "--index-url".into(),
        index_url.into(),
        requirement.to_string(),
    ]);
    args.extend(test_pins());
    args
}

/// pip's arguments to download the locked wheels of `requirements` (with
/// their hashes, no dependencies) from `index_url` into `wheels`.
fn download_args(index_url: &str, wheels: &Path, requirements: &Path) -> Vec<String> {
    let mut download: Vec<String> = [
        "download",
        "--require-hashes",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--index-url",
        index_url,
        "-d",
    ]
    .map(String::from)
    .to_vec();
    download.push(wheels.display().to_string());
    download.extend(["-r".into(), requirements.display().to_string()]);
    download
}

/// [`lock`] into `dir`.
///
/// # Errors
/// As [`lock`].
pub fn lock_in(
    dir: &Path,
    version: &str,
    python: &Path,
    index_url: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<SdkFiles, String> {
    let requirement = format!("{}=={version}", super::resolve::SDK);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _held = super::hold_lock(
        &dir.join(format!("langbot-plugin-{version}.flock")),
        progress,
    )
    .map_err(|e| e.0)?;
    if let Some(found) = files_in(dir, &requirement) {
        return Ok(found);
    }
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".langbot-plugin-{version}.partial-"))
        .tempdir_in(dir)
        .map_err(|e| format!("cannot create a temporary folder in {}: {e}", dir.display()))?;
    let report_path = tmp.path().join("pip-report.json");
    let args = dry_run_args(&report_path, index_url, &requirement);
    progress(&format!(
        "{requirement}: no lock list carried; locking it from {index_url} (pip install --dry-run --report)"
    ));
    pip_run(python, &args)?;
    let report = std::fs::read_to_string(&report_path)
        .map_err(|e| format!("{}: pip wrote no report ({e})", report_path.display()))?;
    let [lock_name, records_name, record_name, report_name] = file_names(version);
    let lock_label = dir.join(&lock_name).display().to_string();
    let shown = format!(
        "pip {}",
        args.join(" ")
            .replace(&report_path.display().to_string(), "R.json")
    );
    let lock_text = lock_from_report(&report, &requirement, &shown, index_url)?;
    let lock = lock_list::parse(&lock_text, &lock_label)?;
    let requirements = tmp.path().join("requirements.txt");
    std::fs::write(&requirements, lock.requirements())
        .map_err(|e| format!("cannot write {}: {e}", requirements.display()))?;
    let wheels = tmp.path().join("wheels");
    progress(&format!(
        "{requirement}: downloading its {} locked wheels to compute their RECORDs (pip download --require-hashes)",
        lock.entries.len()
    ));
    let download = download_args(index_url, &wheels, &requirements);
    pip_run(python, &download)?;
    let (records, sdk_record) = records_from_wheels(&lock, &lock_label, &wheels)?;
    for (name, text) in [
        (&report_name, report.as_str()),
        (&records_name, records.as_str()),
        (&record_name, sdk_record.as_str()),
        (&lock_name, lock_text.as_str()),
    ] {
        let staged = tmp.path().join(name);
        std::fs::write(&staged, text)
            .map_err(|e| format!("cannot write {}: {e}", staged.display()))?;
        std::fs::rename(&staged, dir.join(name))
            .map_err(|e| format!("cannot move {} into {}: {e}", name, dir.display()))?;
    }
    progress(&format!(
        "{requirement}: locked {} wheels into {lock_label}",
        lock.entries.len()
    ));
    files_in(dir, &requirement).ok_or_else(|| format!("{lock_label}: written, but not readable"))
}

/// `python -m pip ARGS`, isolated from the caller's pip configuration.
fn pip_run(python: &Path, args: &[String]) -> Result<(), String> {
    let mut cmd = Command::new(python);
    super::clean_python_env(&mut cmd)
        .args([
            "-I",
            "-m",
            "pip",
            "--isolated",
            "--no-input",
            "--disable-pip-version-check",
        ])
        .args(args)
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {} -m pip: {e}", python.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(format!(
        "pip {} exited with {}:\n  {}",
        args.first().map_or("", String::as_str),
        out.status,
        lines[lines.len().saturating_sub(10)..].join("\n  ")
    ))
}

/// Every records file the verifier knows, parsed: the carried ones
/// ([`super::builtin`]), the test extras', and those of the locks made on
/// demand, as [`all_files`] lists them.
///
/// # Panics
/// When a carried records file does not parse (a build defect, which
/// `builtin`'s tests catch). An on-demand one that does not parse is left
/// out (its wheels are then not compared, and `environment-locked` names it).
pub fn all_records() -> Vec<WheelRecord> {
    let extras = super::builtin::TEST_EXTRAS;
    let mut out = wheel_records::parse(extras.wheel_records, extras.records_label)
        .expect("a carried records file parses");
    for files in all_files() {
        match wheel_records::parse(&files.wheel_records, &files.records_label) {
            Ok(rows) => out.extend(rows),
            Err(e) if super::builtin::for_requirement(&files.requirement).is_some() => {
                panic!("a carried records file parses: {e}")
            }
            Err(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    const REPORT: &str = r#"{"version":"1","pip_version":"25.3","install":[
      {"metadata":{"name":"langbot_plugin","version":"0.7.4"},
       "download_info":{"url":"https://files.example/langbot_plugin-0.7.4-py3-none-any.whl",
         "archive_info":{"hashes":{"sha256":"HASH_SDK"}}}},
      {"metadata":{"name":"pydantic_core","version":"2.41.5"},
       "download_info":{"url":"https://files.example/pydantic_core-2.41.5-cp311-cp311-manylinux_2_17_x86_64.whl",
         "archive_info":{"hashes":{"sha256":"HASH_CORE"}}}}],
     "environment":{"implementation_name":"cpython","python_version":"3.11","python_full_version":"3.11.7",
       "sys_platform":"linux","platform_machine":"x86_64"}}"#;

    fn report() -> String {
        REPORT
            .replace("HASH_SDK", &"a".repeat(64))
            .replace("HASH_CORE", &"b".repeat(64))
    }

    /// A wheel of one module, with its RECORD.
    fn wheel(dir: &Path, file: &str, dist_info: &str) -> String {
        let path = dir.join(file);
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        zip.start_file("m.py", opts).unwrap();
        zip.write_all(b"x = 1\n").unwrap();
        zip.start_file(format!("{dist_info}/RECORD"), opts).unwrap();
        zip.write_all(format!("m.py,sha256=AAAA,6\n{dist_info}/RECORD,,\n").as_bytes())
            .unwrap();
        zip.finish().unwrap();
        crate::hash::sha256_bytes(&std::fs::read(path).unwrap())
    }

    #[test]
    fn the_report_becomes_a_lock_list_in_the_carried_format() {
        let text = lock_from_report(
            &report(),
            "langbot-plugin==0.7.4",
            "pip install ...",
            "https://pypi.org/simple",
        )
        .unwrap();
        let lock = lock_list::parse(&text, "t").unwrap();
        assert_eq!(lock.python_tag, "cp311");
        assert_eq!(lock.platform, ("linux".into(), "x86_64".into()));
        let sdk = lock.find("langbot-plugin").unwrap();
        assert_eq!(
            (sdk.version.as_str(), sdk.sha256.clone()),
            ("0.7.4", "a".repeat(64))
        );
        assert_eq!(
            lock.find("pydantic-core").unwrap().wheel,
            "pydantic_core-2.41.5-cp311-cp311-manylinux_2_17_x86_64.whl"
        );
        assert!(text.contains("# Made on demand"), "{text}");
        // An sdist, or a wheel without its published sha256, is refused.
        let sdist = report().replace("0.7.4-py3-none-any.whl", "0.7.4.tar.gz");
        assert!(lock_from_report(&sdist, "r", "c", "i")
            .unwrap_err()
            .contains("not a wheel"));
        let unhashed = report().replace(
            &format!("\"sha256\":\"{}\"", "b".repeat(64)),
            "\"md5\":\"x\"",
        );
        assert!(lock_from_report(&unhashed, "r", "c", "i")
            .unwrap_err()
            .contains("published no sha256"));
    }

    #[test]
    fn records_are_computed_from_wheels_checked_by_their_sha256_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let wheels = dir.path().join("w");
        std::fs::create_dir(&wheels).unwrap();
        let sdk_sha = wheel(
            &wheels,
            "langbot_plugin-0.7.4-py3-none-any.whl",
            "langbot_plugin-0.7.4.dist-info",
        );
        let dep_sha = wheel(&wheels, "dep-1.0-py3-none-any.whl", "dep-1.0.dist-info");
        let lock_text = format!(
            "# python: cp311\n# platform: linux x86_64\n\
             langbot_plugin==0.7.4 --hash=sha256:{sdk_sha}  # langbot_plugin-0.7.4-py3-none-any.whl\n\
             dep==1.0 --hash=sha256:{dep_sha}  # dep-1.0-py3-none-any.whl\n"
        );
        let lock = lock_list::parse(&lock_text, "l").unwrap();
        let (records, sdk_record) = records_from_wheels(&lock, "l", &wheels).unwrap();
        assert!(
            sdk_record.starts_with("m.py,sha256=AAAA,6\n"),
            "{sdk_record}"
        );
        let parsed = super::super::wheel_records::parse(&records, "r").unwrap();
        assert_eq!(
            super::super::wheel_records::uncovered(&lock, &parsed),
            Vec::<String>::new()
        );
        assert_eq!(parsed[0].rows, 1);
        // Written where the reader looks, the lock is found by its pin.
        let locks = dir.path().join("locks");
        std::fs::create_dir(&locks).unwrap();
        let [l, r, rec, _] = file_names("0.7.4");
        std::fs::write(locks.join(&r), &records).unwrap();
        std::fs::write(locks.join(&rec), &sdk_record).unwrap();
        assert!(
            files_in(&locks, "langbot-plugin==0.7.4").is_none(),
            "no .lock yet: incomplete"
        );
        std::fs::write(locks.join(&l), &lock_text).unwrap();
        let found = files_in(&locks, "langbot-plugin == 0.7.4").unwrap();
        assert_eq!(
            (found.lock, found.wheel_record),
            (lock_text.clone(), sdk_record)
        );
        // A carried pin is always the carried files.
        assert!(files_in(&locks, "langbot-plugin==0.7.18")
            .unwrap()
            .lock_label
            .starts_with("gates/profiles/sdk/"));
        // A wheel of other bytes than its lock says is refused.
        std::fs::write(wheels.join("dep-1.0-py3-none-any.whl"), b"other").unwrap();
        let err = records_from_wheels(&lock, "l", &wheels).unwrap_err();
        assert!(err.contains(&format!("expected sha256 {dep_sha}")), "{err}");
    }
}
