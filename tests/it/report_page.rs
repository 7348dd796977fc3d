//! `report.html` (issue 39): written with every run, listed in SHA256SUMS,
//! rendered again by `report --evidence DIR` and compared by `replay`; and,
//! where Chromium is installed (`.ci/run` installs Debian's `chromium`),
//! loaded in headless Chromium over the DevTools protocol
//! (`tests/it/report_page/cdp.rs`): no console error, no request but the page's
//! own, and the rendered DOM's structure (matrix cells, verdict words), not
//! its pixels. Three pages: the fixture repository's run with one passing
//! and one failing candidate (one run of the verifier: `syntax-error`
//! overlay, `--only archive-members,placement`), the same evidence scaled to
//! 50 candidates (size bounded, load time printed), and the same evidence
//! with a hostile candidate name (`<script>`, U+202E, a very long line).

mod cdp;
use crate::common;

use common::{exit_code, fixture_repo, replay_output, reseal_sums, run_only_with_profile};
use serde_json::Value;
use std::path::Path;
use verify_coding_candidates::evidence::{self, html, Evidence};

/// Generous bound on the 50-candidate page, in bytes (a size, not a time).
const PAGE_50_BOUND: usize = 3 * 1024 * 1024;

/// The built-in profile's name and `[sdk]` with two candidates:
/// `acp-agent-runner` (passes) and `codex-agent` (the `syntax-error` overlay
/// fails its build).
fn profile() -> String {
    let text = verify_coding_candidates::profile::BUILTIN_CODING_RUNNERS;
    let head = &text[..text
        .find("[[candidate]]")
        .expect("the built-in profile has candidates")];
    format!(
        "{head}[[candidate]]\npath = \"Runner/acp-agent-runner\"\n\n\
         [[candidate]]\npath = \"Runner/codex-agent\"\n"
    )
}

#[test]
fn the_report_of_a_run_is_a_sealed_view_that_loads_in_chromium_with_no_error_and_no_request() {
    let repo = fixture_repo(&["syntax-error"]);
    let (out, _keep, dir) =
        run_only_with_profile(&repo.root, "archive-members,placement", &profile(), &[]);
    assert_eq!(exit_code(&out), 1, "{}", common::both(&out));
    let page = std::fs::read_to_string(dir.join(html::REPORT_HTML)).expect("report.html written");
    let sums = std::fs::read_to_string(dir.join(evidence::SHA256SUMS)).unwrap();
    assert!(
        sums.contains("  report.html\n"),
        "listed in SHA256SUMS: {sums}"
    );
    subcommand_renders_the_same_page(&dir, &page);
    replay_compares_the_page(&dir);

    let ev = evidence::read(&dir).unwrap();
    let Some(chromium) = cdp::chromium("report_page") else {
        return;
    };
    let mut browser = cdp::Browser::launch(&chromium);
    let loaded = load(&mut browser, &dir.join(html::REPORT_HTML), "fixture");
    fixture_structure(&loaded.dom, &ev);

    let (keep, scaled) = write_page(&scaled_to(&ev, 50), "fifty");
    let loaded = load(&mut browser, &scaled, "fifty");
    assert_eq!(loaded.dom["rows"].as_array().unwrap().len(), 50);
    let bytes = std::fs::metadata(&scaled).unwrap().len() as usize;
    assert!(bytes < PAGE_50_BOUND, "50 candidates: {bytes} bytes");
    drop(keep);

    hostile_page_is_inert(&mut browser, ev);
}

/// The browser checks can fail: a page that logs a console error and asks
/// for an image elsewhere is seen doing both (the browser's proxy refuses
/// the request: nothing leaves the machine); with the report's
/// Content-Security-Policy, the same image is refused before any request,
/// and the refusal is an error (the page's own checks count a refused
/// request as a request all the same).
#[test]
fn the_browser_check_sees_a_console_error_a_request_and_a_refused_load() {
    let Some(chromium) = cdp::chromium("report_page") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = "http://report-check.invalid/x.png";
    let noisy = dir.path().join("noisy.html");
    let body = format!(
        "<h1>noisy</h1><img src=\"{image}\"><script>console.error('report-check error')</script>"
    );
    std::fs::write(
        &noisy,
        format!("<!DOCTYPE html><html><body>{body}</body></html>"),
    )
    .unwrap();
    let guarded = dir.path().join("guarded.html");
    let csp = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        html::CSP
    );
    std::fs::write(
        &guarded,
        format!("<!DOCTYPE html><html><head>{csp}</head><body><img src=\"{image}\"></body></html>"),
    )
    .unwrap();
    let mut browser = cdp::Browser::launch(&chromium);
    let loaded = browser.load(&noisy);
    assert!(
        loaded
            .errors
            .iter()
            .any(|e| e.contains("report-check error")),
        "{:?}",
        loaded.errors
    );
    assert!(
        loaded.requests.iter().any(|u| u == image),
        "{:?}",
        loaded.requests
    );
    assert_eq!(loaded.dom["scripts"], 1);
    let loaded = browser.load(&guarded);
    assert!(
        loaded
            .errors
            .iter()
            .any(|e| e.contains("Content Security Policy")),
        "{:?}",
        loaded.errors
    );
    // Refused by the policy before it was sent.
    let refused = format!("{image} (blocked: csp)");
    assert!(loaded.requests.contains(&refused), "{:?}", loaded.requests);
    assert!(
        !loaded.requests.iter().any(|u| u == image),
        "{:?}",
        loaded.requests
    );
}

/// `report --evidence DIR` prints the page the run wrote, byte for byte;
/// `--output` inside DIR is refused.
fn subcommand_renders_the_same_page(dir: &Path, page: &str) {
    let out = common::verifier_without_python()
        .args(["report", "--evidence"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 0, "{}", common::both(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), page);
    let out = common::verifier_without_python()
        .args(["report", "--evidence"])
        .arg(dir)
        .arg("--output")
        .arg(dir.join("logs/again.html"))
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 2);
    assert!(
        common::stderr_text(&out).contains("inside the evidence directory"),
        "{}",
        common::both(&out)
    );
}

/// `replay` re-renders the page and agrees; an edited page, resealed in
/// SHA256SUMS, is named.
fn replay_compares_the_page(dir: &Path) {
    let out = replay_output(dir, &[]);
    let text = common::stdout_text(&out);
    assert_eq!(exit_code(&out), 0, "{text}");
    let row = |text: &str| -> String {
        text.lines()
            .find(|l| l.starts_with("report.html sha256 (observed: rendered from evidence.json)"))
            .unwrap_or_else(|| panic!("no report.html row: {text}"))
            .to_string()
    };
    assert!(row(&text).ends_with("  yes"), "{text}");
    let path = dir.join(html::REPORT_HTML);
    let page = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, page.replacen("fail", "pass", 1)).unwrap();
    reseal_sums(dir);
    let out = replay_output(dir, &[]);
    let text = common::stdout_text(&out);
    assert_eq!(exit_code(&out), 1, "{text}");
    assert!(row(&text).ends_with("  NO"), "{text}");
    std::fs::write(&path, page).unwrap();
    reseal_sums(dir);
}

/// Loads `file`, asserts no console error and no request but the page's
/// own, saves the screenshot under the test's target folder and prints
/// the page's size and load time.
fn load(browser: &mut cdp::Browser, file: &Path, name: &str) -> cdp::Loaded {
    let loaded = browser.load(file);
    assert!(loaded.errors.is_empty(), "{name}: {:?}", loaded.errors);
    let own = format!("file://{}", file.display());
    assert!(
        loaded.requests.iter().all(|u| *u == own),
        "{name}: requests beside the page's own: {:?}",
        loaded.requests
    );
    assert_eq!(loaded.dom["scripts"], 0, "{name}: no script");
    let [color, background] = [&loaded.dom["badge"][0], &loaded.dom["badge"][1]];
    assert_ne!(color, background, "{name}: the verdict is legible");
    // Kept for a person to look at: the page and what the browser showed.
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let shot = kept.join(format!("report-{name}.png"));
    std::fs::write(&shot, &loaded.screenshot).unwrap();
    std::fs::copy(file, kept.join(format!("report-{name}.html"))).unwrap();
    let bytes = std::fs::metadata(file).unwrap().len();
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "report_page {name}: {bytes} bytes, {} candidate rows, loaded in {} ms, screenshot {}\n",
            loaded.dom["rows"].as_array().map_or(0, Vec::len),
            loaded.load_ms,
            shot.display()
        )
        .as_bytes(),
    );
    loaded
}

/// The fixture's page as rendered: one row per candidate, their verdicts,
/// placements and cells, the failure, the normalized digest, the timeline.
fn fixture_structure(dom: &Value, ev: &Evidence) {
    assert_eq!(dom["verdict"], "FAILED", "{dom:#}");
    assert_eq!(dom["run"], "fail");
    let gates: Vec<&str> = ev.gates.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(dom["gates"], serde_json::json!(gates));
    let rows = dom["rows"].as_array().unwrap();
    let row = |folder: &str| {
        rows.iter()
            .find(|r| r["candidate"] == folder)
            .unwrap_or_else(|| panic!("no row {folder}: {dom:#}"))
    };
    assert_eq!(rows.len(), 2, "{dom:#}");
    let (good, bad) = (row("acp-agent-runner"), row("codex-agent"));
    assert_eq!(good["verdict"], "pass", "{good:#}");
    assert_eq!(good["placement"], "dedicated");
    assert_eq!(bad["verdict"], "fail", "{bad:#}");
    assert_eq!(
        bad["verdictText"], "faillbp-build/python-compiles",
        "{bad:#}"
    );
    for (gate, good_cell, bad_cell) in [
        ("tree-clean", "pass", "pass"),
        ("lbp-build", "pass", "fail"),
        ("archive-members", "pass", "left-out"),
        ("discovery-rpc", "–", "–"),
    ] {
        assert_eq!(good["cells"][gate], good_cell, "{gate}: {good:#}");
        assert_eq!(bad["cells"][gate], bad_cell, "{gate}: {bad:#}");
    }
    let failures = dom["failures"].as_array().unwrap();
    assert!(
        failures.iter().any(|f| f["gate"] == "lbp-build"
            && f["check"] == "python-compiles"
            && f["candidate"] == "codex-agent"),
        "{failures:#?}"
    );
    let archive = ev.candidates[0].archive.as_ref().expect("acp's archive");
    let normalized = archive
        .normalized_zip_digest
        .as_deref()
        .expect("placement ran");
    assert_eq!(dom["normalized"], serde_json::json!([normalized]));
    let ran = ev.gates.iter().filter(|g| g.started_ms.is_some()).count();
    assert_eq!(dom["spans"], ran);
    assert!(
        dom["steps"].as_u64().unwrap() > 0,
        "the build's steps: {dom:#}"
    );
}

/// `ev` with its candidates copied until there are `n` (`<folder>-<k>`),
/// with their checks, their left-out entries and their steps: what 50
/// certified candidates put in the evidence.
fn scaled_to(ev: &Evidence, n: usize) -> Evidence {
    let mut scaled = ev.clone();
    let base = ev.candidates.len();
    for k in base..n {
        let from = &ev.candidates[k % base];
        let folder = format!("{}-{k:02}", from.folder);
        let mut c = from.clone();
        c.folder = folder.clone();
        scaled.candidates.push(c);
        for (g, orig) in scaled.gates.iter_mut().zip(&ev.gates) {
            let copies: Vec<_> = orig
                .checks
                .iter()
                .filter(|c| c.candidate.as_deref() == Some(&from.folder))
                .map(|c| {
                    let mut c = c.clone();
                    c.candidate = Some(folder.clone());
                    c
                })
                .collect();
            g.checks.extend(copies);
            if orig.candidates_left_out.contains(&from.folder) {
                g.candidates_left_out.push(folder.clone());
            }
        }
        let steps: Vec<_> = ev
            .signals
            .iter()
            .filter(|s| s.cmdline.contains(&from.folder))
            .map(|s| {
                let mut s = s.clone();
                s.cmdline = s.cmdline.replace(&from.folder, &folder);
                s
            })
            .collect();
        scaled.signals.extend(steps);
    }
    scaled
}

/// Renders `ev` into a fresh folder; returns the folder's guard and the page.
fn write_page(ev: &Evidence, name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.html"));
    std::fs::write(&path, html::render(ev)).unwrap();
    (dir, path)
}

/// A candidate named with markup, a bidi override and a 20,000-character
/// line: its name is text in the page (escaped, the override shown as
/// `\u202e`), no script exists or runs, nothing is requested, and the page
/// is no wider than the window (long lines wrap).
fn hostile_page_is_inert(browser: &mut cdp::Browser, mut ev: Evidence) {
    let long = "W".repeat(20_000);
    let hostile =
        format!("<script>alert(1)</script><img src=x onerror=alert(2)>\u{202e}gpj.exe{long}");
    let old = ev.candidates[1].folder.clone();
    ev.candidates[1].folder = hostile.clone();
    for g in &mut ev.gates {
        for c in g
            .checks
            .iter_mut()
            .filter(|c| c.candidate.as_deref() == Some(&old))
        {
            c.candidate = Some(hostile.clone());
            c.detail = format!("{}\n<style>body{{display:none}}</style>{long}", c.detail);
        }
        for l in g.candidates_left_out.iter_mut().filter(|l| **l == old) {
            *l = hostile.clone();
        }
    }
    let (_keep, path) = write_page(&ev, "hostile");
    let loaded = load(browser, &path, "hostile");
    let rows = loaded.dom["rows"].as_array().unwrap();
    let shown = hostile.replace('\u{202e}', "\\u202e");
    assert!(
        rows.iter()
            .any(|r| r["header"] == shown.as_str() && r["verdict"] == "fail"),
        "the hostile name is the row's text: {rows:#?}"
    );
    let (width, window) = (&loaded.dom["scrollWidth"], &loaded.dom["innerWidth"]);
    assert!(
        width.as_u64().unwrap() <= window.as_u64().unwrap(),
        "the page is {width} px wide in a {window} px window"
    );
}
