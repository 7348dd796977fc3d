//! What the `sdk-record` gate observes, and how: the SDK probe
//! (`src/python/sdk_probe.py`) in the verified interpreter, the installed
//! distribution's RECORD read and every row verified against the files, the
//! package and dist-info walked for files RECORD does not list, and the
//! bytecode probe. [`super::decide`] judges the [`Observation`].

use super::environment::{observe_environment, SdkScope, SiteProbe};
use super::environment_locked::{anchors, observe_locked};
use super::{
    normalize_join, parse_record, unlisted_files, verify_rows, BytecodeOutcome, BytecodeProbe,
    MalformedPath, Observation, RecordLayout, RecordObservation, RowsReport, SdkProbe, Walk,
    DISTRIBUTION, PACKAGE,
};
use crate::context::RunContext;
use crate::evidence::sandbox::SandboxRecord;
use crate::isolation::sandbox::Availability;
use crate::{hash, python};
use std::path::{Path, PathBuf};

/// Runs the SDK probe, reads and verifies RECORD, walks the package and runs
/// the bytecode probe.
///
/// # Errors
/// When the private roots cannot be created or the SDK probe does not answer.
pub(crate) fn observe(ctx: &RunContext) -> Result<Observation, String> {
    // Nothing of the environment runs before `environment-startup` has
    // judged it: every probe here starts with `-I -S`, in a sandbox where
    // only its private roots are writable (`Probe::run_before_judgement`).
    // The site probe runs first; the SDK and bytecode probes are given the
    // site path it found, read as data, instead of running `site`.
    let cache = python::bytecode_cache::dir();
    let sandbox =
        crate::isolation::sandbox::availability(&ctx.evidence_dir.join("logs").join("sandbox"));
    let (site, probe_sandbox) = run_site_probe(ctx, sandbox, cache.as_deref())?;
    if let (Ok(site), Some(prefix)) = (&site, python::pycache_prefix()) {
        super::seed::seed_stdlib(
            site,
            prefix,
            &ctx.log_stem("sdk-record", "pycache-seed-stdlib.txt"),
            ctx.width(),
        );
    }
    let mut obs = observe_sdk(ctx, sandbox, cache.as_deref(), site.as_ref().ok())?;
    obs.probe_sandbox = Some(probe_sandbox);
    if let Some(dir) = &cache {
        remember_equal_pairs(dir, &site, &obs);
    }
    let env = observe_environment(&ctx.python, site, &sdk_scope(&obs));
    let sdk = &ctx.profile.profile.sdk;
    obs.locked = Some(match env.probe.as_ref() {
        Some(probe) => {
            let site_dirs: Vec<PathBuf> = probe
                .site_dirs
                .iter()
                .map(|d| normalize_join(Path::new(d), "."))
                .filter(|d| d.is_dir())
                .collect();
            observe_locked(
                &site_dirs,
                anchors(&sdk.requirement),
                env.sdk_dist_info.as_deref(),
                &sdk.extra_distributions,
            )
        }
        None => observe_locked(
            &[],
            Err(format!(
                "not observed: the site probe did not answer ({}), so the site directories are unknown \
                 (see logs/sdk-record/site-probe.*)",
                env.probe_error.as_deref().unwrap_or("no answer")
            )),
            None,
            &sdk.extra_distributions,
        ),
    });
    obs.environment = Some(env);
    Ok(obs)
}

/// Adds the pairs both probes compiled and found equal now to the bytecode
/// cache file they read (`src/python/bytecode_cache.rs`), so the next run
/// does not compile them again: the verifier alone writes it, and only a
/// `<key>.pairs` file directly in `dir` ([`python::bytecode_cache::pairs_file`]).
/// A cache that cannot be written costs only time: the next run compiles
/// again.
fn remember_equal_pairs(dir: &Path, site: &Result<SiteProbe, String>, obs: &Observation) {
    let site_probe = site.as_ref().ok();
    let record = obs.record.as_ref();
    let sdk_probe = record.and_then(|r| r.bytecode.as_ref());
    let path = site_probe
        .and_then(|p| p.bytecode_cache.as_ref())
        .or_else(|| sdk_probe.and_then(|p| p.cache.as_ref()))
        .and_then(|c| python::bytecode_cache::pairs_file(dir, &c.path));
    let Some(path) = path else { return };
    let site_files = site_probe.into_iter().flat_map(|p| {
        p.bytecode
            .iter()
            .chain(p.stdlib_bytecode.iter())
            .flat_map(|s| {
                s.files
                    .iter()
                    .filter_map(|f| f.new_cache_pair(Path::new(&s.site_dir)))
            })
    });
    let sdk_files = record.into_iter().flat_map(|r| {
        r.bytecode.iter().flat_map(|b| {
            b.files
                .iter()
                .filter_map(|f| f.new_cache_pair(Path::new(&r.site_packages)))
        })
    });
    let pairs: std::collections::BTreeSet<String> = site_files.chain(sdk_files).collect();
    let _ = python::bytecode_cache::add_pairs(&path, &pairs);
}

/// The site probe (`-I -S`, so nothing of the environment runs in it): the
/// site directories, `.pth` lines, start-up modules and every bytecode file
/// but those of `<site dir>/langbot_plugin`, which the `bytecode` check's
/// probe examines.
fn run_site_probe(
    ctx: &RunContext,
    sandbox: &Availability,
    cache: Option<&Path>,
) -> Result<(Result<SiteProbe, String>, SandboxRecord), String> {
    let (home, tmp) = private_roots(ctx, "site-probe")?;
    let unjudged = python::Unjudged {
        sandbox,
        writable: vec![home.clone(), tmp.clone()],
    };
    let probe = python::Probe {
        python: &ctx.python,
        name: "site_probe",
        source: &python::site_probe_source(),
        args: &probe_args(vec![PACKAGE.to_string()], cache),
        cwd: &home,
        env: ctx.child_env(&home, &tmp),
        log_stem: &ctx.log_stem("sdk-record", "site-probe"),
        timeout: SITE_PROBE_TIMEOUT,
    };
    Ok(probe.run_before_judgement::<SiteProbe>(&unjudged))
}

fn private_roots(ctx: &RunContext, name: &str) -> Result<(PathBuf, PathBuf), String> {
    ctx.private_roots("sdk-record", name).map_err(|e| {
        format!(
            "sdk-record: cannot create private roots under {}: {e}",
            ctx.evidence_dir.display()
        )
    })
}

/// The SDK probe's ENVIRONMENT argument (`sdk_probe.py`): the prefixes
/// the site probe found and the folders `site` appends to `sys.path` for
/// its site directories, computed from the `.pth` files as data
/// ([`super::pth::site_path`]). Without a site probe answer, an empty
/// object (the probe then finds no site directory and says the SDK is not
/// installed).
fn sdk_probe_environment(site: Option<&SiteProbe>) -> String {
    let Some(site) = site else {
        return "{}".into();
    };
    let dirs: Vec<PathBuf> = site.site_dirs.iter().map(PathBuf::from).collect();
    let path: Vec<String> = super::pth::site_path(&dirs)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    serde_json::json!({
        "prefix": site.prefix,
        "exec_prefix": site.exec_prefix.as_deref().unwrap_or(&site.prefix),
        "path": path,
    })
    .to_string()
}

/// What the SDK checks judge, so the environment checks do not judge it
/// again: the SDK's package and dist-info, and its bytecode found equal to
/// verified sources.
fn sdk_scope(obs: &Observation) -> SdkScope {
    let mut sdk = SdkScope::default();
    let (Some(record), Some(package)) = (&obs.record, &obs.expected_package_dir) else {
        return sdk;
    };
    sdk.dirs = vec![
        normalize_join(Path::new(package), "."),
        normalize_join(Path::new(&record.dist_info), "."),
    ];
    let site_packages = Path::new(&record.site_packages);
    for file in record.bytecode.iter().flat_map(|b| b.files.iter()) {
        let source = file
            .source
            .as_deref()
            .map(|s| normalize_join(site_packages, s));
        if file.outcome == BytecodeOutcome::Equal
            && source.is_some_and(|s| record.rows.verified.contains(&s))
        {
            sdk.bytecode_equal
                .insert(normalize_join(site_packages, &file.path));
        }
    }
    sdk
}

/// The site probe compiles every bytecode file's source in the environment
/// (about 3000 in the SDK's venv): allow for a loaded machine.
const SITE_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// `args`, then the bytecode cache directory when there is one.
fn probe_args(mut args: Vec<String>, cache: Option<&Path>) -> Vec<String> {
    args.extend(cache.map(|c| c.display().to_string()));
    args
}

/// Whether the package folder the probe imported (`found`) is `expected`,
/// as written or once both are resolved.
fn same_folder(found: Option<&str>, expected: &Path) -> bool {
    found.is_some_and(|p| {
        let p = Path::new(p);
        p == expected
            || matches!((p.canonicalize(), expected.canonicalize()), (Ok(a), Ok(b)) if a == b)
    })
}

/// The SDK's RECORD (in `dist_info`, its rows relative to `site_packages`)
/// read and verified: its digest, its rows against the files, its malformed
/// rows and the files under the package and the dist-info it does not list.
/// `read_error` is set, and nothing else, when it cannot be read.
fn read_record(probe: &SdkProbe, site_packages: &Path, dist_info: &Path) -> RecordObservation {
    let record_path = dist_info.join("RECORD");
    let mut record = RecordObservation {
        path: record_path.display().to_string(),
        site_packages: site_packages.display().to_string(),
        dist_info: dist_info.display().to_string(),
        read_error: None,
        sha256: String::new(),
        total_rows: 0,
        hashed_rows: 0,
        malformed: Vec::new(),
        malformed_paths: Vec::new(),
        rows: RowsReport::default(),
        walk: Walk::default(),
        bytecode: None,
        bytecode_error: None,
    };
    let digest = hash::sha256_file(&record_path);
    let file = std::fs::File::open(&record_path);
    let (digest, file) = match (digest, file) {
        (Ok(d), Ok(f)) => (d, f),
        (Err(e), _) | (_, Err(e)) => {
            record.read_error = Some(e.to_string());
            return record;
        }
    };
    record.sha256 = digest.hex();
    let dist_info_name = dist_info
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parsed = parse_record(std::io::BufReader::new(file), &dist_info_name);
    let layout = RecordLayout {
        site_packages: site_packages.to_path_buf(),
        scripts_dir: probe.scripts_dir.as_ref().map(PathBuf::from),
        console_scripts: probe.console_scripts.clone(),
    };
    record.rows = verify_rows(&layout, &parsed.rows);
    record.total_rows = parsed.total_rows;
    record.hashed_rows = parsed.rows.iter().filter(|r| r.hashed.is_some()).count();
    record.malformed_paths = parsed
        .malformed_paths
        .iter()
        .map(|(row, path)| MalformedPath {
            row: *row,
            path: path.clone(),
            resolved: normalize_join(site_packages, path).display().to_string(),
        })
        .collect();
    record.malformed = parsed.malformed;
    record.walk = unlisted_files(
        &[site_packages.join(PACKAGE), dist_info.to_path_buf()],
        &record.rows.listed,
    );
    record
}

fn observe_sdk(
    ctx: &RunContext,
    sandbox: &Availability,
    cache: Option<&Path>,
    site: Option<&SiteProbe>,
) -> Result<Observation, String> {
    let (home, tmp) = private_roots(ctx, "probe")?;
    let unjudged = python::Unjudged {
        sandbox,
        writable: vec![home.clone(), tmp.clone()],
    };
    let probe: SdkProbe = python::Probe {
        python: &ctx.python,
        name: "sdk_probe",
        source: python::SDK_PROBE,
        args: &[
            DISTRIBUTION.to_string(),
            PACKAGE.to_string(),
            sdk_probe_environment(site),
        ],
        cwd: &home,
        env: ctx.child_env(&home, &tmp),
        log_stem: &ctx.log_stem("sdk-record", "probe"),
        timeout: python::PROBE_TIMEOUT,
    }
    .run_before_judgement(&unjudged)
    .0?;
    let mut obs = Observation {
        python: ctx.python.display().to_string(),
        probe: probe.clone(),
        expected_package_dir: None,
        package_dir_matches: false,
        record: None,
        environment: None,
        locked: None,
        probe_sandbox: None,
    };
    let (Some(site_packages), Some(dist_info)) = (&probe.site_packages, &probe.dist_info) else {
        return Ok(obs);
    };
    let site_packages = normalize_join(Path::new(site_packages), ".");
    let dist_info = normalize_join(Path::new(dist_info), ".");
    let expected = Path::new(probe.site_packages.as_deref().unwrap_or_default()).join(PACKAGE);
    obs.package_dir_matches = same_folder(probe.package_dir.as_deref(), &expected);
    obs.expected_package_dir = Some(expected.display().to_string());

    let mut record = read_record(&probe, &site_packages, &dist_info);
    if record.read_error.is_some() {
        obs.record = Some(record);
        return Ok(obs);
    }
    let prefix = site.map(|s| s.prefix.clone()).unwrap_or_default();
    let bytecode = python::Probe {
        python: &ctx.python,
        name: "bytecode_probe",
        source: python::BYTECODE_PROBE,
        args: &probe_args(
            vec![
                site_packages.display().to_string(),
                PACKAGE.to_string(),
                prefix,
            ],
            cache,
        ),
        cwd: &home,
        env: ctx.child_env(&home, &tmp),
        log_stem: &ctx.log_stem("sdk-record", "bytecode-probe"),
        timeout: python::PROBE_TIMEOUT,
    };
    match bytecode.run_before_judgement::<BytecodeProbe>(&unjudged).0 {
        Ok(b) => record.bytecode = Some(b),
        Err(e) => record.bytecode_error = Some(e),
    }
    obs.record = Some(record);
    Ok(obs)
}
