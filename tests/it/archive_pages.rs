//! `archive-members` on plugins with a Page component, built by the genuine
//! langbot-plugin 0.7.18: its `lbp build` sets `spec.pages` from the Page
//! components (`populate_plugin_pages`), and `manifest-equal-source`
//! accepts exactly the list the SDK's own build computes for the source
//! (`fixtures/page-plugin/`, ours). That list is computed by `lbp-build`'s
//! build host, one child per candidate, and handed to the gate's manifest
//! probe: two candidates with different pages each get their own. The
//! refusal of any other list is unit-tested
//! (`src/gates/archive_members/tests.rs`).

use crate::common;

use common::{detail, python_0718, read_evidence, verifier};
use std::path::Path;

/// A second page plugin beside the fixture's: `page-plugin-two`, whose one
/// page is `overview` (`overview.html`), not `dashboard`.
fn second_page_plugin(root: &Path) {
    let two = root.join("Pages/page-plugin-two");
    common::copy_tree(&root.join("Pages/page-plugin"), &two);
    let manifest = std::fs::read_to_string(two.join("manifest.yaml")).unwrap();
    std::fs::write(
        two.join("manifest.yaml"),
        manifest.replace("name: page-plugin\n", "name: page-plugin-two\n"),
    )
    .unwrap();
    let pages = two.join("components/pages");
    std::fs::remove_file(pages.join("dashboard.yaml")).unwrap();
    std::fs::rename(pages.join("dashboard.html"), pages.join("overview.html")).unwrap();
    std::fs::write(
        pages.join("overview.yaml"),
        "apiVersion: v1\nkind: Page\nmetadata:\n  name: overview\n  label:\n    en_US: Overview\n\
         spec:\n  path: overview.html\n",
    )
    .unwrap();
}

#[test]
fn a_page_components_entry_the_sdks_build_adds_is_not_a_manifest_difference() {
    let repo = common::uncommitted_repo_of(
        "plugins",
        &[("page-plugin/Pages/page-plugin", "Pages/page-plugin")],
    );
    let root = &repo.root;
    second_page_plugin(root);
    common::commit_fixture(root);
    let (keep, evidence) = common::evidence_dir();
    let profile = keep.path().join("p.toml");
    std::fs::write(
        &profile,
        "name = \"pages\"\n[sdk]\nrequirement = \"langbot-plugin==0.7.18\"\n\
         [[candidate]]\npath = \"Pages/page-plugin\"\n\
         [[candidate]]\npath = \"Pages/page-plugin-two\"\n",
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
    for (folder, page, other) in [
        ("page-plugin", "dashboard", "overview"),
        ("page-plugin-two", "overview", "dashboard"),
    ] {
        let check = common::check(
            &ev,
            "archive-members",
            "manifest-equal-source",
            Some(folder),
        );
        assert_eq!(check["result"], "pass", "{}\n{text}", detail(check));
        // The archive really carries the page the build derived.
        let extracted =
            std::fs::read_to_string(evidence.join(format!("extracted/{folder}/manifest.yaml")))
                .expect("the extracted manifest");
        assert!(
            extracted.contains(&format!("path: components/pages/{page}.html")),
            "{extracted}"
        );
        // The probe's kept answer holds this candidate's pages, not the
        // other's.
        let kept = std::fs::read_to_string(evidence.join(format!(
            "logs/archive-members/{folder}-manifest-yaml.stdout"
        )))
        .unwrap();
        let pages =
            serde_json::from_str::<serde_json::Value>(&kept).unwrap()["build_pages"].to_string();
        assert!(
            pages.contains(&format!("{page}.html")) && !pages.contains(other),
            "{pages}"
        );
    }
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The pages came from the build host, one answer per build.
    let host =
        std::fs::read_to_string(evidence.join("logs/lbp-build/host/build-host.stdout")).unwrap();
    assert_eq!(
        host.matches("\"build_pages\": {\"report\"").count(),
        2,
        "{host}"
    );
}
