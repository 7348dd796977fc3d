//! Every reader of untrusted bytes, as a fuzz target: the RECORD parser,
//! the ZIP central-directory reader and its findings, tar extraction, the
//! manifest readers, the profile parser and the pytest JUnit reader.
//!
//! Each [`Target`] has valid seed inputs and a function that feeds it one
//! input and returns normally whatever the bytes are: a panic is a defect.
//! [`mutate`] derives inputs from the seeds (bit flips, interesting
//! integers, insertions, deletions, duplications, splices, truncations)
//! with a small seeded generator ([`Rng`]), so a run is reproducible from
//! its seed. Two drivers use them: the property tests
//! (`tests/it/fuzz_readers.rs`, a few hundred cases each, in the test command)
//! and `cargo xtask fuzz [--execs N]` (`examples/fuzz.rs`, 1,000,000
//! executions per reader by default, with an allocation limit and a hang
//! watchdog).

use std::io::Cursor;
use std::path::{Path, PathBuf};

/// Most bytes an input grows to by mutation.
pub const MAX_INPUT: usize = 64 * 1024;

/// One reader under test.
pub struct Target {
    /// Stable name (`record`, `zip-central-directory`, ...).
    pub name: &'static str,
    /// Valid inputs to mutate.
    pub seeds: Vec<Vec<u8>>,
    /// Feeds one input to the reader; true when the reader accepted it
    /// (so a run can tell how many inputs got past the first refusal).
    pub run: fn(&mut Scratch, &[u8]) -> bool,
}

/// Per-driver scratch space: a private directory for the readers that work
/// on files (tar extraction, the manifest file reader).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// Uses `dir` (created) as scratch space; it should be private and on a
    /// fast file system.
    ///
    /// # Errors
    /// When `dir` cannot be created.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }
}

/// xorshift64*: small, fast, seeded; not for cryptography.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is remapped).
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Values that make length and offset fields interesting.
const INTERESTING: &[u64] = &[
    0,
    1,
    0x7F,
    0x80,
    0xFF,
    0x100,
    0x7FFF,
    0xFFFF,
    0x1_0000,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
    0x1_0000_0000,
    0x7FFF_FFFF_FFFF_FFFF,
    u64::MAX,
];

/// Tokens that matter to the text formats (CSV, YAML, TOML, XML).
const TOKENS: &[&[u8]] = &[
    b",",
    b"\"",
    b"\n",
    b"\r\n",
    b"sha256=",
    b"=",
    b"..",
    b"/",
    b"&a ",
    b"*a",
    b"<<: ",
    b"!!binary ",
    b"- ",
    b": ",
    b"[[",
    b"]]",
    b"{",
    b"}",
    b"<testcase ",
    b"</testcase>",
    b"<skipped ",
    b"<failure ",
    b"/>",
    b"&#10;",
    b"&amp;",
    b"<![CDATA[",
    b"]]>",
    b"PK\x01\x02",
    b"PK\x05\x06",
    b"PK\x06\x06",
    b"PK\x06\x07",
    b"PK\x03\x04",
    b"ustar\x00",
    b"././@LongLink",
    b"\xff\xfe",
    b"\xc3\x28",
];

/// One mutation of `data` (drawn from `pool` for splices).
fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
    let len = data.len();
    match rng.below(11) {
        0 if len > 0 => {
            let i = rng.below(len);
            data[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            data[i] = rng.next_u64() as u8;
        }
        2 if len > 0 => {
            let width = [1usize, 2, 4, 8][rng.below(4)];
            if len >= width {
                let i = rng.below(len - width + 1);
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let bytes = if rng.below(2) == 0 {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                data[i..i + width].copy_from_slice(&bytes[..width]);
            }
        }
        3 => {
            let i = rng.below(len + 1);
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u64() as u8).collect();
            data.splice(i..i, bytes);
        }
        4 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(64));
            data.drain(i..i + n);
        }
        5 if len > 0 => {
            let i = rng.below(len);
            let n = 1 + rng.below((len - i).min(256));
            let chunk = data[i..i + n].to_vec();
            let at = rng.below(len + 1);
            data.splice(at..at, chunk);
        }
        6 if len > 0 => {
            data.truncate(rng.below(len));
        }
        7 => {
            let t = TOKENS[rng.below(TOKENS.len())];
            let i = rng.below(len + 1);
            data.splice(i..i, t.iter().copied());
        }
        8 if !pool.is_empty() => {
            let other = &pool[rng.below(pool.len())];
            if !other.is_empty() {
                let from = rng.below(other.len());
                let n = 1 + rng.below((other.len() - from).min(512));
                let at = rng.below(len + 1);
                data.splice(at..at, other[from..from + n].iter().copied());
            }
        }
        9 if len > 1 => {
            // Swap two bytes: reorders fields and delimiters.
            let (a, b) = (rng.below(len), rng.below(len));
            data.swap(a, b);
        }
        _ => {
            let i = rng.below(len + 1);
            let b = [b'0', b'9', b' ', b'\t', 0, b'\\', b'#', b':'][rng.below(8)];
            data.insert(i, b);
        }
    }
}

/// An input derived from `seeds`: one seed with 1 to 8 mutations, or (one
/// time in sixteen) random bytes; never longer than [`MAX_INPUT`].
pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || rng.below(16) == 0 {
        let n = rng.below(1024);
        return (0..n).map(|_| rng.next_u64() as u8).collect();
    }
    let mut data = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        mutate_once(rng, &mut data, seeds);
    }
    data.truncate(MAX_INPUT);
    data
}

/// Every target, in a stable order.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "record",
            seeds: record_seeds(),
            run: run_record,
        },
        Target {
            name: "zip-central-directory",
            seeds: zip_seeds(),
            run: run_zip,
        },
        Target {
            name: "tar-extraction",
            seeds: tar_seeds(),
            run: run_tar,
        },
        Target {
            name: "manifest",
            seeds: manifest_seeds(),
            run: run_manifest,
        },
        Target {
            name: "profile",
            seeds: vec![crate::profile::BUILTIN_CODING_RUNNERS.as_bytes().to_vec()],
            run: run_profile,
        },
        Target {
            name: "junit",
            seeds: junit_seeds(),
            run: run_junit,
        },
    ]
}

const DIST_INFO: &str = "langbot_plugin-0.6.0b5.dist-info";

fn record_seeds() -> Vec<Vec<u8>> {
    vec![format!(
        "langbot_plugin/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
         langbot_plugin/cli/__init__.py,sha256=ypoH1lRAHRPQ0CnV3QgN4OGFIJ0qTVaGtCfuVMYK2aM,1234\n\
         \"langbot_plugin/a,b.py\",sha256=ypoH1lRAHRPQ0CnV3QgN4OGFIJ0qTVaGtCfuVMYK2aM,7\n\
         langbot_plugin/__pycache__/__init__.cpython-311.pyc,,\n\
         ../../../bin/lbp,sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,250\n\
         {DIST_INFO}/RECORD,,\n"
    )
    .into_bytes()]
}

fn run_record(_: &mut Scratch, data: &[u8]) -> bool {
    let parsed = crate::record::parse_record(data, DIST_INFO);
    assert!(parsed.rows.len() + parsed.malformed.len() <= parsed.total_rows);
    parsed.malformed.is_empty() && !parsed.rows.is_empty()
}

/// A small archive as the official build writes it (stored members), and
/// one with ZIP64 extras, a comment and a deflated member.
fn zip_seeds() -> Vec<Vec<u8>> {
    use std::io::Write;
    let mut out = Vec::new();
    for variant in 0..2 {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(0o644)
            .large_file(variant == 1);
        w.start_file("manifest.yaml", stored).expect("in memory");
        w.write_all(b"kind: Plugin\nspec:\n  pages: []\n")
            .expect("in memory");
        w.add_directory("pkg/", stored).expect("in memory");
        w.start_file("pkg/a.py", stored).expect("in memory");
        w.write_all(b"x = 1\n").expect("in memory");
        if variant == 1 {
            let deflated = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            w.start_file("readme/\u{e9}.md", deflated)
                .expect("in memory");
            w.write_all(&[b'a'; 300]).expect("in memory");
            w.set_comment("envelope");
        }
        out.push(w.finish().expect("in memory").into_inner());
    }
    out
}

fn run_zip(_: &mut Scratch, data: &[u8]) -> bool {
    let mut r = Cursor::new(data);
    let Ok(cd) = crate::lbpkg::read_central_directory(&mut r) else {
        return false;
    };
    let _ = crate::lbpkg::structure_findings(&mut r, &cd);
    let _ = crate::lbpkg::name_findings(&cd);
    let _ = crate::lbpkg::type_findings(&cd);
    let _ = crate::lbpkg::encryption_findings(&cd);
    let _ = crate::lbpkg::host_limit_findings(&cd);
    true
}

/// A `git archive`-shaped tar (directory, files, a symlink, a long name in
/// a GNU long-name entry, a pax header).
fn tar_seeds() -> Vec<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_size(0);
    b.append_data(&mut dir, "Runner/", &[][..])
        .expect("in memory");
    for (name, body) in [
        ("Runner/a.py", &b"x = 1\n"[..]),
        (
            "Runner/a-very-long-directory-name-that-needs-more-than-one-hundred-bytes-of-path/\
             and-a-file-name-that-makes-it-longer.txt",
            &b"long\n"[..],
        ),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(body.len() as u64);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, name, body).expect("in memory");
    }
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    b.append_link(&mut link, "Runner/link", "a.py")
        .expect("in memory");
    b.append_pax_extensions([("comment", &b"4b825dc642cb6eb9a060e54bf8d69288fbee4904"[..])])
        .expect("in memory");
    let mut h = tar::Header::new_ustar();
    h.set_mode(0o755);
    h.set_size(3);
    b.append_data(&mut h, "Runner/run.sh", &b"#!\n"[..])
        .expect("in memory");
    vec![b.into_inner().expect("in memory")]
}

fn run_tar(scratch: &mut Scratch, data: &[u8]) -> bool {
    let input = scratch.dir.join("input.tar");
    let dest = scratch.dir.join("out");
    if dest.exists() {
        std::fs::remove_dir_all(&dest).expect("scratch space is writable");
    }
    std::fs::write(&input, data).expect("scratch space is writable");
    let result = crate::archive::extract_tar(&input, &dest);
    if let Ok(x) = &result {
        for (rel, _) in &x.files {
            assert!(
                std::fs::symlink_metadata(dest.join(rel)).is_ok_and(|m| m.is_file()),
                "extracted file {rel:?} is not a regular file under the root"
            );
        }
        for (rel, target) in &x.symlinks {
            assert!(crate::archive::link_stays_inside(rel, target));
        }
    }
    std::fs::remove_dir_all(&dest).expect("scratch space is writable");
    result.is_ok()
}

fn manifest_seeds() -> Vec<Vec<u8>> {
    vec![
        include_bytes!("../fixtures/candidate-repo/Runner/codex-agent/manifest.yaml").to_vec(),
        b"base: &b\n  author: acme\n  name: x\nmetadata:\n  <<: *b\n  version: '1.0'\n  x-country: NO\n  \
          n: [1e3, 0o17, 1_000, on, ~, 1:30, !!binary aGk=, 2001-12-14]\n? [a, b]\n: {c: d}\n"
            .to_vec(),
    ]
}

fn run_manifest(scratch: &mut Scratch, data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let _ = crate::manifest::parse_id(&text, Path::new("manifest.yaml"));
    let parsed = crate::manifest_yaml::parse_yaml12(&text);
    if let Ok(v) = &parsed {
        assert!(crate::manifest_yaml::meaning_changes(v, v).is_empty());
        assert!(crate::manifest_diff::manifest_differences(v, v, None).is_empty());
        let _ = crate::manifest_yaml::describe(v);
    }
    // The file reader, on bytes that need not be UTF-8.
    let path = scratch.dir.join("manifest.yaml");
    std::fs::write(&path, data).expect("scratch space is writable");
    let _ = crate::manifest::read_id(&path);
    parsed.is_ok()
}

fn run_profile(_: &mut Scratch, data: &[u8]) -> bool {
    crate::profile::parse(&String::from_utf8_lossy(data), "fuzz.toml").is_ok()
}

fn junit_seeds() -> Vec<Vec<u8>> {
    vec![br#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="6" time="0.046"><testcase classname="test_shapes" name="test_xpass_strict" time="0.001"><failure message="[XPASS(strict)] strictreason">[XPASS(strict)] strictreason</failure></testcase><testcase classname="test_shapes" name="test_xpass_loose" time="0.000" /><testcase classname="test_shapes" name="test_skip" time="0.000"><skipped type="pytest.skip" message="skipreason">/tmp/x/test_shapes.py:12: skipreason</skipped></testcase><testcase classname="test_shapes" name="test_error" time="1e308"><error message="failed on setup with &quot;RuntimeError&quot;">E  RuntimeError&#10;&gt; x<![CDATA[<raw & text>]]></error></testcase><testcase classname="test_shapes" name="test_xfail" time="-1"><skipped type="pytest.xfail" message="imperative" /></testcase></testsuite></testsuites>"#.to_vec()]
}

fn run_junit(_: &mut Scratch, data: &[u8]) -> bool {
    let xfails = std::collections::HashMap::from([(
        ("test_shapes".to_string(), "test_xpass_loose".to_string()),
        Some(false),
    )]);
    let parsed = crate::gates::suites::parse_junit(&String::from_utf8_lossy(data), &xfails);
    if let Ok(cases) = &parsed {
        for c in cases {
            assert!(c.text.as_ref().is_none_or(|t| t.len() <= 8 * 1024 + 3));
        }
    }
    parsed.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_is_read_without_complaint() {
        let d = tempfile::tempdir().unwrap();
        let mut scratch = Scratch::new(d.path()).unwrap();
        for t in targets() {
            assert!(!t.seeds.is_empty(), "{}", t.name);
            for s in &t.seeds {
                assert!((t.run)(&mut scratch, s), "{}: a seed was refused", t.name);
            }
        }
        // The seeds are valid inputs, not noise.
        let zip = &zip_seeds()[0];
        let cd = crate::lbpkg::read_central_directory(&mut Cursor::new(zip)).unwrap();
        assert_eq!(cd.entries.len(), 3);
        let tar_dir = d.path().join("tar");
        std::fs::create_dir_all(&tar_dir).unwrap();
        std::fs::write(tar_dir.join("t.tar"), &tar_seeds()[0]).unwrap();
        let x = crate::archive::extract_tar(&tar_dir.join("t.tar"), &tar_dir.join("out")).unwrap();
        assert_eq!(x.files.len(), 3, "{x:?}");
        assert_eq!(x.symlinks.len(), 1);
        let parsed = crate::record::parse_record(&record_seeds()[0][..], DIST_INFO);
        assert!(parsed.malformed.is_empty(), "{:?}", parsed.malformed);
        assert_eq!(parsed.rows.len(), 6);
    }

    #[test]
    fn mutation_is_reproducible_and_bounded() {
        let seeds = vec![vec![7u8; 100]];
        let a: Vec<Vec<u8>> = {
            let mut r = Rng::new(42);
            (0..100).map(|_| mutate(&mut r, &seeds)).collect()
        };
        let mut r = Rng::new(42);
        let b: Vec<Vec<u8>> = (0..100).map(|_| mutate(&mut r, &seeds)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|x| x.len() <= MAX_INPUT));
        assert!(a.iter().any(|x| x != &seeds[0]));
    }
}
