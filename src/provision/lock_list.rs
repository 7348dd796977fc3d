//! Lock lists: every wheel of a provisioned interpreter, pinned by version and
//! sha256, in pip's requirements format (so pip reads the same text in
//! `--require-hashes` mode).
//!
//! Grammar, one wheel per line (blank lines and `#` comment lines allowed):
//!
//! ```text
//! # python: cp311
//! # platform: linux x86_64
//! NAME==VERSION --hash=sha256:HEX64  # WHEEL-FILE-NAME.whl
//! ```
//!
//! The two header comments say which interpreter the wheels are for; the
//! trailing comment names the wheel file (for errors on another platform).
//! Sources: `gates/profiles/sdk/*.lock` (generated once with
//! `pip install --dry-run --report`), `xtask/test-extras.lock`.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// One locked wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    /// The distribution name as written (`pydantic_core`).
    pub name: String,
    /// The exact version (`2.50.5`).
    pub version: String,
    /// The wheel's sha256, 64 lowercase hex digits.
    pub sha256: String,
    /// The wheel's file name (`pydantic_core-2.50.5-cp311-...whl`).
    pub wheel: String,
}

impl LockEntry {
    /// The PEP 503 normalised name (`pydantic-core`).
    pub fn key(&self) -> String {
        normalize_name(&self.name)
    }

    /// True when the wheel only fits one interpreter or platform (its tags
    /// are not `py3-none-any`/`py2.py3-none-any`).
    pub fn platform_specific(&self) -> bool {
        !self.wheel.ends_with("-none-any.whl")
    }
}

/// A parsed lock list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockList {
    /// Where it came from (a file name), for errors.
    pub label: String,
    /// CPython tag of the interpreter the wheels are for (`cp311`).
    pub python_tag: String,
    /// `sys.platform` and `platform.machine()` the wheels are for (`linux`, `x86_64`).
    pub platform: (String, String),
    /// The wheels, in file order; names are unique.
    pub entries: Vec<LockEntry>,
}

/// PEP 503 name normalisation: lowercase, runs of `-`, `_`, `.` become one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
            continue;
        }
        if sep && !out.is_empty() {
            out.push('-');
        }
        sep = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Parses lock list `text`; `label` names it in errors.
///
/// # Errors
/// `LABEL line N: expected ..., found ...` for a malformed line, a duplicate
/// name, or a missing `# python:`/`# platform:` header.
pub fn parse(text: &str, label: &str) -> Result<LockList, String> {
    let mut python_tag = None;
    let mut platform = None;
    let mut entries: Vec<LockEntry> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let n = index + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            if let Some(tag) = comment.strip_prefix("python:") {
                let tag = tag.trim();
                if !tag.starts_with("cp3") || !tag[2..].bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format!(
                        "{label} line {n}: expected `# python: cp3NN`, found {raw:?}"
                    ));
                }
                python_tag = Some(tag.to_string());
            } else if let Some(p) = comment.strip_prefix("platform:") {
                let mut words = p.split_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some(sys), Some(machine), None) => {
                        platform = Some((sys.to_string(), machine.to_string()));
                    }
                    _ => {
                        return Err(format!(
                            "{label} line {n}: expected `# platform: SYS MACHINE` (e.g. `linux x86_64`), found {raw:?}"
                        ))
                    }
                }
            }
            continue;
        }
        let entry = parse_entry(line).map_err(|why| {
            format!(
                "{label} line {n}: expected `NAME==VERSION --hash=sha256:HEX64  # WHEEL.whl`, found {raw:?} ({why})"
            )
        })?;
        if entries.iter().any(|e| e.key() == entry.key()) {
            return Err(format!(
                "{label} line {n}: {} is locked twice; expected one line per distribution",
                entry.name
            ));
        }
        entries.push(entry);
    }
    let python_tag = python_tag
        .ok_or_else(|| format!("{label}: expected a `# python: cp3NN` header line, found none"))?;
    let platform = platform.ok_or_else(|| {
        format!("{label}: expected a `# platform: SYS MACHINE` header line, found none")
    })?;
    if entries.is_empty() {
        return Err(format!(
            "{label}: expected at least one locked wheel, found none"
        ));
    }
    Ok(LockList {
        label: label.to_string(),
        python_tag,
        platform,
        entries,
    })
}

fn parse_entry(line: &str) -> Result<LockEntry, &'static str> {
    let (req, wheel) = line.split_once('#').ok_or("no `# WHEEL.whl` comment")?;
    let wheel = wheel.trim();
    if !wheel.ends_with(".whl") || wheel.contains(char::is_whitespace) || wheel.contains('/') {
        return Err("the comment is not one wheel file name");
    }
    let mut words = req.split_whitespace();
    let pin = words.next().ok_or("empty requirement")?;
    let hash = words.next().ok_or("no --hash")?;
    if words.next().is_some() {
        return Err("more than one --hash or option");
    }
    let (name, version) = pin.split_once("==").ok_or("not an exact `==` pin")?;
    let name_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let version_ok = !version.is_empty()
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'!' | b'-' | b'_'));
    if !name_ok || !version_ok {
        return Err("name or version has characters outside PEP 508");
    }
    let hex = hash
        .strip_prefix("--hash=sha256:")
        .ok_or("the hash is not --hash=sha256:HEX")?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("the sha256 is not 64 lowercase hex digits");
    }
    Ok(LockEntry {
        name: name.to_string(),
        version: version.to_string(),
        sha256: hex.to_string(),
        wheel: wheel.to_string(),
    })
}

impl LockList {
    /// The entry of distribution `name` (any spelling), if locked.
    pub fn find(&self, name: &str) -> Option<&LockEntry> {
        let key = normalize_name(name);
        self.entries.iter().find(|e| e.key() == key)
    }

    /// The canonical text of the locked set: the python tag, the platform,
    /// then `key==version sha256` per wheel, sorted. Comments and order of
    /// the file do not change it; every pin and hash does.
    pub fn canonical(&self) -> String {
        let mut rows: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{}=={} {}", e.key(), e.version, e.sha256))
            .collect();
        rows.sort();
        let mut out = format!(
            "python {}\nplatform {} {}\n",
            self.python_tag, self.platform.0, self.platform.1
        );
        for r in rows {
            out.push_str(&r);
            out.push('\n');
        }
        out
    }

    /// The first 16 hex digits of the sha256 of [`Self::canonical`]: names
    /// the cache directory of this set.
    pub fn key(&self) -> String {
        let digest = Sha256::digest(self.canonical().as_bytes());
        let mut hex = String::with_capacity(16);
        for b in &digest[..8] {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }

    /// The requirements text handed to pip (`-r`): one `NAME==VERSION
    /// --hash=sha256:HEX` line per wheel.
    pub fn requirements(&self) -> String {
        self.entries
            .iter()
            .map(|e| format!("{}=={} --hash=sha256:{}\n", e.name, e.version, e.sha256))
            .collect()
    }

    /// This list with `other`'s wheels added (for the test suite's extras).
    ///
    /// # Errors
    /// A sentence when the two lists are for different interpreters, or lock
    /// one distribution differently.
    pub fn merged(&self, other: &LockList) -> Result<LockList, String> {
        if self.python_tag != other.python_tag || self.platform != other.platform {
            return Err(format!(
                "{} is for {} on {} {}, {} for {} on {} {}; expected one interpreter",
                self.label,
                self.python_tag,
                self.platform.0,
                self.platform.1,
                other.label,
                other.python_tag,
                other.platform.0,
                other.platform.1
            ));
        }
        let mut out = self.clone();
        out.label = format!("{} + {}", self.label, other.label);
        for e in &other.entries {
            match self.find(&e.name) {
                Some(mine) if mine != e => {
                    return Err(format!(
                    "{} locks {}=={} (sha256 {}), {} locks {}=={} (sha256 {}); expected one pin",
                    self.label,
                    mine.name,
                    mine.version,
                    mine.sha256,
                    other.label,
                    e.name,
                    e.version,
                    e.sha256
                ))
                }
                Some(_) => {}
                None => out.entries.push(e.clone()),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# a lock\n# python: cp311\n# platform: linux x86_64\n\n\
        Foo_Bar==1.0 --hash=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  # foo_bar-1.0-py3-none-any.whl\n\
        native==2.0b1 --hash=sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb  # native-2.0b1-cp311-cp311-manylinux_2_17_x86_64.whl\n";

    #[test]
    fn parses_entries_headers_and_normalised_names() {
        let lock = parse(GOOD, "t.lock").unwrap();
        assert_eq!(lock.python_tag, "cp311");
        assert_eq!(lock.platform, ("linux".into(), "x86_64".into()));
        assert_eq!(lock.entries.len(), 2);
        assert_eq!(lock.find("foo-bar").unwrap().version, "1.0");
        assert_eq!(lock.find("FOO.bar").unwrap().name, "Foo_Bar");
        assert!(!lock.entries[0].platform_specific());
        assert!(lock.entries[1].platform_specific());
        assert_eq!(
            lock.requirements(),
            "Foo_Bar==1.0 --hash=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n\
             native==2.0b1 --hash=sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
        );
    }

    #[test]
    fn the_key_follows_pins_and_hashes_not_comments_or_order() {
        let lock = parse(GOOD, "t").unwrap();
        let lines: Vec<&str> = GOOD.lines().collect();
        let reordered = format!(
            "# other comment\n{}\n{}\n{}\n{}\n",
            lines[2], lines[1], lines[5], lines[4]
        );
        assert_eq!(parse(&reordered, "t").unwrap().key(), lock.key());
        assert_eq!(lock.key().len(), 16);
        let bumped = GOOD.replace("native==2.0b1", "native==2.0b2");
        assert_ne!(parse(&bumped, "t").unwrap().key(), lock.key());
        let rehashed = GOOD.replace(&"b".repeat(64), &"c".repeat(64));
        assert_ne!(parse(&rehashed, "t").unwrap().key(), lock.key());
    }

    #[test]
    fn malformed_lines_are_named_with_their_line_number() {
        for (bad, why) in [
            (
                "x>=1.0 --hash=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  # x.whl",
                "not an exact `==` pin",
            ),
            ("x==1.0  # x-1.0-py3-none-any.whl", "no --hash"),
            (
                "x==1.0 --hash=sha256:ABC  # x-1.0-py3-none-any.whl",
                "not 64 lowercase hex",
            ),
            (
                "x==1.0 --hash=md5:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  # x.whl",
                "not --hash=sha256",
            ),
            (
                "x==1.0 --hash=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "no `# WHEEL.whl`",
            ),
        ] {
            let text = format!("# python: cp311\n# platform: linux x86_64\n{bad}\n");
            let err = parse(&text, "t.lock").unwrap_err();
            assert!(err.starts_with("t.lock line 3: expected"), "{err}");
            assert!(err.contains(why), "{bad}: {err}");
        }
        let dup = format!(
            "{GOOD}foo-bar==1.0 --hash=sha256:{}  # f.whl\n",
            "a".repeat(64)
        );
        assert!(parse(&dup, "t").unwrap_err().contains("locked twice"));
        let no_header = GOOD.replace("# python: cp311\n", "");
        assert!(parse(&no_header, "t")
            .unwrap_err()
            .contains("# python: cp3NN"));
    }

    #[test]
    fn merging_adds_wheels_and_refuses_a_second_pin() {
        let a = parse(GOOD, "a").unwrap();
        let extra = format!(
            "# python: cp311\n# platform: linux x86_64\nnew==1 --hash=sha256:{}  # new-1-py3-none-any.whl\n",
            "d".repeat(64)
        );
        let merged = a.merged(&parse(&extra, "b").unwrap()).unwrap();
        assert_eq!(merged.entries.len(), 3);
        let clash = format!(
            "# python: cp311\n# platform: linux x86_64\nfoo-bar==1.1 --hash=sha256:{}  # f-1.1-py3-none-any.whl\n",
            "a".repeat(64)
        );
        assert!(a
            .merged(&parse(&clash, "b").unwrap())
            .unwrap_err()
            .contains("expected one pin"));
    }

    #[test]
    fn the_builtin_sdk_lock_parses_and_pins_the_profile_wheel() {
        let lock = parse(
            include_str!("../../gates/profiles/sdk/langbot-plugin-0.6.0b5.lock"),
            "sdk",
        )
        .unwrap();
        let sdk = lock.find("langbot-plugin").unwrap();
        assert_eq!(sdk.version, "0.6.0b5");
        assert_eq!(
            sdk.sha256,
            "15c5a60765db34e5a0216eab205178fb06c6447d286f648008aa89207e75d667"
        );
        for name in ["pytest", "pytest-asyncio", "pydantic-core", "pip"] {
            assert!(lock.find(name).is_some(), "{name}");
        }
    }
}
