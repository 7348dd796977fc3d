//! Reading what `git check-attr` and file heads say: which attributes
//! change the bytes `git archive` writes, which paths it leaves out, and
//! which files are Git LFS pointers. Pure functions over git's output.

use std::collections::BTreeMap;

/// Attributes the `stage` gate reads for every tree path: the two that
/// change what `git archive` includes, and those that change the bytes it
/// writes for a file (gitattributes(5): `text`, `eol` and the older `crlf`
/// convert line endings, `ident` expands `$Id$`, `filter` runs a smudge
/// driver, `working-tree-encoding` re-encodes, `export-subst` expands
/// placeholders).
pub const READ_ATTRIBUTES: &[&str] = &[
    "export-ignore",
    "export-subst",
    "text",
    "eol",
    "crlf",
    "ident",
    "filter",
    "working-tree-encoding",
];

/// Parses `git check-attr -z` output (`path NUL attribute NUL state NUL`...)
/// into `path -> [(attribute, state)]`, leaving out `unspecified` states.
pub fn parse_check_attr_z(bytes: &[u8]) -> BTreeMap<String, Vec<(String, String)>> {
    let mut map: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let fields: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
    for triple in fields.chunks(3) {
        if let [path, attr, info] = triple {
            if *info == b"unspecified" {
                continue;
            }
            map.entry(String::from_utf8_lossy(path).into_owned())
                .or_default()
                .push((
                    String::from_utf8_lossy(attr).into_owned(),
                    String::from_utf8_lossy(info).into_owned(),
                ));
        }
    }
    map
}

/// `path -> [attribute]` for the paths whose `export-ignore` or
/// `export-subst` is set.
pub fn export_attributes(
    attributes: &BTreeMap<String, Vec<(String, String)>>,
) -> BTreeMap<String, Vec<String>> {
    attributes
        .iter()
        .filter_map(|(path, attrs)| {
            let set: Vec<String> = attrs
                .iter()
                .filter(|(a, state)| {
                    (a == "export-ignore" || a == "export-subst") && state == "set"
                })
                .map(|(a, _)| a.clone())
                .collect();
            (!set.is_empty()).then(|| (path.clone(), set))
        })
        .collect()
}

/// One committed attribute that changes the bytes `git archive` writes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ByteAttribute {
    /// Repository-relative path.
    pub path: String,
    /// As gitattributes spells it: `text`, `eol=crlf`, `filter=lfs`, ...
    pub attribute: String,
}

/// Every `(path, attribute)` whose state changes bytes: `text`, `crlf`,
/// `ident` or `export-subst` set, or `text`, `crlf`, `eol`, `filter` or
/// `working-tree-encoding` given a value. An unset attribute (`-text`,
/// `binary`) turns a conversion off and is not listed.
pub fn byte_changing_attributes(
    attributes: &BTreeMap<String, Vec<(String, String)>>,
) -> Vec<ByteAttribute> {
    let mut out = Vec::new();
    for (path, attrs) in attributes {
        for (attr, state) in attrs {
            let changes = match (attr.as_str(), state.as_str()) {
                (_, "unset") => false,
                ("text" | "crlf" | "ident" | "export-subst", "set") => true,
                ("text" | "crlf" | "eol" | "filter" | "working-tree-encoding", _) => state != "set",
                _ => false,
            };
            if changes {
                out.push(ByteAttribute {
                    path: path.clone(),
                    attribute: if state == "set" {
                        attr.clone()
                    } else {
                        format!("{attr}={state}")
                    },
                });
            }
        }
    }
    out
}

/// The first line of a Git LFS pointer file (git-lfs `docs/spec.md`; the
/// pre-release `hawser` spelling too). Pointer files are under 1024 bytes.
const LFS_POINTER_VERSIONS: &[&[u8]] = &[
    b"version https://git-lfs.github.com/spec/v1\n",
    b"version https://hawser.github.com/spec/v1\n",
];

/// Whether `head` (a file's first bytes, at least 1024 of them when the file
/// is that long) of a file of `size` bytes is a Git LFS pointer.
pub fn is_lfs_pointer(head: &[u8], size: u64) -> bool {
    size < 1024 && LFS_POINTER_VERSIONS.iter().any(|v| head.starts_with(v))
}
