//! `.lbpkg` archives (ZIP): a central-directory reader that sees what the
//! SDK host sees, the host's hygiene rules and limits, streamed member
//! digests and a safe extraction.
//!
//! Why a reader of our own: the `zip` crate keys entries by name, so an
//! archive with two entries named alike shows one (the second hides the
//! first), while Python's `zipfile`, which the SDK host uses, lists both. The
//! central directory is therefore read here the way CPython 3.11's
//! `zipfile._EndRecData` / `ZipFile._RealGetContents` / `ZipInfo._decodeExtra`
//! read it, every entry kept in order. The `zip` crate then only decompresses
//! and checks CRCs, and only after [`zip_crate_disagreements`] confirmed that
//! it sees exactly the same entries at the same offsets.
//!
//! Host rules: `PluginArtifactStore._extract_verified_zip` and `_read_manifest`
//! in `langbot_plugin/runtime/plugin/artifact.py` (`langbot-plugin==0.6.0b5`).
//!
//! Memory: the end-of-central-directory search reads at most 64 KiB + 22
//! bytes; the central directory is streamed; member data is streamed through
//! a 64 KiB buffer. Nothing holds a whole member or archive.

use crate::hash::{self, Sha256Digest};
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Most entries the host accepts (`_MAX_ARTIFACT_ENTRIES`).
pub const HOST_MAX_ENTRIES: usize = 512;
/// Most uncompressed bytes of one entry (`_MAX_ARTIFACT_ENTRY_UNCOMPRESSED_BYTES`, 16 MiB).
pub const HOST_MAX_ENTRY_BYTES: u64 = 16 * 1024 * 1024;
/// Most uncompressed bytes of all file entries (`_MAX_ARTIFACT_TOTAL_UNCOMPRESSED_BYTES`, 64 MiB).
pub const HOST_MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// Most bytes of `manifest.yaml` the host reads (`_MAX_ARTIFACT_MANIFEST_BYTES`, 1 MiB).
pub const HOST_MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Highest uncompressed/compressed ratio, per entry and in aggregate
/// (`_MAX_ARTIFACT_COMPRESSION_RATIO`).
pub const HOST_MAX_RATIO: f64 = 100.0;

/// Entries listed before the reader gives up (far above [`HOST_MAX_ENTRIES`];
/// bounds memory on a hostile central directory).
pub const READER_MAX_ENTRIES: usize = 65_536;

const EOCD_SIG: &[u8; 4] = b"PK\x05\x06";
const EOCD64_LOCATOR_SIG: &[u8; 4] = b"PK\x06\x07";
const EOCD64_SIG: &[u8; 4] = b"PK\x06\x06";
const CENTRAL_SIG: &[u8; 4] = b"PK\x01\x02";
const LOCAL_SIG: &[u8; 4] = b"PK\x03\x04";
const EOCD_LEN: u64 = 22;
const EOCD64_LOCATOR_LEN: u64 = 20;
const EOCD64_LEN: u64 = 56;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: usize = 30;
/// `zipfile.MAX_EXTRACT_VERSION`.
const MAX_EXTRACT_VERSION: u8 = 63;
const FLAG_ENCRYPTED: u16 = 0x1;
const FLAG_COMPRESSED_PATCH: u16 = 0x20;
const FLAG_STRONG_ENCRYPTION: u16 = 0x40;
const FLAG_UTF8: u16 = 0x800;
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// One central-directory entry, as `zipfile.ZipInfo` holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CentralEntry {
    /// Position in the central directory, from 0.
    pub index: usize,
    /// The stored name bytes.
    pub raw_name: Vec<u8>,
    /// The decoded name (UTF-8 when flag bit 11 is set, else CP437):
    /// `ZipInfo.orig_filename`.
    pub orig_name: String,
    /// `orig_name` cut at the first NUL: `ZipInfo.filename`.
    pub name: String,
    /// "Version made by" system byte (3 = Unix).
    pub create_system: u8,
    /// "Version needed to extract".
    pub extract_version: u8,
    /// General-purpose flag bits.
    pub flags: u16,
    /// Compression method (0 stored, 8 deflate, 99 AES).
    pub compression: u16,
    /// CRC-32 of the uncompressed data.
    pub crc32: u32,
    /// Compressed size in bytes (ZIP64-extended).
    pub compressed_size: u64,
    /// Uncompressed size in bytes (ZIP64-extended).
    pub size: u64,
    /// External attributes; a Unix mode lives in the high 16 bits.
    pub external_attr: u32,
    /// Offset of the local header (ZIP64-extended, adjusted for prepended data).
    pub header_offset: u64,
}

impl CentralEntry {
    /// `(external_attr >> 16) & 0xFFFF`, as the host computes it.
    pub fn unix_mode(&self) -> u32 {
        (self.external_attr >> 16) & 0xFFFF
    }

    /// `stat.S_IFMT` of [`Self::unix_mode`] (0: no type recorded).
    pub fn file_type(&self) -> u32 {
        self.unix_mode() & S_IFMT
    }

    /// The host's directory test: `info.is_dir()` or the name, with `\` read
    /// as `/`, ends with `/`.
    pub fn is_dir(&self) -> bool {
        self.name.ends_with('/') || self.name.ends_with('\\')
    }

    /// Permission bits as 4-digit octal text (`0644`), or `None` when the
    /// entry records no Unix mode (high 16 bits of the external attributes 0).
    pub fn mode_text(&self) -> Option<String> {
        match self.unix_mode() {
            0 => None,
            m => Some(format!("{:04o}", m & 0o7777)),
        }
    }

    /// Flag bit 0 (traditional encryption), bit 6 (strong encryption) or
    /// method 99 (AES).
    pub fn encrypted(&self) -> bool {
        self.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION) != 0 || self.compression == 99
    }
}

/// An archive's central directory.
#[derive(Debug, Clone)]
pub struct CentralDirectory {
    /// The archive comment (end-of-central-directory record).
    pub comment: Vec<u8>,
    /// Every entry, in central-directory order, duplicates included.
    pub entries: Vec<CentralEntry>,
    /// Bytes before the offsets the archive claims (`concat` in `zipfile`):
    /// non-zero when data was prepended.
    pub prepended: i64,
    /// Whether the ZIP64 end record was used.
    pub zip64: bool,
}

fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64le(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// CP437, bytes 0x80..=0xFF (0x00..=0x7F are ASCII), as Python's `cp437` codec.
const CP437_HIGH: &str = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u{a0}";

/// Decodes a stored name as `zipfile` does: UTF-8 (strict) when `utf8`, else CP437.
///
/// # Errors
/// Invalid UTF-8 under the UTF-8 flag (Python raises `UnicodeDecodeError`).
pub fn decode_name(raw: &[u8], utf8: bool) -> Result<String, String> {
    if utf8 {
        return String::from_utf8(raw.to_vec()).map_err(|e| {
            format!("name bytes {raw:?} are flagged UTF-8 but are not valid UTF-8 ({e})")
        });
    }
    let high: Vec<char> = CP437_HIGH.chars().collect();
    Ok(raw
        .iter()
        .map(|&b| {
            if b < 0x80 {
                b as char
            } else {
                high[(b - 0x80) as usize]
            }
        })
        .collect())
}

/// Finds the end-of-central-directory record like `zipfile._EndRecData`
/// (then `_EndRecData64`): returns `(entries_size, entries_offset, comment,
/// record_location, zip64)`.
fn end_record<R: Read + Seek>(r: &mut R) -> Result<(u64, u64, Vec<u8>, u64, bool), String> {
    let file_size = r
        .seek(SeekFrom::End(0))
        .map_err(|e| format!("cannot seek: {e}"))?;
    if file_size < EOCD_LEN {
        return Err(format!(
            "{file_size} bytes is too short for a ZIP archive (File is not a zip file)"
        ));
    }
    let read_at = |r: &mut R, at: u64, len: u64| -> Result<Vec<u8>, String> {
        r.seek(SeekFrom::Start(at))
            .map_err(|e| format!("cannot seek: {e}"))?;
        let mut buf = Vec::new();
        r.take(len)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read: {e}"))?;
        Ok(buf)
    };
    let tail = read_at(r, file_size - EOCD_LEN, EOCD_LEN)?;
    let (record, comment, location) = if &tail[..4] == EOCD_SIG && tail[20..22] == [0, 0] {
        (tail, Vec::new(), file_size - EOCD_LEN)
    } else {
        let max_comment_start = file_size.saturating_sub((1 << 16) + EOCD_LEN);
        let data = read_at(r, max_comment_start, u64::MAX)?; // to the end: 64 KiB + 22 bytes at most
        let start = data
            .windows(4)
            .rposition(|w| w == EOCD_SIG)
            .ok_or_else(|| {
                "no end-of-central-directory record (File is not a zip file)".to_string()
            })?;
        if data.len() - start < EOCD_LEN as usize {
            return Err(
                "truncated end-of-central-directory record (File is not a zip file)".into(),
            );
        }
        let record = data[start..start + EOCD_LEN as usize].to_vec();
        let comment_len = u16le(&record, 20) as usize;
        let from = start + EOCD_LEN as usize;
        let comment = data[from..(from + comment_len).min(data.len())].to_vec();
        (record, comment, max_comment_start + start as u64)
    };
    let mut size = u32le(&record, 12) as u64;
    let mut offset = u32le(&record, 16) as u64;
    let mut zip64 = false;
    // _EndRecData64: a locator right before the record, then the ZIP64 record.
    if location >= EOCD64_LOCATOR_LEN {
        let loc = read_at(r, location - EOCD64_LOCATOR_LEN, EOCD64_LOCATOR_LEN)?;
        if loc.len() == EOCD64_LOCATOR_LEN as usize && &loc[..4] == EOCD64_LOCATOR_SIG {
            let disk = u32le(&loc, 4);
            let disks = u32le(&loc, 16);
            if disk != 0 || disks > 1 {
                return Err("the archive spans multiple disks (not supported)".into());
            }
            // zipfile's seek to the ZIP64 record is unguarded: before the
            // start of the file it raises, and the archive is refused.
            if location < EOCD64_LOCATOR_LEN + EOCD64_LEN {
                return Err(
                    "a ZIP64 locator points before the start of the file (File is not a zip file)"
                        .into(),
                );
            }
            let rec = read_at(r, location - EOCD64_LOCATOR_LEN - EOCD64_LEN, EOCD64_LEN)?;
            if rec.len() == EOCD64_LEN as usize && &rec[..4] == EOCD64_SIG {
                size = u64le(&rec, 40);
                offset = u64le(&rec, 48);
                zip64 = true;
            }
        }
    }
    Ok((size, offset, comment, location, zip64))
}

/// Reads the central directory as CPython 3.11's `zipfile` does.
///
/// # Errors
/// A sentence when `zipfile` would refuse the archive (`BadZipFile`,
/// `NotImplementedError`, `UnicodeDecodeError`), or when it lists more than
/// [`READER_MAX_ENTRIES`] entries.
pub fn read_central_directory<R: Read + Seek>(r: &mut R) -> Result<CentralDirectory, String> {
    let (size_cd, offset_cd, comment, location, zip64) = end_record(r)?;
    let mut concat = location as i128 - size_cd as i128 - offset_cd as i128;
    if zip64 {
        concat -= (EOCD64_LEN + EOCD64_LOCATOR_LEN) as i128;
    }
    let start_dir = offset_cd as i128 + concat;
    if start_dir < 0 {
        return Err("bad offset for the central directory".into());
    }
    r.seek(SeekFrom::Start(start_dir as u64))
        .map_err(|e| format!("cannot seek: {e}"))?;
    let mut cd = BufReader::new(r.take(size_cd));
    let mut entries = Vec::new();
    let mut total: u64 = 0;
    while total < size_cd {
        let mut h = [0u8; CENTRAL_LEN];
        read_full(&mut cd, &mut h).map_err(|_| "truncated central directory".to_string())?;
        if &h[..4] != CENTRAL_SIG {
            return Err("bad magic number for central directory".into());
        }
        let name_len = u16le(&h, 28) as usize;
        let extra_len = u16le(&h, 30) as usize;
        let comment_len = u16le(&h, 32) as usize;
        // zipfile reads short fields silently (BytesIO); so do we.
        let raw_name = read_up_to(&mut cd, name_len)?;
        let extra = read_up_to(&mut cd, extra_len)?;
        let _entry_comment = read_up_to(&mut cd, comment_len)?;
        let flags = u16le(&h, 8);
        let orig_name = decode_name(&raw_name, flags & FLAG_UTF8 != 0)?;
        let name = orig_name.split('\0').next().unwrap_or("").to_string();
        let extract_version = h[6];
        if extract_version > MAX_EXTRACT_VERSION {
            return Err(format!(
                "entry {name:?} needs zip version {:.1} (not supported)",
                f64::from(extract_version) / 10.0
            ));
        }
        let mut entry = CentralEntry {
            index: entries.len(),
            raw_name,
            orig_name,
            name,
            create_system: h[5],
            extract_version,
            flags,
            compression: u16le(&h, 10),
            crc32: u32le(&h, 16),
            compressed_size: u32le(&h, 20) as u64,
            size: u32le(&h, 24) as u64,
            external_attr: u32le(&h, 38),
            header_offset: u32le(&h, 42) as u64,
        };
        decode_zip64_extra(&mut entry, &extra)?;
        let adjusted = entry.header_offset as i128 + concat;
        entry.header_offset = u64::try_from(adjusted)
            .map_err(|_| format!("entry {:?}: bad header offset", entry.name))?;
        entries.push(entry);
        if entries.len() > READER_MAX_ENTRIES {
            return Err(format!(
                "more than {READER_MAX_ENTRIES} entries in the central directory (the host allows {HOST_MAX_ENTRIES})"
            ));
        }
        total += (CENTRAL_LEN + name_len + extra_len + comment_len) as u64;
    }
    Ok(CentralDirectory {
        comment,
        entries,
        prepended: concat as i64,
        zip64,
    })
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<()> {
    r.read_exact(buf)
}

fn read_up_to(r: &mut impl Read, len: usize) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(len);
    r.take(len as u64)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read the central directory: {e}"))?;
    Ok(buf)
}

/// `ZipInfo._decodeExtra`: the ZIP64 extra field (id 1) replaces sizes and
/// the header offset that are saturated.
fn decode_zip64_extra(entry: &mut CentralEntry, mut extra: &[u8]) -> Result<(), String> {
    while extra.len() >= 4 {
        let tp = u16le(extra, 0);
        let ln = u16le(extra, 2) as usize;
        if ln + 4 > extra.len() {
            return Err(format!(
                "entry {:?}: corrupt extra field {tp:04x} (size={ln})",
                entry.name
            ));
        }
        if tp == 1 {
            let mut data = &extra[4..ln + 4];
            let mut take = |field: &str| -> Result<u64, String> {
                if data.len() < 8 {
                    return Err(format!(
                        "entry {:?}: corrupt zip64 extra field; {field} not found",
                        entry.name
                    ));
                }
                let v = u64le(data, 0);
                data = &data[8..];
                Ok(v)
            };
            if entry.size == 0xFFFF_FFFF || entry.size == u64::MAX {
                entry.size = take("File size")?;
            }
            if entry.compressed_size == 0xFFFF_FFFF {
                entry.compressed_size = take("Compress size")?;
            }
            if entry.header_offset == 0xFFFF_FFFF {
                entry.header_offset = take("Header offset")?;
            }
        }
        extra = &extra[ln + 4..];
    }
    Ok(())
}

/// Checks entry `e`'s local header as `ZipFile.open` does (signature, flag
/// bits 5 and 6, name equal to the central directory's) and returns the
/// offset of its data.
///
/// # Errors
/// A sentence naming the entry and what `zipfile` would raise.
pub fn local_data_offset<R: Read + Seek>(r: &mut R, e: &CentralEntry) -> Result<u64, String> {
    r.seek(SeekFrom::Start(e.header_offset))
        .map_err(|err| format!("entry {:?}: cannot seek: {err}", e.name))?;
    let mut h = [0u8; LOCAL_LEN];
    r.read_exact(&mut h)
        .map_err(|_| format!("entry {:?}: truncated local file header", e.name))?;
    if &h[..4] != LOCAL_SIG {
        return Err(format!(
            "entry {:?}: bad magic number for its local file header",
            e.name
        ));
    }
    let flags = u16le(&h, 6);
    let name_len = u16le(&h, 26) as u64;
    let extra_len = u16le(&h, 28) as u64;
    let mut raw = Vec::new();
    r.take(name_len)
        .read_to_end(&mut raw)
        .map_err(|err| format!("entry {:?}: {err}", e.name))?;
    if e.flags & FLAG_COMPRESSED_PATCH != 0 {
        return Err(format!(
            "entry {:?}: compressed patched data (flag bit 5) is not supported",
            e.name
        ));
    }
    if e.flags & FLAG_STRONG_ENCRYPTION != 0 {
        return Err(format!(
            "entry {:?}: strong encryption (flag bit 6) is not supported",
            e.name
        ));
    }
    let local = decode_name(&raw, flags & FLAG_UTF8 != 0)
        .map_err(|m| format!("entry {:?}: local header {m}", e.name))?;
    if local != e.orig_name {
        return Err(format!(
            "entry {:?}: the central directory and the local header name it differently ({:?} vs {local:?})",
            e.orig_name, e.orig_name
        ));
    }
    Ok(e.header_offset + LOCAL_LEN as u64 + name_len + extra_len)
}

/// Structural findings: prepended data, local headers `zipfile` would refuse,
/// compression methods this harness cannot read (it reads stored and
/// deflate; the official build writes stored).
pub fn structure_findings<R: Read + Seek>(r: &mut R, cd: &CentralDirectory) -> Vec<String> {
    let mut out = Vec::new();
    if cd.prepended != 0 {
        out.push(format!(
            "{} bytes lie before the offsets the central directory records (data prepended to the archive)",
            cd.prepended
        ));
    }
    for e in &cd.entries {
        if let Err(m) = local_data_offset(r, e) {
            out.push(m);
        }
        if !matches!(e.compression, 0 | 8) && !e.encrypted() {
            out.push(format!(
                "entry {:?}: compression method {} (expected 0 stored or 8 deflate)",
                e.name, e.compression
            ));
        }
    }
    out
}

/// Where the `zip` crate's view of the archive differs from `cd`: entry
/// count (duplicate names collapse there), names, local header offsets,
/// sizes and the comment. Member data is read through the `zip` crate only
/// when this is empty.
pub fn zip_crate_disagreements(path: &Path, cd: &CentralDirectory) -> Vec<String> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return vec![format!("cannot open: {e}")],
    };
    let mut za = match zip::ZipArchive::new(BufReader::new(file)) {
        Ok(z) => z,
        Err(e) => return vec![format!("the zip crate refuses the archive: {e}")],
    };
    let mut out = Vec::new();
    if za.len() != cd.entries.len() {
        out.push(format!(
            "the central directory lists {} entries but a name-keyed reader sees {} (entries with the same name hide each other)",
            cd.entries.len(),
            za.len()
        ));
        return out;
    }
    if za.comment() != cd.comment.as_slice() {
        out.push("the two readers find different archive comments".into());
    }
    for e in &cd.entries {
        match za.by_index_raw(e.index) {
            Ok(f) => {
                if f.name() != e.name
                    || f.header_start() != e.header_offset
                    || f.size() != e.size
                    || f.compressed_size() != e.compressed_size
                {
                    out.push(format!(
                        "entry {}: readers disagree (name {:?}/{:?}, offset {}/{}, size {}/{})",
                        e.index,
                        e.name,
                        f.name(),
                        e.header_offset,
                        f.header_start(),
                        e.size,
                        f.size()
                    ));
                }
            }
            Err(err) => out.push(format!(
                "entry {:?}: the zip crate cannot read it: {err}",
                e.name
            )),
        }
    }
    out
}

/// `posixpath.normpath`.
pub fn posix_normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        2
    } else if path.starts_with('/') {
        1
    } else {
        0
    };
    let mut comps: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        if comp.is_empty() || comp == "." {
            continue;
        }
        if comp != ".." || (initial == 0 && comps.is_empty()) || comps.last() == Some(&"..") {
            comps.push(comp);
        } else if !comps.is_empty() {
            comps.pop();
        }
    }
    let joined = format!("{}{}", "/".repeat(initial), comps.join("/"));
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// The host's unsafe-path test for a member name (already cut at NUL).
fn host_unsafe(name: &str) -> bool {
    let portable = name.replace('\\', "/");
    let normalized = posix_normpath(&portable);
    let first = normalized.split('/').next().unwrap_or("");
    portable.starts_with('/')
        || matches!(normalized.as_str(), "" | "." | "..")
        || normalized.starts_with("../")
        || portable.split('/').any(|p| p == "..")
        || first.chars().nth(1) == Some(':')
}

/// Whether the host would refuse or misplace a member named `name`: it is
/// absolute, climbs out with `..`, names a drive, or holds a backslash (the
/// host reads `\` as a separator). On Linux such a name can be a committed
/// file's own name (`a\..\b.py` is one file name there), which the build
/// copies as it is.
pub fn unsafe_on_host(name: &str) -> bool {
    host_unsafe(name) || name.contains('\\')
}

/// Member-name findings: empty or NUL names; absolute, `..`, drive-letter or
/// backslash names; `.` or empty components (never written by the build);
/// duplicates after the host's normalisation; a file where another member
/// needs a directory, or the reverse (the host's conflict rules, in order).
pub fn name_findings(cd: &CentralDirectory) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut seen_set: BTreeSet<String> = BTreeSet::new();
    let mut regular: BTreeSet<String> = BTreeSet::new();
    for e in &cd.entries {
        let shown = &e.orig_name;
        if e.orig_name.is_empty() || e.orig_name.contains('\0') {
            out.push(format!(
                "entry {} has an empty name or a NUL byte in its name ({shown:?})",
                e.index
            ));
            continue;
        }
        if host_unsafe(&e.name) {
            out.push(format!(
                "{shown:?} is absolute, climbs out with `..` or names a drive"
            ));
            continue;
        }
        if e.name.contains('\\') {
            out.push(format!("{shown:?} contains a backslash"));
        }
        let body = e.name.strip_suffix('/').unwrap_or(&e.name);
        if body.split('/').any(|c| c.is_empty() || c == ".") {
            out.push(format!("{shown:?} has an empty or `.` path component"));
        }
        let normalized = posix_normpath(&e.name.replace('\\', "/"));
        if !seen_set.insert(normalized.clone()) {
            out.push(format!(
                "{shown:?} is a duplicate of an earlier member (both name {normalized:?})"
            ));
            continue;
        }
        seen.push(normalized.clone());
        let mut parent = normalized.as_str();
        while let Some((p, _)) = parent.rsplit_once('/') {
            if regular.contains(p) {
                out.push(format!("{shown:?} needs {p:?} to be a directory, but an earlier member is a file there"));
            }
            parent = p;
        }
        if !e.is_dir() {
            let prefix = format!("{normalized}/");
            if seen.iter().any(|s| s.starts_with(&prefix)) {
                out.push(format!(
                    "{shown:?} is a file where an earlier member needs a directory"
                ));
            }
            regular.insert(normalized);
        }
    }
    out
}

/// Member-type findings (host rules): symbolic links; anything but regular
/// files and directories; a directory name with a non-directory type or a
/// file name with a directory type; a directory entry with content.
pub fn type_findings(cd: &CentralDirectory) -> Vec<String> {
    let mut out = Vec::new();
    for e in &cd.entries {
        let ft = e.file_type();
        let n = &e.orig_name;
        if ft == S_IFLNK {
            out.push(format!(
                "{n:?} is a symbolic link (mode {:06o})",
                e.unix_mode()
            ));
            continue;
        }
        if ![0, S_IFREG, S_IFDIR].contains(&ft) {
            out.push(format!(
                "{n:?} is neither a regular file nor a directory (mode {:06o})",
                e.unix_mode()
            ));
            continue;
        }
        if e.is_dir() && ![0, S_IFDIR].contains(&ft) {
            out.push(format!(
                "{n:?} is named like a directory but has file type {:06o}",
                ft
            ));
        }
        if !e.is_dir() && ![0, S_IFREG].contains(&ft) {
            out.push(format!(
                "{n:?} is named like a file but has file type {:06o}",
                ft
            ));
        }
        if e.is_dir() && e.size != 0 {
            out.push(format!("directory {n:?} has {} bytes of content", e.size));
        }
    }
    out
}

/// Encrypted members (flag bit 0 or 6, or AES).
pub fn encryption_findings(cd: &CentralDirectory) -> Vec<String> {
    cd.entries
        .iter()
        .filter(|e| e.encrypted())
        .map(|e| {
            format!(
                "{:?} is encrypted (flags {:#06x}, method {})",
                e.orig_name, e.flags, e.compression
            )
        })
        .collect()
}

/// The host's size limits, computed as `_extract_verified_zip` computes them:
/// entry count (directories included); per file entry the uncompressed size
/// and `file_size / compress_size` (a compressed size of 0 with content
/// fails); the running total of file entries; the aggregate ratio; plus
/// `_read_manifest`'s limit on `manifest.yaml`.
pub fn host_limit_findings(cd: &CentralDirectory) -> Vec<String> {
    let mut out = Vec::new();
    if cd.entries.len() > HOST_MAX_ENTRIES {
        out.push(format!(
            "{} entries (maximum {HOST_MAX_ENTRIES})",
            cd.entries.len()
        ));
    }
    let mut total_compressed: u64 = 0;
    let mut total_uncompressed: u64 = 0;
    let mut total_reported = false;
    for e in &cd.entries {
        if e.is_dir() {
            continue;
        }
        if e.size > HOST_MAX_ENTRY_BYTES {
            out.push(format!(
                "{:?}: {} bytes uncompressed (maximum {HOST_MAX_ENTRY_BYTES} per entry)",
                e.name, e.size
            ));
        }
        if e.size != 0
            && (e.compressed_size == 0 || e.size as f64 / e.compressed_size as f64 > HOST_MAX_RATIO)
        {
            out.push(format!(
                "{:?}: compression ratio {} / {} exceeds {HOST_MAX_RATIO}",
                e.name, e.size, e.compressed_size
            ));
        }
        total_compressed = total_compressed.saturating_add(e.compressed_size);
        total_uncompressed = total_uncompressed.saturating_add(e.size);
        if total_uncompressed > HOST_MAX_TOTAL_BYTES && !total_reported {
            out.push(format!(
                "more than {HOST_MAX_TOTAL_BYTES} bytes uncompressed in total"
            ));
            total_reported = true;
        }
        if e.name == "manifest.yaml" && e.size > HOST_MAX_MANIFEST_BYTES {
            out.push(format!(
                "manifest.yaml: {} bytes (the host reads at most {HOST_MAX_MANIFEST_BYTES})",
                e.size
            ));
        }
    }
    if total_uncompressed != 0
        && (total_compressed == 0
            || total_uncompressed as f64 / total_compressed as f64 > HOST_MAX_RATIO)
    {
        out.push(format!(
            "aggregate compression ratio {total_uncompressed} / {total_compressed} exceeds {HOST_MAX_RATIO}"
        ));
    }
    out
}

/// One member's streamed digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDigest {
    /// Member name as stored (cut at NUL; hygiene refuses NUL anyway).
    pub name: String,
    /// sha256 hex of the uncompressed bytes.
    pub sha256: String,
    /// Uncompressed bytes actually read.
    pub size: u64,
    /// [`CentralEntry::mode_text`].
    pub mode: Option<String>,
    /// A directory entry.
    pub is_dir: bool,
}

/// Streams every member of the archive at `path` (entries `cd`) through
/// sha256 and, when `extract_to` is given, writes it under that directory.
///
/// Call only when the hygiene findings are empty and
/// [`zip_crate_disagreements`] is empty: names are then safe and unique, and
/// the `zip` crate's index `i` is central-directory entry `i`. Extraction
/// creates `extract_to` (it must not exist), never follows or creates a
/// symlink (each directory is created by us; files are created with
/// `O_EXCL`), and gives each file the member's permission bits (`0644` when
/// the member records none).
///
/// # Errors
/// A sentence naming the member: unreadable data, CRC mismatch, a size other
/// than the central directory's, or a write failure.
pub fn hash_members(
    path: &Path,
    cd: &CentralDirectory,
    extract_to: Option<&Path>,
) -> Result<Vec<MemberDigest>, String> {
    let file = File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    let mut za = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(root) = extract_to {
        if fs::symlink_metadata(root).is_ok() {
            return Err(format!(
                "{}: already exists; extraction needs a fresh directory",
                root.display()
            ));
        }
        fs::create_dir_all(root).map_err(|e| format!("{}: cannot create: {e}", root.display()))?;
    }
    let mut out = Vec::with_capacity(cd.entries.len());
    for e in &cd.entries {
        let mut member = za
            .by_index(e.index)
            .map_err(|err| format!("member {:?}: cannot read: {err}", e.name))?;
        let target = match extract_to {
            Some(root) => Some(prepare_target(root, &e.name, e.is_dir())?),
            None => None,
        };
        let limited = (&mut member).take(e.size.saturating_add(1));
        let digest = match (&target, e.is_dir()) {
            (Some(t), false) => {
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(t)
                    .map_err(|err| format!("{}: cannot create: {err}", t.display()))?;
                let d = hash::sha256_reader(Tee {
                    inner: limited,
                    out: &mut f,
                })
                .map_err(|err| format!("member {:?}: {err}", e.name))?;
                f.flush().map_err(|err| format!("{}: {err}", t.display()))?;
                drop(f);
                let mode = match e.unix_mode() & 0o777 {
                    0 if e.unix_mode() == 0 => 0o644,
                    m => m,
                };
                fs::set_permissions(t, fs::Permissions::from_mode(mode))
                    .map_err(|err| format!("{}: cannot set mode: {err}", t.display()))?;
                d
            }
            _ => {
                hash::sha256_reader(limited).map_err(|err| format!("member {:?}: {err}", e.name))?
            }
        };
        if digest.size != e.size {
            return Err(format!(
                "member {:?}: yields {}{} bytes, the central directory says {}",
                e.name,
                if digest.size > e.size {
                    "more than "
                } else {
                    ""
                },
                digest.size.min(e.size.saturating_add(1)),
                e.size
            ));
        }
        out.push(member_digest(e, &digest));
    }
    Ok(out)
}

fn member_digest(e: &CentralEntry, d: &Sha256Digest) -> MemberDigest {
    MemberDigest {
        name: e.name.clone(),
        sha256: d.hex(),
        size: d.size,
        mode: e.mode_text(),
        is_dir: e.is_dir(),
    }
}

/// Creates the directories leading to member `name` under `root` (one at a
/// time, refusing anything that exists and is not a real directory) and
/// returns the member's path. A directory member's own directory is created
/// too.
fn prepare_target(root: &Path, name: &str, is_dir: bool) -> Result<std::path::PathBuf, String> {
    let body = name.strip_suffix('/').unwrap_or(name);
    let parts: Vec<&str> = body.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\\') || p.contains('\0'))
    {
        return Err(format!("member {name:?}: unsafe name, not extracted"));
    }
    let dirs = if is_dir {
        &parts[..]
    } else {
        &parts[..parts.len() - 1]
    };
    let mut cur = root.to_path_buf();
    for d in dirs {
        cur.push(d);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => return Err(format!("{}: exists and is not a directory", cur.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&cur)
                    .map_err(|err| format!("{}: cannot create: {err}", cur.display()))?;
            }
            Err(e) => return Err(format!("{}: {e}", cur.display())),
        }
    }
    Ok(if is_dir {
        cur
    } else {
        cur.join(parts[parts.len() - 1])
    })
}

/// A reader that copies everything it yields into `out`.
struct Tee<'a, R: Read, W: Write> {
    inner: R,
    out: &'a mut W,
}

impl<R: Read, W: Write> Read for Tee<'_, R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.out.write_all(&buf[..n])?;
        Ok(n)
    }
}

/// Differences between the extraction at `root` and `members`: every file
/// member re-hashed from disk, every directory member present, and nothing
/// else in the tree (symlinks and other types are findings).
pub fn extraction_findings(root: &Path, members: &[MemberDigest]) -> Vec<String> {
    let mut out = Vec::new();
    let mut expected_files = BTreeSet::new();
    let mut expected_dirs = BTreeSet::new();
    for m in members {
        if m.is_dir {
            expected_dirs.insert(m.name.trim_end_matches('/').to_string());
            continue;
        }
        expected_files.insert(m.name.clone());
        let mut p = root.to_path_buf();
        p.extend(m.name.split('/'));
        match fs::symlink_metadata(&p) {
            Ok(meta) if meta.file_type().is_file() => match hash::sha256_file(&p) {
                Ok(d) if d.hex() == m.sha256 && d.size == m.size => {}
                Ok(d) => out.push(format!(
                    "{}: sha256 {} ({} bytes), member says {} ({} bytes)",
                    m.name,
                    d.hex(),
                    d.size,
                    m.sha256,
                    m.size
                )),
                Err(e) => out.push(format!("{}: cannot re-read: {e}", m.name)),
            },
            Ok(_) => out.push(format!("{}: not a regular file after extraction", m.name)),
            Err(e) => out.push(format!("{}: missing after extraction: {e}", m.name)),
        }
    }
    for entry in walkdir::WalkDir::new(root).min_depth(1) {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.push(format!("cannot walk the extraction: {e}"));
                continue;
            }
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = entry.file_type();
        if kind.is_dir() {
            let needed = expected_dirs.contains(&rel)
                || expected_files
                    .iter()
                    .chain(expected_dirs.iter())
                    .any(|f| f.starts_with(&format!("{rel}/")));
            if !needed {
                out.push(format!("{rel}/: a directory no member needs"));
            }
        } else if kind.is_file() {
            if !expected_files.contains(&rel) {
                out.push(format!("{rel}: a file that is not a member"));
            }
        } else {
            out.push(format!("{rel}: neither a file nor a directory"));
        }
    }
    out
}

/// The content digest: sha256 hex over the lines `name\0size\0sha256\n` of
/// every member, sorted by name bytes. Stable across rebuilds (the build's
/// clock only touches ZIP headers and the manifest's timestamp-free bytes
/// stay equal).
pub fn content_digest<'a>(members: impl IntoIterator<Item = (&'a str, u64, &'a str)>) -> String {
    let mut lines: Vec<Vec<u8>> = members
        .into_iter()
        .map(|(name, size, sha)| {
            let mut l = Vec::new();
            l.extend_from_slice(name.as_bytes());
            l.push(0);
            l.extend_from_slice(size.to_string().as_bytes());
            l.push(0);
            l.extend_from_slice(sha.as_bytes());
            l.push(b'\n');
            l
        })
        .collect();
    // NUL is the smallest byte and never part of a name, so ordering whole
    // lines orders them by name bytes.
    lines.sort();
    hash::sha256_bytes(&lines.concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use zip::write::SimpleFileOptions;

    /// The SDK interpreter `cargo xtask test` provisions (`PYTHON`).
    fn sdk_python() -> std::ffi::OsString {
        match std::env::var_os("PYTHON") {
            Some(p) if !p.is_empty() => p,
            _ => panic!("PYTHON is not set: run `cargo xtask test` (it provisions the SDK venv and sets PYTHON)"),
        }
    }

    fn stored() -> SimpleFileOptions {
        SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(0o644)
    }

    /// A ZIP written with the zip crate: `(name, bytes)` stored files.
    fn zip_of(files: &[(&str, &[u8])], comment: Option<&str>) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, bytes) in files {
            w.start_file(*name, stored()).unwrap();
            w.write_all(bytes).unwrap();
        }
        if let Some(c) = comment {
            w.set_comment(c);
        }
        w.finish().unwrap().into_inner()
    }

    fn cd_of(bytes: &[u8]) -> CentralDirectory {
        read_central_directory(&mut Cursor::new(bytes)).unwrap()
    }

    /// Replaces every occurrence of `from` with `to` (same length): used to
    /// craft entries the zip crate's writer refuses (duplicate names, `..`).
    fn patch(bytes: &mut [u8], from: &[u8], to: &[u8]) {
        assert_eq!(from.len(), to.len());
        let mut hits = 0;
        let mut i = 0;
        while i + from.len() <= bytes.len() {
            if &bytes[i..i + from.len()] == from {
                bytes[i..i + from.len()].copy_from_slice(to);
                hits += 1;
            }
            i += 1;
        }
        assert!(hits > 0, "pattern not found");
    }

    /// Sets flag bits in every central and local header.
    fn set_flags(bytes: &mut [u8], bits: u16) {
        for i in 0..bytes.len().saturating_sub(4) {
            let at = match &bytes[i..i + 4] {
                b"PK\x01\x02" => i + 8,
                b"PK\x03\x04" => i + 6,
                _ => continue,
            };
            let f = u16le(bytes, at) | bits;
            bytes[at..at + 2].copy_from_slice(&f.to_le_bytes());
        }
    }

    #[test]
    fn clean_archive_has_no_findings() {
        let z = zip_of(
            &[
                ("manifest.yaml", b"kind: Plugin\n"),
                ("pkg/a.py", b"print(1)\n"),
            ],
            None,
        );
        let cd = cd_of(&z);
        assert_eq!(cd.entries.len(), 2);
        assert!(cd.comment.is_empty());
        assert_eq!(cd.entries[1].mode_text().as_deref(), Some("0644"));
        assert!(name_findings(&cd).is_empty());
        assert!(type_findings(&cd).is_empty());
        assert!(encryption_findings(&cd).is_empty());
        assert!(host_limit_findings(&cd).is_empty());
        assert!(structure_findings(&mut Cursor::new(&z), &cd).is_empty());
    }

    #[test]
    fn a_directory_is_a_name_ending_in_a_slash_or_a_backslash() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_directory("d/", stored()).unwrap();
        for name in ["ee", "f"] {
            w.start_file(name, stored()).unwrap();
        }
        let mut z = w.finish().unwrap().into_inner();
        patch(&mut z, b"ee", b"e\\");
        let cd = cd_of(&z);
        let dirs: Vec<(&str, bool)> = cd
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.is_dir()))
            .collect();
        assert_eq!(dirs, [("d/", true), ("e\\", true), ("f", false)]);
    }

    /// `zip` with a ZIP64 end record (when `record`) and its locator
    /// (`disk`, `disks`) inserted before the end record, the central
    /// directory's size and offset copied into the ZIP64 record.
    fn with_zip64(zip: Vec<u8>, disk: u32, disks: u32, record: bool) -> Vec<u8> {
        let at = zip.len() - EOCD_LEN as usize;
        let (entries, size, offset) = (
            u16le(&zip, at + 10) as u64,
            u32le(&zip, at + 12) as u64,
            u32le(&zip, at + 16) as u64,
        );
        let mut out = zip[..at].to_vec();
        let record_at = out.len() as u64;
        if record {
            out.extend(EOCD64_SIG);
            out.extend(44u64.to_le_bytes());
            out.extend(45u16.to_le_bytes());
            out.extend(45u16.to_le_bytes());
            out.extend(0u32.to_le_bytes());
            out.extend(0u32.to_le_bytes());
            out.extend(entries.to_le_bytes());
            out.extend(entries.to_le_bytes());
            out.extend(size.to_le_bytes());
            out.extend(offset.to_le_bytes());
        }
        out.extend(EOCD64_LOCATOR_SIG);
        out.extend(disk.to_le_bytes());
        out.extend(record_at.to_le_bytes());
        out.extend(disks.to_le_bytes());
        out.extend(&zip[at..]);
        out
    }

    #[test]
    fn zip64_end_records_are_read_and_refused_as_zipfile_does() {
        let cd = cd_of(&with_zip64(zip_of(&[("a", b"1")], None), 0, 1, true));
        assert!(cd.zip64);
        assert_eq!(cd.entries.len(), 1);
        assert_eq!(cd.entries[0].header_offset, 0);
        for (disk, disks) in [(1, 1), (0, 2)] {
            let e = read_central_directory(&mut Cursor::new(with_zip64(
                zip_of(&[("a", b"1")], None),
                disk,
                disks,
                true,
            )))
            .unwrap_err();
            assert!(e.contains("spans multiple disks"), "{e}");
        }
    }

    #[test]
    fn the_end_record_is_read_from_the_last_22_bytes_not_from_a_look_alike_earlier() {
        // A member whose data holds an end record with no comment, placed
        // where a wrong offset (size / 22) would read it.
        let mut fake = EOCD_SIG.to_vec();
        fake.extend([0, 0, 0, 0, 9, 0, 9, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let mut data = vec![b'.'; 1000];
        data[19..19 + EOCD_LEN as usize].copy_from_slice(&fake);
        let z = zip_of(&[("a", &data)], None);
        let at = z.len() / EOCD_LEN as usize;
        assert_eq!(&z[at..at + 4], EOCD_SIG, "the look-alike sits at size / 22");
        let cd = cd_of(&z);
        assert_eq!(cd.entries.len(), 1);
        assert_eq!(cd.entries[0].name, "a");
    }

    #[test]
    fn a_tail_that_only_looks_like_an_end_record_is_searched_and_refused() {
        // The last 22 bytes start with the signature but claim a comment,
        // and hold a second signature: the search finds that one, with no
        // room for a record after it, as zipfile's rfind does.
        let mut tail = EOCD_SIG.to_vec();
        tail.extend(EOCD_SIG);
        tail.extend([0u8; 12]);
        tail.extend([1, 0]);
        let mut z = zip_of(&[("a", b"1")], None);
        z.extend(&tail);
        let e = read_central_directory(&mut Cursor::new(&z)).unwrap_err();
        assert_eq!(
            e,
            "truncated end-of-central-directory record (File is not a zip file)"
        );
    }

    #[test]
    fn a_directory_before_the_start_or_a_newer_zip_version_is_named() {
        let mut z = zip_of(&[("a", b"1")], None);
        let at = z.len() - EOCD_LEN as usize + 12;
        z[at..at + 4].copy_from_slice(&10_000u32.to_le_bytes());
        let e = read_central_directory(&mut Cursor::new(&z)).unwrap_err();
        assert_eq!(e, "bad offset for the central directory");
        for (version, ok) in [(63u8, true), (64, false)] {
            let mut z = zip_of(&[("a", b"1")], None);
            let at = z.windows(4).position(|w| w == CENTRAL_SIG).unwrap() + 6;
            z[at] = version;
            match read_central_directory(&mut Cursor::new(&z)) {
                Ok(cd) => assert!(ok && cd.entries[0].extract_version == 63),
                Err(e) => assert!(
                    !ok && e == "entry \"a\" needs zip version 6.4 (not supported)",
                    "{e}"
                ),
            }
        }
    }

    /// One raw central-directory entry: `name`, `extra`, `comment`, the
    /// sizes and header offset as stored, flags 0 (names are cp437).
    fn raw_entry(name: &[u8], extra: &[u8], comment: &[u8], sizes: (u32, u32, u32)) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend(CENTRAL_SIG);
        h.extend([20, 3, 20, 0]); // made by 2.0 on Unix, needs 2.0
        h.extend(0u16.to_le_bytes()); // flags
        h.extend(0u16.to_le_bytes()); // stored
        h.extend([0u8; 8]); // time, date, crc
        h.extend(sizes.0.to_le_bytes()); // compressed
        h.extend(sizes.1.to_le_bytes()); // uncompressed
        h.extend((name.len() as u16).to_le_bytes());
        h.extend((extra.len() as u16).to_le_bytes());
        h.extend((comment.len() as u16).to_le_bytes());
        h.extend([0u8; 4]); // disk, internal attributes
        h.extend(((S_IFREG | 0o644) << 16).to_le_bytes());
        h.extend(sizes.2.to_le_bytes()); // header offset
        h.extend(name);
        h.extend(extra);
        h.extend(comment);
        h
    }

    /// A central directory of `entries` and its end record, nothing else.
    fn raw_archive(entries: &[Vec<u8>]) -> Vec<u8> {
        let cd: Vec<u8> = entries.concat();
        let mut z = cd.clone();
        z.extend(EOCD_SIG);
        z.extend([0u8; 4]);
        let n = entries.len().min(0xFFFF) as u16;
        z.extend(n.to_le_bytes());
        z.extend(n.to_le_bytes());
        z.extend((cd.len() as u32).to_le_bytes());
        z.extend(0u32.to_le_bytes());
        z.extend(0u16.to_le_bytes());
        z
    }

    #[test]
    fn entries_with_extra_fields_comments_and_cp437_names_are_read_in_order() {
        let z = raw_archive(&[
            raw_entry(b"a", &[0xfe, 0xca, 2, 0, 9, 9], b"first", (1, 1, 0)),
            raw_entry(b"caf\x82", b"", b"", (1, 1, 0)),
            raw_entry(b"b", b"", b"c", (1, 1, 0)),
        ]);
        let names: Vec<String> = cd_of(&z).entries.into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["a", "caf\u{e9}", "b"]);
    }

    #[test]
    fn zip64_extra_fields_replace_only_saturated_fields() {
        let extra = |values: &[u64]| {
            let mut x = vec![1, 0];
            x.extend(((values.len() * 8) as u16).to_le_bytes());
            for v in values {
                x.extend(v.to_le_bytes());
            }
            x
        };
        let read = |e: Vec<u8>| read_central_directory(&mut Cursor::new(raw_archive(&[e])));
        // All three saturated: size, compressed size, offset, in that order.
        let max = u32::MAX;
        let cd = read(raw_entry(b"a", &extra(&[5, 4, 3]), b"", (max, max, max))).unwrap();
        let e = &cd.entries[0];
        assert_eq!((e.size, e.compressed_size, e.header_offset), (5, 4, 3));
        // Only the size saturated: the one value is the size.
        let cd = read(raw_entry(b"a", &extra(&[7]), b"", (2, max, 0))).unwrap();
        let e = &cd.entries[0];
        assert_eq!((e.size, e.compressed_size, e.header_offset), (7, 2, 0));
        // Only the offset saturated.
        let cd = read(raw_entry(b"a", &extra(&[9]), b"", (2, 2, max))).unwrap();
        assert_eq!(cd.entries[0].header_offset, 9);
        // A saturated field with no value for it.
        let e = read(raw_entry(b"a", &extra(&[5]), b"", (max, max, 0))).unwrap_err();
        assert_eq!(
            e,
            "entry \"a\": corrupt zip64 extra field; Compress size not found"
        );
        // An extra field longer than what is left.
        let e = read(raw_entry(b"a", &[1, 0, 9, 0, 1], b"", (1, 1, 0))).unwrap_err();
        assert_eq!(e, "entry \"a\": corrupt extra field 0001 (size=9)");
        // Another field's id is skipped, even with saturated sizes.
        let cd = read(raw_entry(
            b"a",
            &[2, 0, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0],
            b"",
            (max, 1, 0),
        ))
        .unwrap();
        assert_eq!(cd.entries[0].size, 1);
        assert_eq!(cd.entries[0].compressed_size, max as u64);
    }

    #[test]
    fn the_reader_lists_at_most_65536_entries() {
        let entry = raw_entry(b"a", b"", b"", (1, 1, 0));
        let many = |n: usize| raw_archive(&vec![entry.clone(); n]);
        assert_eq!(
            cd_of(&many(READER_MAX_ENTRIES)).entries.len(),
            READER_MAX_ENTRIES
        );
        let e = read_central_directory(&mut Cursor::new(many(READER_MAX_ENTRIES + 1))).unwrap_err();
        assert!(e.starts_with("more than 65536 entries"), "{e}");
    }

    #[test]
    fn local_data_offsets_point_at_the_data_past_name_and_extra_field() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("plain", stored()).unwrap();
        w.write_all(b"first").unwrap();
        // A ZIP64 extra field in the local header.
        w.start_file("wide", stored().large_file(true)).unwrap();
        w.write_all(b"second").unwrap();
        w.start_file("cafx", stored()).unwrap();
        w.write_all(b"third").unwrap();
        let mut z = w.finish().unwrap().into_inner();
        patch(&mut z, b"cafx", b"caf\x82"); // a cp437 name in both headers
        let cd = cd_of(&z);
        let mut r = Cursor::new(&z);
        for (e, want) in cd.entries.iter().zip([&b"first"[..], b"second", b"third"]) {
            let at = local_data_offset(&mut r, e).unwrap() as usize;
            assert_eq!(&z[at..at + want.len()], want, "{}", e.name);
        }
        assert!(structure_findings(&mut r, &cd).is_empty());
        // Flag bits 5 and 6, which zipfile refuses to open.
        for (bit, word) in [
            (0x20, "compressed patched data"),
            (0x40, "strong encryption"),
        ] {
            let mut z = zip_of(&[("a", b"1")], None);
            set_flags(&mut z, bit);
            let cd = cd_of(&z);
            let f = structure_findings(&mut Cursor::new(&z), &cd);
            assert!(f.iter().any(|m| m.contains(word)), "{bit:#x}: {f:?}");
        }
        // A local header that names the entry differently.
        let mut z = zip_of(&[("a", b"1")], None);
        let at = z.windows(4).position(|w| w == LOCAL_SIG).unwrap() + LOCAL_LEN;
        z[at] = b'b';
        let cd = cd_of(&z);
        let e = local_data_offset(&mut Cursor::new(&z), &cd.entries[0]).unwrap_err();
        assert!(e.contains("name it differently (\"a\" vs \"b\")"), "{e}");
    }

    #[test]
    fn an_unreadable_compression_method_is_a_finding_unless_the_entry_is_encrypted() {
        let with_method = |method: u16| {
            let mut z = zip_of(&[("a", b"1")], None);
            for sig in [CENTRAL_SIG, LOCAL_SIG] {
                let at = z.windows(4).position(|w| w == sig).unwrap();
                let at = at + if sig == CENTRAL_SIG { 10 } else { 8 };
                z[at..at + 2].copy_from_slice(&method.to_le_bytes());
            }
            let cd = cd_of(&z);
            structure_findings(&mut Cursor::new(&z), &cd)
        };
        assert_eq!(
            with_method(12),
            ["entry \"a\": compression method 12 (expected 0 stored or 8 deflate)"]
        );
        assert!(with_method(8).is_empty());
        assert!(
            with_method(99).is_empty(),
            "AES: reported as encryption instead"
        );
        // Bytes before the archive.
        let mut z = b"#!/bin/sh\n".to_vec();
        z.extend(zip_of(&[("a", b"1")], None));
        let cd = cd_of(&z);
        assert_eq!(
            structure_findings(&mut Cursor::new(&z), &cd),
            ["10 bytes lie before the offsets the central directory records (data prepended to the archive)"]
        );
    }

    #[test]
    fn the_zip_crate_must_see_each_entry_as_the_central_directory_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.zip");
        fs::write(&path, zip_of(&[("a", b"1"), ("b", b"22")], Some("c"))).unwrap();
        let cd = cd_of(&fs::read(&path).unwrap());
        assert!(zip_crate_disagreements(&path, &cd).is_empty());
        type Edit = fn(&mut CentralEntry);
        let edits: [(&str, Edit); 4] = [
            ("name", |e| e.name = "z".into()),
            ("offset", |e| e.header_offset += 1),
            ("size", |e| e.size += 1),
            ("compressed size", |e| e.compressed_size += 1),
        ];
        for (what, edit) in edits {
            let mut other = cd.clone();
            edit(&mut other.entries[1]);
            let f = zip_crate_disagreements(&path, &other);
            assert_eq!(f.len(), 1, "{what}: {f:?}");
            assert!(
                f[0].starts_with("entry 1: readers disagree"),
                "{what}: {f:?}"
            );
        }
        let mut other = cd.clone();
        other.comment = b"d".to_vec();
        assert_eq!(
            zip_crate_disagreements(&path, &other),
            ["the two readers find different archive comments"]
        );
    }

    #[test]
    fn unsafe_names_one_clause_at_a_time() {
        for (name, host, on_host) in [
            ("pkg/a.py", false, false),
            ("/abs", true, true), // absolute
            (".", true, true),    // the root itself
            ("", true, true),
            ("a/../b", true, true), // a `..` component, even one that stays inside
            ("a/../../x", true, true), // climbs out
            ("C:/x", true, true),   // a drive
            ("c:x", true, true),
            ("a\\b", false, true), // a backslash: a separator on the host
            ("a\\..\\b", true, true),
            ("a:b/c", true, true),   // the host's drive test: a colon second
            ("ab:/c", false, false), // a colon elsewhere
        ] {
            assert_eq!(
                (host_unsafe(name), unsafe_on_host(name)),
                (host, on_host),
                "{name:?}"
            );
        }
    }

    /// A reader that counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    #[test]
    fn the_end_record_search_reads_at_most_64_kib_and_the_records() {
        let big = vec![7u8; 300_000];
        let z = zip_of(&[("big", &big)], Some("a comment: the slow search"));
        let mut r = Counting {
            inner: Cursor::new(&z),
            read: 0,
        };
        let (size, offset, comment, location, zip64) = end_record(&mut r).unwrap();
        assert_eq!(comment, b"a comment: the slow search");
        assert!(!zip64);
        assert_eq!(location, z.len() as u64 - EOCD_LEN - comment.len() as u64);
        assert_eq!(
            offset + size,
            location,
            "the central directory ends at the record"
        );
        // The tail, the 64 KiB window with the record, the ZIP64 locator.
        assert!(
            r.read <= EOCD_LEN + (1 << 16) + EOCD_LEN + EOCD64_LOCATOR_LEN,
            "read {} bytes",
            r.read
        );
    }

    #[test]
    fn archive_comment_is_read() {
        let z = zip_of(&[("a", b"x")], Some("signed envelope"));
        assert_eq!(cd_of(&z).comment, b"signed envelope");
    }

    #[test]
    fn duplicate_names_are_all_listed_and_named() {
        let mut z = zip_of(&[("a.py", b"one"), ("b.py", b"two")], None);
        patch(&mut z, b"b.py", b"a.py");
        let cd = cd_of(&z);
        assert_eq!(cd.entries.len(), 2, "both entries are seen");
        let f = name_findings(&cd);
        assert!(
            f.iter().any(|m| m.contains("\"a.py\" is a duplicate")),
            "{f:?}"
        );
        // The zip crate collapses them: the disagreement is reported too.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.zip");
        fs::write(&p, &z).unwrap();
        let d = zip_crate_disagreements(&p, &cd);
        assert!(
            d.iter()
                .any(|m| m.contains("2 entries") && m.contains("sees 1")),
            "{d:?}"
        );
    }

    #[test]
    fn traversal_absolute_backslash_and_drive_names_are_refused() {
        let mut z = zip_of(
            &[
                ("xx/y", b"1"),
                ("abs_", b"2"),
                ("a_b", b"3"),
                ("C_x", b"4"),
                ("p//q", b"5"),
            ],
            None,
        );
        patch(&mut z, b"xx/y", b"../y");
        patch(&mut z, b"abs_", b"/abs");
        patch(&mut z, b"a_b", b"a\\b");
        patch(&mut z, b"C_x", b"C:x");
        let f = name_findings(&cd_of(&z));
        for needle in [
            "\"../y\" is absolute",
            "\"/abs\" is absolute",
            "\"a\\\\b\" contains a backslash",
            "\"C:x\" is absolute",
            "\"p//q\" has an empty",
        ] {
            assert!(
                f.iter().any(|m| m.contains(needle)),
                "{needle} not in {f:?}"
            );
        }
    }

    #[test]
    fn nul_in_a_name_is_refused() {
        let mut z = zip_of(&[("ab.py", b"1")], None);
        patch(&mut z, b"ab.py", b"a\0.py");
        let cd = cd_of(&z);
        assert_eq!(cd.entries[0].name, "a", "zipfile cuts the name at NUL");
        assert!(name_findings(&cd).iter().any(|m| m.contains("NUL")));
    }

    #[test]
    fn symlink_member_is_refused() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_symlink("link", "/etc/passwd", SimpleFileOptions::default())
            .unwrap();
        let z = w.finish().unwrap().into_inner();
        let f = type_findings(&cd_of(&z));
        assert!(
            f.iter().any(|m| m.contains("\"link\" is a symbolic link")),
            "{f:?}"
        );
    }

    #[test]
    fn file_and_directory_conflicts_are_refused() {
        let z = zip_of(&[("a", b"1"), ("a/b", b"2")], None);
        let f = name_findings(&cd_of(&z));
        assert!(
            f.iter()
                .any(|m| m.contains("needs \"a\" to be a directory")),
            "{f:?}"
        );
    }

    #[test]
    fn encryption_flag_is_reported() {
        let mut z = zip_of(&[("a", b"1")], None);
        set_flags(&mut z, 1);
        let f = encryption_findings(&cd_of(&z));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0], "\"a\" is encrypted (flags 0x0001, method 0)");
        // Strong encryption (bit 6), and AES (method 99) with no flag.
        let mut z = zip_of(&[("a", b"1")], None);
        set_flags(&mut z, 0x40);
        assert_eq!(encryption_findings(&cd_of(&z)).len(), 1);
        let mut z = zip_of(&[("a", b"1")], None);
        let at = z.windows(4).position(|w| w == b"PK\x01\x02").unwrap() + 10;
        z[at..at + 2].copy_from_slice(&99u16.to_le_bytes());
        let cd = cd_of(&z);
        assert_eq!(cd.entries[0].compression, 99);
        assert_eq!(encryption_findings(&cd).len(), 1);
        // Other flags are not encryption.
        let mut z = zip_of(&[("a", b"1")], None);
        set_flags(&mut z, 0x08);
        assert!(encryption_findings(&cd_of(&z)).is_empty());
    }

    #[test]
    fn too_many_entries_break_the_host_limit() {
        let names: Vec<String> = (0..513).map(|i| format!("f{i}")).collect();
        let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let f = host_limit_findings(&cd_of(&zip_of(&files, None)));
        assert!(
            f.iter().any(|m| m.contains("513 entries (maximum 512)")),
            "{f:?}"
        );
    }

    /// A directory `d/` and files `a`, `manifest.yaml`, as read, for
    /// editing sizes and modes the way a hostile archive records them.
    fn entries_to_edit() -> CentralDirectory {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_directory("d/", stored()).unwrap();
        for name in ["a", "manifest.yaml"] {
            w.start_file(name, stored()).unwrap();
            w.write_all(b"x").unwrap();
        }
        cd_of(&w.finish().unwrap().into_inner())
    }

    #[test]
    fn the_host_limits_are_inclusive_bounds_and_directories_do_not_count() {
        let at_limits = |size: u64, compressed: u64, manifest: u64| {
            let mut cd = entries_to_edit();
            cd.entries[0].size = HOST_MAX_TOTAL_BYTES * 2; // a directory: not counted
            cd.entries[1].size = size;
            cd.entries[1].compressed_size = compressed;
            cd.entries[2].size = manifest;
            cd.entries[2].compressed_size = manifest;
            host_limit_findings(&cd)
        };
        // Exactly at each limit: 16 MiB, ratio 100, a 1 MiB manifest.
        let max = HOST_MAX_ENTRY_BYTES;
        assert_eq!(
            at_limits(max, max / 64, HOST_MAX_MANIFEST_BYTES),
            Vec::<String>::new()
        );
        assert_eq!(at_limits(10_000, 100, 1), Vec::<String>::new());
        let over = at_limits(max + 1, max, 1);
        assert_eq!(over.len(), 1, "{over:?}");
        assert!(
            over[0].starts_with("\"a\": 16777217 bytes uncompressed (maximum 16777216"),
            "{over:?}"
        );
        let ratio = at_limits(10_001, 100, 1);
        assert_eq!(ratio.len(), 1, "{ratio:?}");
        assert!(
            ratio[0].starts_with("\"a\": compression ratio 10001 / 100 exceeds 100"),
            "{ratio:?}"
        );
        let stored_as_nothing = at_limits(1, 0, 1);
        assert!(
            stored_as_nothing[0].contains("compression ratio 1 / 0"),
            "{stored_as_nothing:?}"
        );
        let manifest = at_limits(1, 1, HOST_MAX_MANIFEST_BYTES + 1);
        assert_eq!(
            manifest,
            ["manifest.yaml: 1048577 bytes (the host reads at most 1048576)"]
        );
        // The running total of file entries: four at 16 MiB is exactly
        // 64 MiB; one byte more in a fifth is past it, reported once.
        let mut cd = entries_to_edit();
        let file = cd.entries[1].clone();
        cd.entries.truncate(1);
        for i in 0..5 {
            let mut e = file.clone();
            e.name = format!("f{i}");
            e.size = if i < 4 { HOST_MAX_ENTRY_BYTES } else { 0 };
            e.compressed_size = e.size;
            cd.entries.push(e);
        }
        assert!(
            host_limit_findings(&cd).is_empty(),
            "exactly 64 MiB in total"
        );
        cd.entries[5].size = 1;
        cd.entries[5].compressed_size = 1;
        cd.entries.push(cd.entries[5].clone());
        assert_eq!(
            host_limit_findings(&cd),
            ["more than 67108864 bytes uncompressed in total"]
        );
        // The aggregate ratio alone: each entry at 100, together above.
        let mut cd = entries_to_edit();
        cd.entries[1].size = 100;
        cd.entries[1].compressed_size = 1;
        cd.entries[2].size = 101;
        cd.entries[2].compressed_size = 1;
        let f = host_limit_findings(&cd);
        assert!(
            f.iter()
                .any(|m| m.starts_with("\"manifest.yaml\": compression ratio")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|m| m == "aggregate compression ratio 201 / 2 exceeds 100"),
            "{f:?}"
        );
        cd.entries[2].size = 100;
        assert!(host_limit_findings(&cd).is_empty());
    }

    #[test]
    fn a_512_entry_archive_is_within_the_host_limit() {
        let names: Vec<String> = (0..512).map(|i| format!("f{i}")).collect();
        let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        assert!(host_limit_findings(&cd_of(&zip_of(&files, None))).is_empty());
    }

    #[test]
    fn each_recorded_file_type_is_judged_against_the_name() {
        let typed = |dir_mode: u32, file_mode: u32, dir_size: u64| {
            let mut cd = entries_to_edit();
            cd.entries[0].external_attr = dir_mode << 16;
            cd.entries[0].size = dir_size;
            cd.entries[1].external_attr = file_mode << 16;
            type_findings(&cd)
        };
        assert!(typed(0, 0, 0).is_empty(), "no mode recorded");
        assert!(typed(S_IFDIR | 0o755, S_IFREG | 0o644, 0).is_empty());
        assert_eq!(
            typed(0, S_IFLNK | 0o777, 0),
            ["\"a\" is a symbolic link (mode 120777)"]
        );
        assert_eq!(
            typed(0, 0o010644, 0),
            ["\"a\" is neither a regular file nor a directory (mode 010644)"]
        );
        assert_eq!(
            typed(S_IFREG | 0o644, 0, 0),
            ["\"d/\" is named like a directory but has file type 100000"]
        );
        assert_eq!(
            typed(0, S_IFDIR | 0o755, 0),
            ["\"a\" is named like a file but has file type 040000"]
        );
        assert_eq!(typed(0, 0, 3), ["directory \"d/\" has 3 bytes of content"]);
    }

    #[test]
    fn compression_ratio_over_100_breaks_the_host_limit() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file(
            "zeros",
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated),
        )
        .unwrap();
        w.write_all(&vec![0u8; 1 << 20]).unwrap();
        let f = host_limit_findings(&cd_of(&w.finish().unwrap().into_inner()));
        assert!(
            f.iter().any(|m| m.contains("\"zeros\": compression ratio")),
            "{f:?}"
        );
        assert!(
            f.iter().any(|m| m.contains("aggregate compression ratio")),
            "{f:?}"
        );
    }

    #[test]
    fn normpath_matches_posixpath() {
        for (i, o) in [
            ("", "."),
            ("a/./b", "a/b"),
            ("a/../..", ".."),
            ("/../a", "/a"),
            ("//a", "//a"),
            ("///a", "/a"),
            ("a/", "a"),
        ] {
            assert_eq!(posix_normpath(i), o, "{i}");
        }
    }

    #[test]
    fn content_digest_sorts_by_name_and_ignores_order() {
        let a = content_digest([("b", 1, "x"), ("a", 2, "y")]);
        let b = content_digest([("a", 2, "y"), ("b", 1, "x")]);
        assert_eq!(a, b);
        assert_eq!(a, hash::sha256_bytes(b"a\x002\x00y\nb\x001\x00x\n"));
    }

    #[test]
    fn members_are_hashed_and_extracted_exactly_with_modes() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("run.sh", stored().unix_permissions(0o755))
            .unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        w.start_file("pkg/a.py", stored()).unwrap();
        w.write_all(b"x = 1\n").unwrap();
        let z = w.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.zip");
        fs::write(&p, &z).unwrap();
        let cd = cd_of(&z);
        assert!(zip_crate_disagreements(&p, &cd).is_empty());
        let out = dir.path().join("x");
        let members = hash_members(&p, &cd, Some(&out)).unwrap();
        assert_eq!(members[0].sha256, hash::sha256_bytes(b"#!/bin/sh\n"));
        assert_eq!(members[0].mode.as_deref(), Some("0755"));
        let mode = fs::metadata(out.join("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o755);
        assert!(extraction_findings(&out, &members).is_empty());
        // A stray file in the extraction is found.
        fs::write(out.join("stray"), b"").unwrap();
        assert!(extraction_findings(&out, &members)
            .iter()
            .any(|m| m.contains("stray")));
        // A fresh directory is required.
        assert!(hash_members(&p, &cd, Some(&out))
            .unwrap_err()
            .contains("already exists"));
    }

    #[test]
    fn a_member_without_a_mode_gets_0644_and_one_with_no_permission_bits_keeps_none() {
        let z = zip_of(&[("none", b"1"), ("zero", b"2")], None);
        let mut cd = cd_of(&z);
        cd.entries[0].external_attr = 0; // no Unix mode recorded
        cd.entries[1].external_attr = S_IFREG << 16; // a regular file, 0000
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.zip");
        fs::write(&p, &z).unwrap();
        let out = dir.path().join("x");
        let members = hash_members(&p, &cd, Some(&out)).unwrap();
        let mode = |n: &str| fs::metadata(out.join(n)).unwrap().permissions().mode() & 0o7777;
        assert_eq!((mode("none"), mode("zero")), (0o644, 0o000));
        assert_eq!(members[0].mode, None);
        assert_eq!(members[1].mode.as_deref(), Some("0000"));
    }

    #[test]
    fn targets_are_prepared_only_through_real_directories_and_safe_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for bad in ["a//b", "./a", "a/./b", "a/../b", "a\\b", "a\0b", ""] {
            let e = prepare_target(root, bad, false).unwrap_err();
            assert!(e.ends_with("unsafe name, not extracted"), "{bad:?}: {e}");
        }
        assert_eq!(prepare_target(root, "d/", true).unwrap(), root.join("d"));
        assert!(root.join("d").is_dir());
        assert_eq!(
            prepare_target(root, "d/e/f.py", false).unwrap(),
            root.join("d/e/f.py")
        );
        assert!(root.join("d/e").is_dir() && !root.join("d/e/f.py").exists());
        // A file, or a symlink to a directory, where a directory must be.
        fs::write(root.join("file"), b"").unwrap();
        let e = prepare_target(root, "file/x", false).unwrap_err();
        assert!(e.ends_with("file: exists and is not a directory"), "{e}");
        std::os::unix::fs::symlink(root.join("d"), root.join("link")).unwrap();
        let e = prepare_target(root, "link/x", false).unwrap_err();
        assert!(e.ends_with("link: exists and is not a directory"), "{e}");
        // A path that cannot be looked up (a component under a file).
        let e = prepare_target(&root.join("file"), "sub/x", false).unwrap_err();
        assert!(!e.contains("cannot create"), "{e}");
    }

    #[test]
    fn the_extraction_is_re_read_and_must_hold_the_members_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("d/a.py"), b"abc").unwrap();
        let member = |name: &str, bytes: &[u8], is_dir: bool| MemberDigest {
            name: name.into(),
            sha256: hash::sha256_bytes(bytes),
            size: bytes.len() as u64,
            mode: None,
            is_dir,
        };
        let members = vec![member("d/a.py", b"abc", false), member("d/e/", b"", true)];
        assert_eq!(extraction_findings(root, &members), Vec::<String>::new());
        // Other bytes, the same size; the same bytes, another size claimed.
        let changed = vec![member("d/a.py", b"abd", false), member("d/e/", b"", true)];
        let f = extraction_findings(root, &changed);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].starts_with("d/a.py: sha256 "), "{f:?}");
        let mut longer = members.clone();
        longer[0].size = 4;
        assert_eq!(extraction_findings(root, &longer).len(), 1);
        // A symlink where a member file should be; a directory nobody needs.
        fs::remove_file(root.join("d/a.py")).unwrap();
        std::os::unix::fs::symlink("elsewhere", root.join("d/a.py")).unwrap();
        fs::create_dir(root.join("extra")).unwrap();
        let f = extraction_findings(root, &members);
        assert!(
            f.contains(&"d/a.py: not a regular file after extraction".to_string()),
            "{f:?}"
        );
        assert!(
            f.contains(&"d/a.py: neither a file nor a directory".to_string()),
            "{f:?}"
        );
        assert!(
            f.contains(&"extra/: a directory no member needs".to_string()),
            "{f:?}"
        );
        fs::remove_file(root.join("d/a.py")).unwrap();
        let f = extraction_findings(root, &members);
        assert!(
            f.iter()
                .any(|m| m.starts_with("d/a.py: missing after extraction")),
            "{f:?}"
        );
    }

    #[test]
    fn cp437_table_matches_python() {
        let python = sdk_python();
        let out = std::process::Command::new(python)
            .args(["-I", "-B", "-c", "import sys; sys.stdout.buffer.write(bytes(range(128, 256)).decode('cp437').encode())"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let bytes: Vec<u8> = (128u8..=255).collect();
        assert_eq!(
            decode_name(&bytes, false).unwrap(),
            String::from_utf8(out.stdout).unwrap()
        );
    }

    /// The reader lists what CPython's `zipfile` lists: names, sizes,
    /// attributes, offsets and comment, also for duplicates, a comment, data
    /// prepended to the archive, and a ZIP64 entry.
    #[test]
    fn central_directory_agrees_with_python_zipfile() {
        let python = sdk_python();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        cases.push((
            "clean",
            zip_of(
                &[("manifest.yaml", b"kind: Plugin\n"), ("pkg/a.py", b"1")],
                None,
            ),
        ));
        cases.push((
            "comment",
            zip_of(&[("a", b"1")], Some("PK\x05\x06 inside a comment")),
        ));
        let mut dup = zip_of(&[("a.py", b"one"), ("b.py", b"two")], None);
        patch(&mut dup, b"b.py", b"a.py");
        cases.push(("duplicate", dup));
        let mut prepended = b"#!/bin/sh\nexit 0\n".to_vec();
        prepended.extend(zip_of(&[("a", b"1"), ("b", b"22")], None));
        cases.push(("prepended", prepended));
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file("big", stored().large_file(true)).unwrap();
        w.write_all(b"small but zip64").unwrap();
        cases.push(("zip64", w.finish().unwrap().into_inner()));
        cases.push(("utf8", zip_of(&[("caf\u{e9}.txt", b"1")], None)));
        // The end record's search, as `_EndRecData` does it.
        cases.push(("empty", zip_of(&[], None)));
        cases.push(("too short", b"PK\x05\x06\0\0\0\0\0\0".to_vec()));
        cases.push((
            "comment ending in zeros",
            zip_of(&[("a", b"1")], Some("ab\0\0")),
        ));
        let longest = "c".repeat(65_535);
        cases.push(("longest comment", zip_of(&[("a", b"1")], Some(&longest))));
        let mut claimed = zip_of(&[("a", b"1")], None);
        let n = claimed.len();
        claimed[n - 2] = 5; // a comment length with no comment after it
        cases.push(("a claimed comment that is not there", claimed));
        let mut trailing = zip_of(&[("a", b"1")], Some("abc"));
        trailing.extend_from_slice(b"JUNK AFTER THE COMMENT");
        cases.push(("bytes after the comment", trailing));
        // ZIP64 end records before the end record, as `_EndRecData64`
        // reads them: valid; on another disk; over several disks; a locator
        // with no record before it; a locator too near the start.
        cases.push((
            "zip64 end records",
            with_zip64(zip_of(&[("a", b"1")], None), 0, 1, true),
        ));
        cases.push((
            "zip64 on disk 1",
            with_zip64(zip_of(&[("a", b"1")], None), 1, 1, true),
        ));
        cases.push((
            "zip64 over 2 disks",
            with_zip64(zip_of(&[("a", b"1")], None), 0, 2, true),
        ));
        cases.push((
            "zip64 locator alone",
            with_zip64(zip_of(&[("a", b"1")], None), 0, 1, false),
        ));
        let mut near_start = b"PK\x06\x07".to_vec();
        near_start.extend([0u8; 12]);
        near_start.extend(1u32.to_le_bytes());
        near_start.extend(zip_of(&[], None));
        cases.push(("zip64 locator near the start", near_start));
        // A central directory larger than what precedes the end record.
        let mut oversized = zip_of(&[("a", b"1")], None);
        let at = oversized.len() - EOCD_LEN as usize + 12;
        oversized[at..at + 4].copy_from_slice(&10_000u32.to_le_bytes());
        cases.push(("a central directory before the start", oversized));
        // An entry that needs a newer zip than zipfile reads (6.4 > 6.3).
        let mut newer = zip_of(&[("a", b"1")], None);
        let at = newer.windows(4).position(|w| w == CENTRAL_SIG).unwrap() + 6;
        newer[at] = 64;
        cases.push(("zip version 6.4", newer));
        let fake = format!("PK\x05\x06{}zz", "x".repeat(16));
        cases.push((
            "a fake end record in the comment",
            zip_of(&[("a", b"1")], Some(&fake)),
        ));
        let fake_zeros = format!("PK\x05\x06{}\0\0", "\0".repeat(16));
        cases.push((
            "a fake end record ending in zeros",
            zip_of(&[("a", b"1")], Some(&fake_zeros)),
        ));

        let dir = tempfile::tempdir().unwrap();
        let script = "import sys, json, zipfile\n\
            try:\n    z = zipfile.ZipFile(sys.argv[1])\n\
            except Exception as e:\n    print(json.dumps({'refused': str(e)}))\n    sys.exit(0)\n\
            print(json.dumps({'comment': list(z.comment), 'entries': [[i.orig_filename, i.filename, i.file_size, \
            i.compress_size, i.external_attr, i.header_offset, i.flag_bits] for i in z.infolist()]}))";
        for (label, bytes) in &cases {
            let p = dir.path().join(format!("{label}.zip"));
            fs::write(&p, bytes).unwrap();
            let out = std::process::Command::new(&python)
                .args(["-I", "-B", "-c", script])
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{label}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let ours = match read_central_directory(&mut Cursor::new(bytes)) {
                Err(e) => {
                    assert!(
                        want.get("refused").is_some(),
                        "{label}: we refuse ({e}), zipfile reads {want}"
                    );
                    continue;
                }
                Ok(cd) => serde_json::json!({
                    "comment": cd.comment,
                    "entries": cd.entries.iter().map(|e| serde_json::json!([
                        e.orig_name, e.name, e.size, e.compressed_size, e.external_attr, e.header_offset, e.flags
                    ])).collect::<Vec<_>>(),
                }),
            };
            assert_eq!(ours, want, "{label}");
        }
    }

    /// The host's limits are the installed SDK's own constants.
    #[test]
    fn host_limits_are_the_genuine_sdks() {
        let python = sdk_python();
        let out = std::process::Command::new(python)
            .args([
                "-I",
                "-c",
                "from langbot_plugin.runtime.plugin import artifact as a; \
                 print(a._MAX_ARTIFACT_ENTRIES, a._MAX_ARTIFACT_ENTRY_UNCOMPRESSED_BYTES, \
                 a._MAX_ARTIFACT_TOTAL_UNCOMPRESSED_BYTES, a._MAX_ARTIFACT_MANIFEST_BYTES, \
                 a._MAX_ARTIFACT_COMPRESSION_RATIO)",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!(
                "{HOST_MAX_ENTRIES} {HOST_MAX_ENTRY_BYTES} {HOST_MAX_TOTAL_BYTES} \
                 {HOST_MAX_MANIFEST_BYTES} {HOST_MAX_RATIO:.1}"
            )
        );
        // And as the documents name them.
        assert_eq!(
            (
                HOST_MAX_ENTRY_BYTES,
                HOST_MAX_TOTAL_BYTES,
                HOST_MAX_MANIFEST_BYTES
            ),
            (16_777_216, 67_108_864, 1_048_576)
        );
    }

    /// Every hostile archive above is also refused by the SDK host's own
    /// `_extract_verified_zip`, and the clean one accepted: the findings
    /// never pass what the host refuses.
    #[test]
    fn host_refusals_agree_with_the_genuine_sdk() {
        let python = sdk_python();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        cases.push((
            "clean",
            zip_of(
                &[("manifest.yaml", b"kind: Plugin\n"), ("a.py", b"1")],
                None,
            ),
        ));
        let mut dup = zip_of(&[("a.py", b"one"), ("b.py", b"two")], None);
        patch(&mut dup, b"b.py", b"a.py");
        cases.push(("duplicate", dup));
        let mut up = zip_of(&[("xx/y", b"1")], None);
        patch(&mut up, b"xx/y", b"../y");
        cases.push(("traversal", up));
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_symlink("link", "/etc/passwd", SimpleFileOptions::default())
            .unwrap();
        cases.push(("symlink", w.finish().unwrap().into_inner()));
        let names: Vec<String> = (0..513).map(|i| format!("f{i}")).collect();
        let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        cases.push(("entries", zip_of(&files, None)));
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.start_file(
            "zeros",
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated),
        )
        .unwrap();
        w.write_all(&vec![0u8; 1 << 20]).unwrap();
        cases.push(("ratio", w.finish().unwrap().into_inner()));
        cases.push(("conflict", zip_of(&[("a", b"1"), ("a/b", b"2")], None)));

        let dir = tempfile::tempdir().unwrap();
        for (label, bytes) in &cases {
            let p = dir.path().join(format!("{label}.zip"));
            fs::write(&p, bytes).unwrap();
            let cd = cd_of(bytes);
            let ours = !(name_findings(&cd).is_empty()
                && type_findings(&cd).is_empty()
                && encryption_findings(&cd).is_empty()
                && host_limit_findings(&cd).is_empty());
            let script = "import sys, pathlib, tempfile\n\
                from langbot_plugin.runtime.plugin.artifact import PluginArtifactStore\n\
                d = pathlib.Path(tempfile.mkdtemp())\n\
                try:\n    PluginArtifactStore._extract_verified_zip(open(sys.argv[1], 'rb').read(), d)\n    print('accepted')\n\
                except ValueError as e:\n    print('refused', e)\n";
            let out = std::process::Command::new(&python)
                .args(["-I", "-B", "-c", script])
                .arg(&p)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{label}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let host_refused = text.starts_with("refused");
            assert_eq!(
                ours, host_refused,
                "{label}: ours refused={ours}, host said {text}"
            );
        }
    }
}
