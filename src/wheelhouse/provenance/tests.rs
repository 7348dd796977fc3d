use super::*;

const SIX_URL: &str = "https://files.pythonhosted.org/packages/d9/5a/e7c31adbe875f2abbb91bd84cf2dc52d792b5a01506781dbcf25c91daf11/six-1.16.0-py2.py3-none-any.whl";
const SIX_SHA: &str = "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254";
const DOCOPT_URL: &str = "https://files.pythonhosted.org/packages/a2/55/8f8cab2afd404cf578136ef2cc5dfb50baa1761b68c9da1fb1e4eed343c9/docopt-0.6.2.tar.gz";
const DOCOPT_SHA: &str = "49b3a825280bd66b3aa83585ef59c4a8c82f2c8a522dbe754a8bc8d08c85c491";

/// The shape of pip 26's report (`pip install --dry-run --report`), trimmed
/// to what is read, with one item that carries only `hash`.
fn report() -> String {
    serde_json::json!({
        "version": "1",
        "pip_version": "26.3",
        "install": [
            {
                "download_info": {"url": DOCOPT_URL, "archive_info": {
                    "hash": format!("sha256={DOCOPT_SHA}")}},
                "is_direct": false, "requested": true,
                "metadata": {"name": "docopt", "version": "0.6.2", "metadata_version": "2.1"}
            },
            {
                "download_info": {"url": SIX_URL, "archive_info": {
                    "hashes": {"sha256": SIX_SHA}, "hash": format!("sha256={SIX_SHA}")}},
                "is_direct": false, "requested": true,
                "metadata": {"name": "Six", "version": "1.16.0"}
            }
        ],
        "environment": {}
    })
    .to_string()
}

fn file(name: &str, sha256: &str) -> WheelhouseFile {
    let (project, version) = crate::wheelhouse::wheel_identity(name).unwrap();
    WheelhouseFile {
        name: name.into(),
        project,
        version,
        size: 1,
        sha256: sha256.into(),
    }
}

#[test]
fn the_report_gives_each_distribution_its_url_and_published_hash() {
    let items = parse_report(&report()).unwrap();
    assert_eq!(
        items,
        [
            Resolved {
                project: "docopt".into(),
                version: "0.6.2".into(),
                url: DOCOPT_URL.into(),
                sha256: Some(DOCOPT_SHA.into()),
            },
            Resolved {
                project: "six".into(),
                version: "1.16.0".into(),
                url: SIX_URL.into(),
                sha256: Some(SIX_SHA.into()),
            },
        ]
    );
    assert!(!items[0].is_wheel());
    assert!(items[1].is_wheel());
    assert!(parse_report("{\"version\": \"2\", \"install\": []}")
        .unwrap_err()
        .contains("format version 1, found version \"2\""));
    assert!(parse_report("not json")
        .unwrap_err()
        .contains("installation report"));
}

#[test]
fn a_download_is_pinned_to_the_resolved_urls_and_hashes() {
    let items = parse_report(&report()).unwrap();
    assert_eq!(
        pinned_requirements(&items),
        format!(
            "docopt @ {DOCOPT_URL} --hash=sha256:{DOCOPT_SHA}\nsix @ {SIX_URL} --hash=sha256:{SIX_SHA}\n"
        )
    );
}

#[test]
fn an_sdist_not_allowed_and_a_file_without_a_published_hash_cannot_be_pinned() {
    let mut items = parse_report(&report()).unwrap();
    let problems = unpinnable(&items, &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("docopt 0.6.2 has no wheel, only the sdist"));
    assert!(problems[0].contains(DOCOPT_URL));
    assert!(unpinnable(&items, &["DocOpt".into()]).is_empty());
    items[1].sha256 = None;
    let problems = unpinnable(&items, &["docopt".into()]);
    assert!(
        problems[0].contains("six 1.16.0") && problems[0].contains("published no sha256"),
        "{problems:?}"
    );
}

#[test]
fn produced_files_are_classified_downloaded_or_built_from_sdist() {
    let items = parse_report(&report()).unwrap();
    let produced = [
        file("six-1.16.0-py2.py3-none-any.whl", SIX_SHA),
        file("docopt-0.6.2-py2.py3-none-any.whl", &"b".repeat(64)),
    ];
    let got = sources(&items, &produced, "logs/dependencies/wheelhouse/download-1").unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].file, "docopt-0.6.2-py2.py3-none-any.whl");
    assert_eq!(got[0].provenance, Provenance::BuiltFromSdist);
    assert_eq!(got[0].url, DOCOPT_URL);
    assert_eq!(got[0].published_sha256, DOCOPT_SHA);
    assert_eq!(
        got[0].build_log.as_deref(),
        Some("logs/dependencies/wheelhouse/download-1")
    );
    assert_eq!(got[1].provenance, Provenance::Downloaded);
    assert_eq!(got[1].url, SIX_URL);
    assert_eq!(got[1].build_log, None);
    let json = serde_json::to_value(&got[0]).unwrap();
    assert_eq!(json["provenance"], "built-from-sdist");
    assert_eq!(
        serde_json::to_value(&got[1]).unwrap()["provenance"],
        "downloaded"
    );
    // A file no item accounts for is refused, named.
    let stray = [file("evil-1.0-py3-none-any.whl", SIX_SHA)];
    let e = sources(&items, &stray, "x").unwrap_err();
    assert!(e.contains("evil-1.0-py3-none-any.whl"), "{e}");
}

#[test]
fn verification_rehashes_against_the_published_hash_and_names_file_url_expected_and_found() {
    let items = parse_report(&report()).unwrap();
    let six = file("six-1.16.0-py2.py3-none-any.whl", SIX_SHA);
    let docopt = file("docopt-0.6.2-py2.py3-none-any.whl", &"b".repeat(64));
    let srcs = sources(&items, &[six.clone(), docopt.clone()], "logs/x").unwrap();
    let allowed = vec!["docopt".to_string()];
    assert!(verify(&[&six, &docopt], &srcs, &allowed).is_empty());

    // The file on disk is not the one published.
    let forged = file("six-1.16.0-py2.py3-none-any.whl", &"f".repeat(64));
    let p = verify(&[&forged], &srcs, &allowed);
    assert_eq!(p.len(), 1, "{p:?}");
    for part in [
        "six-1.16.0-py2.py3-none-any.whl",
        SIX_URL,
        &format!("expected the sha256 the index published, {SIX_SHA}"),
        &format!("found {}", "f".repeat(64)),
    ] {
        assert!(p[0].contains(part), "missing {part:?} in {}", p[0]);
    }
    // Built without the profile's leave; a file with no source at all.
    let p = verify(&[&docopt], &srcs, &[]);
    assert!(p[0].contains("allow_source_builds"), "{p:?}");
    let p = verify(&[&six], &[], &allowed);
    assert!(p[0].contains("found none"), "{p:?}");
    // A downloaded wheel renamed on the way.
    let mut renamed = srcs.clone();
    renamed[1].url = SIX_URL.replace("six-1.16.0", "six-1.16.0.post1");
    let p = verify(&[&six], &renamed, &allowed);
    assert!(
        p.iter().any(|p| p.contains("keep that URL's name")),
        "{p:?}"
    );
}

#[test]
fn the_refusal_names_the_sdists_pip_skipped_for_the_pinned_version() {
    let out = "\
  Skipping link: No sources permitted for docopt: https://files.pythonhosted.org/packages/ec/6d/x/docopt-0.6.1.tar.gz (from https://pypi.org/simple/docopt/)
  Skipping link: No sources permitted for docopt: https://files.pythonhosted.org/packages/a2/55/y/docopt-0.6.2.tar.gz (from https://pypi.org/simple/docopt/)
  Skipping link: No sources permitted for other: https://files.pythonhosted.org/o/other-0.6.2.tar.gz (from https://pypi.org/simple/other/)
Skipping link: not a file: https://pypi.org/simple/docopt/
ERROR: No matching distribution found for docopt==0.6.2
";
    assert_eq!(
        skipped_sdists(out, "docopt==0.6.2"),
        ["https://files.pythonhosted.org/packages/a2/55/y/docopt-0.6.2.tar.gz"]
    );
    assert_eq!(skipped_sdists(out, "DocOpt>=0.6").len(), 2);
    assert!(skipped_sdists(out, "six==1.16.0").is_empty());
}

#[test]
fn url_file_names_are_percent_decoded_without_fragment() {
    assert_eq!(
        file_name_of("https://h/p/pkg-1.0%2Blocal-py3-none-any.whl#sha256=ab"),
        "pkg-1.0+local-py3-none-any.whl"
    );
    assert_eq!(file_name_of("https://h/a%2"), "a%2");
    assert!(source_build_allowed("Doc_Opt", &["doc-opt".into()]));
}
