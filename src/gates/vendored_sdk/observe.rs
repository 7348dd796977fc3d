//! What `vendored-sdk` observes: the notice's fields (the profile's
//! patterns over the staged notice), the named file in the verified
//! install and its RECORD, and both license files.

use super::{Field, FileState, NoticeFields, SdkFile, VendoredObservation};
use crate::context::VerifiedSdk;
use crate::hash;
use crate::profile::VendoredSdkOptions;
use std::path::{Component, Path};

/// Reads one field: every match of `pattern` (one capture group) in `text`.
///
/// # Errors
/// When `pattern` is not a regex with exactly one capture group (the
/// profile loader refuses such a profile first).
pub fn read_field(text: &str, pattern: &str) -> Result<Field, String> {
    let re = regex::Regex::new(pattern).map_err(|e| format!("{pattern:?}: {e}"))?;
    if re.captures_len() != 2 {
        return Err(format!("{pattern:?}: expected exactly one capture group"));
    }
    let mut values: Vec<String> = Vec::new();
    for c in re.captures_iter(text) {
        if let Some(m) = c.get(1) {
            values.push(m.as_str().to_string());
        }
    }
    Ok(match values.first() {
        None => Field::Missing,
        Some(first) if values.iter().all(|v| v == first) => Field::Found(first.clone()),
        Some(_) => Field::Ambiguous(values),
    })
}

/// Reads the three fields of `text` with the profile's patterns.
///
/// # Errors
/// As [`read_field`].
pub fn read_notice(text: &str, opts: &VendoredSdkOptions) -> Result<NoticeFields, String> {
    Ok(NoticeFields {
        version: read_field(text, &opts.version_pattern)?,
        file: read_field(text, &opts.file_pattern)?,
        sha256: read_field(text, &opts.sha256_pattern)?,
    })
}

pub(super) fn file_state(path: &Path) -> FileState {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => match hash::sha256_file(path) {
            Ok(d) => FileState::File {
                sha256: d.hex(),
                size: d.size,
            },
            Err(e) => FileState::Unavailable {
                why: format!("cannot be read: {e}"),
            },
        },
        Ok(m) if m.file_type().is_symlink() => FileState::Unavailable {
            why: "is a symlink, not a regular file".into(),
        },
        Ok(_) => FileState::Unavailable {
            why: "is not a regular file".into(),
        },
        Err(_) => FileState::Unavailable {
            why: "does not exist".into(),
        },
    }
}

/// The RECORD paths of the verified install (first CSV column).
pub(super) fn record_paths(sdk: &VerifiedSdk) -> Result<Vec<String>, String> {
    let record = sdk.dist_info.join("RECORD");
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(&record)
        .map_err(|e| format!("cannot read {}: {e}", record.display()))?;
    let mut out = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| format!("{}: {e}", record.display()))?;
        if let Some(p) = row.get(0) {
            out.push(p.to_string());
        }
    }
    Ok(out)
}

/// Looks up the SDK file `named` in the verified install.
pub(super) fn observe_sdk_file(sdk: &VerifiedSdk, named: &str, record: &[String]) -> SdkFile {
    let rel = Path::new(named);
    let package = sdk
        .package_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let inside_package = !named.is_empty()
        && rel.components().all(|c| matches!(c, Component::Normal(_)))
        && rel
            .components()
            .next()
            .is_some_and(|c| c.as_os_str().to_string_lossy() == package)
        && rel.components().count() > 1;
    let state = if inside_package {
        file_state(&sdk.site_packages.join(rel))
    } else {
        FileState::Unavailable {
            why: format!("is not a path inside the installed `{package}` package"),
        }
    };
    SdkFile {
        path: named.to_string(),
        inside_package,
        in_record: record.iter().any(|r| r == named),
        state,
    }
}

fn join(root: &Path, rel: &str) -> std::path::PathBuf {
    let mut p = root.to_path_buf();
    p.extend(rel.split('/'));
    p
}

/// Observes one candidate (`path` relative to the repository).
#[allow(clippy::too_many_arguments)]
pub(super) fn observe(
    staged_root: &Path,
    path: &str,
    folder: &str,
    opts: &VendoredSdkOptions,
    sdk: &VerifiedSdk,
    record: &[String],
    pinned_version: &str,
    installed_version: &str,
) -> Result<VendoredObservation, String> {
    let notice = format!("{path}/{}", opts.notice);
    let license_copy = format!("{path}/{}", opts.license_copy);
    let (notice_error, fields) = match std::fs::read(join(staged_root, &notice)) {
        Err(e) => (
            Some(format!("cannot be read in the staged commit: {e}")),
            NoticeFields {
                version: Field::Missing,
                file: Field::Missing,
                sha256: Field::Missing,
            },
        ),
        Ok(bytes) => match String::from_utf8(bytes) {
            Err(e) => (
                Some(format!("is not UTF-8 ({e})")),
                NoticeFields {
                    version: Field::Missing,
                    file: Field::Missing,
                    sha256: Field::Missing,
                },
            ),
            Ok(text) => (None, read_notice(&text, opts)?),
        },
    };
    let sdk_file = match &fields.file {
        Field::Found(named) => Some(observe_sdk_file(sdk, named, record)),
        _ => None,
    };
    let dist_info_name = sdk
        .dist_info
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(VendoredObservation {
        folder: folder.to_string(),
        notice,
        notice_error,
        fields,
        pinned_version: pinned_version.to_string(),
        installed_version: installed_version.to_string(),
        sdk_file,
        license_copy_state: file_state(&join(staged_root, &license_copy)),
        license_copy,
        installed_license: format!("{dist_info_name}/{}", opts.license_source),
        installed_license_state: file_state(&join(&sdk.dist_info, &opts.license_source)),
    })
}
