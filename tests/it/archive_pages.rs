//! `archive-members` on a plugin with a Page component, built by the genuine
//! langbot-plugin 0.7.18: its `lbp build` sets `spec.pages` from the Page
//! components (`populate_plugin_pages`), and `manifest-equal-source`
//! accepts exactly the list the SDK's own build computes for the source
//! (`fixtures/page-plugin/`, ours). The refusal of any other list is
//! unit-tested (`src/gates/archive_members/tests.rs`).

use crate::common;

use common::{detail, python_0718, read_evidence, verifier};

#[test]
fn a_page_components_entry_the_sdks_build_adds_is_not_a_manifest_difference() {
    let repo = common::repo_of(
        "plugins",
        &[("page-plugin/Pages/page-plugin", "Pages/page-plugin")],
    );
    let root = &repo.root;
    let (keep, evidence) = common::evidence_dir();
    let profile = keep.path().join("p.toml");
    std::fs::write(
        &profile,
        "name = \"pages\"\n[sdk]\nrequirement = \"langbot-plugin==0.7.18\"\n\
         [[candidate]]\npath = \"Pages/page-plugin\"\n",
    )
    .expect("write the profile");
    let out = verifier()
        .current_dir(root)
        .arg("--evidence")
        .arg(&evidence)
        .arg("--python")
        .arg(python_0718())
        .arg("--profile")
        .arg(&profile)
        .args(["--only", "archive-members"])
        .output()
        .expect("run the verifier");
    let text = String::from_utf8_lossy(&out.stdout);
    let ev = read_evidence(&evidence);
    let check = common::check(
        &ev,
        "archive-members",
        "manifest-equal-source",
        Some("page-plugin"),
    );
    assert_eq!(check["result"], "pass", "{}\n{text}", detail(check));
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The archive really carries the page the build derived.
    let extracted = std::fs::read_to_string(evidence.join("extracted/page-plugin/manifest.yaml"))
        .expect("the extracted manifest");
    assert!(
        extracted.contains("path: components/pages/dashboard.html"),
        "{extracted}"
    );
}
