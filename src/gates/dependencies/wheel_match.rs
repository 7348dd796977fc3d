//! Every distribution the SDK's installer put into a dependency environment
//! against the wheel of DIR/wheelhouse it should have come from: not only
//! its name and version (a forged wheel can carry both, with a higher build
//! tag that pip prefers, from a `find-links` that a pip configuration or a
//! requirements file adds), but its files. The installed RECORD's
//! normalised rows (`src/provision/wheel_records.rs`: pip's INSTALLER,
//! REQUESTED, direct_url.json, bytecode and launchers aside) must equal the
//! wheelhouse wheel's own RECORD's, and every hashed row must match its file
//! on disk (sha256 and size). Observes only; the `installed` check decides.

use crate::evidence::WheelhouseFile;
use crate::hash;
use crate::provision::wheel_records::{digest, normalised_rows, RecordSide};
use crate::wheelhouse;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The normalised rows of the `*.dist-info/RECORD` inside the wheel at
/// `path`, with that dist-info folder's name.
///
/// # Errors
/// When the wheel cannot be read, is not a zip, or holds no RECORD.
pub fn wheel_rows(path: &Path) -> Result<(String, Vec<String>), String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("{}: cannot open ({e})", path.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| format!("{}: not a zip archive ({e})", path.display()))?;
    let name = zip
        .file_names()
        .find(|n| {
            n.split_once('/')
                .is_some_and(|(dir, file)| dir.ends_with(".dist-info") && file == "RECORD")
        })
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no *.dist-info/RECORD", path.display()))?;
    let mut text = String::new();
    zip.by_name(&name)
        .map_err(|e| format!("{}: {name}: {e}", path.display()))?
        .take(64 << 20)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {name}: {e}", path.display()))?;
    let dist_info = name.trim_end_matches("/RECORD").to_string();
    let rows = normalised_rows(&text, &dist_info, RecordSide::Wheel)
        .map_err(|e| format!("{}: {name}: {e}", path.display()))?;
    Ok((dist_info, rows))
}

/// `base` joined with the `/`-separated `rel`, `.` and `..` resolved
/// lexically.
fn join(base: &Path, rel: &str) -> PathBuf {
    let mut out = base.to_path_buf();
    for part in Path::new(rel).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out
}

/// `None` when one of `wheels` (in `wheelhouse_dir`) has exactly the
/// `installed` normalised rows; else, per wheel, why it is not the one.
fn unmatched(
    wheels: &[&WheelhouseFile],
    wheelhouse_dir: &Path,
    installed: &[String],
) -> Option<Vec<String>> {
    let mut tried = Vec::new();
    for wheel in wheels {
        match wheel_rows(&wheelhouse_dir.join(&wheel.name)) {
            Ok((_, rows)) if rows == installed => return None,
            Ok((_, rows)) => {
                let wanted: BTreeSet<&String> = rows.iter().collect();
                let found: BTreeSet<&String> = installed.iter().collect();
                let extra: Vec<&&String> = found.difference(&wanted).take(3).collect();
                let lacking: Vec<&&String> = wanted.difference(&found).take(3).collect();
                tried.push(format!(
                    "expected the {} rows of {}'s RECORD (sha256 of rows {}), found {} rows (sha256 {}); \
                     rows not in the wheel: {extra:?}; wheel rows not installed: {lacking:?}",
                    rows.len(),
                    wheel.name,
                    digest(&rows),
                    installed.len(),
                    digest(installed)
                ));
            }
            Err(e) => tried.push(e),
        }
    }
    Some(tried)
}

/// Each hashed row of the distribution `dist` (`name`, `version`) whose
/// file in `site_packages` is missing or differs from the wheel's RECORD
/// (sha256 and size).
fn file_problems(
    site_packages: &Path,
    dist: &Path,
    (name, version): (&str, &str),
    installed: &[String],
) -> Vec<String> {
    let mut problems = Vec::new();
    for row in installed {
        let mut fields = row.rsplitn(3, ',');
        let (Some(size), Some(hash_field), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some(want) = hash_field.strip_prefix("sha256=") else {
            continue;
        };
        let file = join(site_packages, path);
        match hash::sha256_file(&file) {
                Ok(found)
                    if URL_SAFE_NO_PAD.encode(found.bytes) == want
                        && found.size.to_string() == size => {}
                Ok(found) => problems.push(format!(
                    "{} ({name} {version}): {}: expected sha256={want} size {size} (the wheel's RECORD), \
                     found sha256={} size {}",
                    dist.display(),
                    file.display(),
                    URL_SAFE_NO_PAD.encode(found.bytes),
                    found.size
                )),
                Err(e) => problems.push(format!(
                    "{} ({name} {version}): {}: expected a file of {size} bytes (the wheel's RECORD), found none ({e})",
                    dist.display(),
                    file.display()
                )),
            }
    }
    problems
}

/// Each file under `site_packages` that no installed RECORD lists
/// (`listed`), outside `__pycache__` and the launchers' `bin/`.
fn unlisted(site_packages: &Path, listed: &BTreeSet<PathBuf>) -> Vec<String> {
    let mut problems = Vec::new();
    for entry in walkdir::WalkDir::new(site_packages)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name();
            !(e.file_type().is_dir()
                && (name == "__pycache__" || (e.depth() == 1 && name == "bin")))
        })
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().is_dir())
    {
        let path = join(entry.path(), ".");
        if !listed.contains(&path) {
            problems.push(format!(
                "{}: expected only files an installed RECORD lists, found one none lists",
                path.display()
            ));
        }
    }
    problems
}

/// Compares every `*.dist-info` in `site_packages` with the wheelhouse file
/// of its name and version in `wheelhouse_dir` (`files` lists them), and
/// walks `site_packages` for files no installed RECORD lists (outside
/// `__pycache__` and the launchers' `bin/`). One sentence per problem,
/// naming the distribution, the wheel, what was expected and what was found.
pub fn compare(
    site_packages: &Path,
    wheelhouse_dir: &Path,
    files: &[WheelhouseFile],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut listed: BTreeSet<PathBuf> = BTreeSet::new();
    let mut folders: Vec<String> = match std::fs::read_dir(site_packages) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => return vec![format!("{}: cannot list ({e})", site_packages.display())],
    };
    folders.sort();
    for folder in folders.iter().filter(|f| f.ends_with(".egg-info")) {
        problems.push(format!(
            "{}: expected only distributions installed from wheelhouse wheels, found an egg-info",
            site_packages.join(folder).display()
        ));
    }
    for folder in folders.iter().filter(|f| f.ends_with(".dist-info")) {
        let dist = site_packages.join(folder);
        let stem = folder.trim_end_matches(".dist-info");
        let (name, version) = stem.rsplit_once('-').unwrap_or((stem, ""));
        let record_path = dist.join("RECORD");
        let text = match std::fs::read_to_string(&record_path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!(
                    "{}: expected the installer's RECORD, found none ({e})",
                    record_path.display()
                ));
                continue;
            }
        };
        let installed = match normalised_rows(&text, folder, RecordSide::Installed) {
            Ok(rows) => rows,
            Err(e) => {
                problems.push(format!("{}: {e}", record_path.display()));
                continue;
            }
        };
        for row in text.lines() {
            if let Some((path, _)) = row.split_once(',') {
                listed.insert(join(site_packages, path.trim_matches('"')));
            }
        }
        let wheels: Vec<&WheelhouseFile> = wheelhouse::files_for(files, name, version)
            .into_iter()
            .filter(|f| f.name.ends_with(".whl"))
            .collect();
        if wheels.is_empty() {
            // Named by the `installed` check's wheelhouse-file rule.
            continue;
        }
        if let Some(tried) = unmatched(&wheels, wheelhouse_dir, &installed) {
            problems.push(format!(
                "{} ({name} {version}): not installed from a wheelhouse wheel of that name and version: {}",
                dist.display(),
                tried.join("; ")
            ));
            continue;
        }
        problems.extend(file_problems(
            site_packages,
            &dist,
            (name, version),
            &installed,
        ));
    }
    problems.extend(unlisted(site_packages, &listed));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn b64(bytes: &[u8]) -> String {
        use sha2::Digest;
        URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
    }

    /// A wheel `demo-1.0-<tag>.whl` shipping `demo.py` with `source`.
    fn wheel(dir: &Path, tag: &str, source: &str) -> WheelhouseFile {
        let name = format!("demo-1.0-{tag}.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(dir.join(&name)).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        let meta = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";
        let record = format!(
            "demo.py,sha256={},{}\ndemo-1.0.dist-info/METADATA,sha256={},{}\ndemo-1.0.dist-info/RECORD,,\n",
            b64(source.as_bytes()),
            source.len(),
            b64(meta.as_bytes()),
            meta.len()
        );
        for (n, c) in [
            ("demo.py", source),
            ("demo-1.0.dist-info/METADATA", meta),
            ("demo-1.0.dist-info/RECORD", record.as_str()),
        ] {
            zip.start_file(n, opts).unwrap();
            zip.write_all(c.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
        WheelhouseFile {
            name,
            project: "demo".into(),
            version: "1.0".into(),
            size: 0,
            sha256: String::new(),
        }
    }

    /// Installs `source` as demo 1.0 into `sp` the way pip does.
    fn install(sp: &Path, source: &str) {
        let meta = "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n";
        std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
        std::fs::write(sp.join("demo.py"), source).unwrap();
        std::fs::write(sp.join("demo-1.0.dist-info/METADATA"), meta).unwrap();
        std::fs::write(sp.join("demo-1.0.dist-info/INSTALLER"), "pip\n").unwrap();
        let record = format!(
            "demo-1.0.dist-info/INSTALLER,sha256={},4\ndemo-1.0.dist-info/METADATA,sha256={},{}\n\
             demo-1.0.dist-info/RECORD,,\ndemo.py,sha256={},{}\n__pycache__/demo.cpython-311.pyc,,\n\
             ../../bin/demo,sha256=XXXX,200\n",
            b64(b"pip\n"),
            b64(meta.as_bytes()),
            meta.len(),
            b64(source.as_bytes()),
            source.len()
        );
        std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), record).unwrap();
    }

    #[test]
    fn the_wheelhouse_wheel_installed_as_shipped_matches() {
        let house = tempfile::tempdir().unwrap();
        let sp = tempfile::tempdir().unwrap();
        let w = wheel(house.path(), "py3-none-any", "X = 1\n");
        install(sp.path(), "X = 1\n");
        assert_eq!(compare(sp.path(), house.path(), &[w]), Vec::<String>::new());
    }

    #[test]
    fn a_forged_wheel_of_the_same_name_and_version_is_named_with_the_wheel_it_is_not() {
        let house = tempfile::tempdir().unwrap();
        let sp = tempfile::tempdir().unwrap();
        let w = wheel(house.path(), "py3-none-any", "X = 1\n");
        // What a forged `demo-1.0-1-py3-none-any.whl` (higher build tag) installs.
        install(sp.path(), "X = 'forged'\n");
        let problems = compare(sp.path(), house.path(), &[w]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        assert!(
            p.contains("demo-1.0.dist-info (demo 1.0): not installed from a wheelhouse wheel")
                && p.contains("expected the 2 rows of demo-1.0-py3-none-any.whl's RECORD")
                && p.contains("rows not in the wheel: [\"demo.py,sha256="),
            "{p}"
        );
    }

    #[test]
    fn a_file_changed_after_installation_and_an_unlisted_file_are_named() {
        let house = tempfile::tempdir().unwrap();
        let sp = tempfile::tempdir().unwrap();
        let w = wheel(house.path(), "py3-none-any", "X = 1\n");
        install(sp.path(), "X = 1\n");
        std::fs::write(sp.path().join("demo.py"), "X = 2\n").unwrap();
        std::fs::write(sp.path().join("extra.py"), "").unwrap();
        let problems = compare(sp.path(), house.path(), &[w]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("demo.py: expected sha256=")
                && problems[0].contains("found sha256="),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("extra.py: expected only files an installed RECORD lists"),
            "{problems:?}"
        );
    }
}
