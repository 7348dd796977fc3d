//! `cargo bench --bench streaming`: hashing throughput and peak memory of the
//! streaming digests, for files and archives of growing size.
//!
//! Memory must not grow with input size (DESIGN.md: "archives and files are
//! hashed as streams"). This prints, for each size, the throughput and the
//! process's peak resident set (`VmHWM` from `/proc/self/status`) after
//! hashing; the peak should stay flat while the size grows 64-fold. It is a
//! measurement, not a test: nothing here fails on a slow machine.

use std::io::Write;
use std::time::Instant;
use verify_coding_candidates::{hash, lbpkg};

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "{:>10}  {:>12}  {:>14}  {:>14}",
        "size MiB", "what", "MiB/s", "peak RSS KiB"
    );
    for mib in [4u64, 32, 256] {
        let path = dir.path().join(format!("f{mib}"));
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
        for _ in 0..mib {
            f.write_all(&chunk).unwrap();
        }
        drop(f);
        let t = Instant::now();
        let d = hash::sha256_file(&path).unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(d.size, mib * 1024 * 1024);
        println!(
            "{mib:>10}  {:>12}  {:>14.1}  {:>14}",
            "sha256_file",
            mib as f64 / secs,
            vm_hwm_kib()
        );

        // A STORED ZIP with one member of this size, hashed member by member.
        let zpath = dir.path().join(format!("z{mib}.zip"));
        let mut zw = zip::ZipWriter::new(std::fs::File::create(&zpath).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(mib >= 4096);
        zw.start_file("big.bin", opts).unwrap();
        let mut src = std::fs::File::open(&path).unwrap();
        std::io::copy(&mut src, &mut zw).unwrap();
        zw.finish().unwrap();
        let t = Instant::now();
        let mut file = std::fs::File::open(&zpath).unwrap();
        let cd = lbpkg::read_central_directory(&mut file).unwrap();
        let members = lbpkg::hash_members(&zpath, &cd, None).unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(members[0].size, mib * 1024 * 1024);
        println!(
            "{mib:>10}  {:>12}  {:>14.1}  {:>14}",
            "zip members",
            mib as f64 / secs,
            vm_hwm_kib()
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&zpath).unwrap();
    }
}
