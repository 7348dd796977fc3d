//! How the `archive-members` gate reads a candidate's two manifests (the
//! staged source's and the archived one): through the verified
//! interpreter's PyYAML (`manifest_yaml_probe.py`), from the answer a run
//! kept (`replay`), or, in unit tests, with YAML 1.2. What the readings mean
//! is `crate::manifest_yaml`'s.

use crate::manifest_yaml::{read_yaml12, ManifestObservation, SdkDocument, SdkReadings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How the manifests are read.
#[derive(Debug, Clone)]
pub enum ManifestReader {
    /// Through the verified interpreter's PyYAML (the product).
    Sdk {
        /// The interpreter.
        python: PathBuf,
        /// The probe's exact environment.
        env: BTreeMap<String, String>,
        /// Its working directory (a private, empty folder).
        cwd: PathBuf,
        /// Its log stem (`DIR/logs/archive-members/<folder>-manifest-yaml`).
        log_stem: PathBuf,
    },
    /// The probe's answer as a run kept it (its stdout log,
    /// `DIR/logs/archive-members/<folder>-manifest-yaml.stdout`), for
    /// `replay`'s re-decision: no interpreter runs.
    Kept {
        /// The kept stdout of the probe.
        stdout: PathBuf,
    },
    /// Not read yet: the gate reads every candidate's pair in one probe
    /// process after the archives are extracted ([`read_batch`]) and puts
    /// the answer in the observation. Until then the readings say so.
    Deferred,
    /// With `serde_yaml_ng`'s YAML 1.2 rules, for unit tests of the gate's
    /// other checks that have no interpreter; never used by the product.
    #[cfg(test)]
    Yaml12,
}

/// The probe's readings of one pair as the decision takes them; `Err` when
/// the probe did not answer for it (never the SDK's refusal).
pub fn from_readings(
    readings: Result<SdkReadings, String>,
    source_yaml12: Result<serde_yaml_ng::Value, String>,
) -> ManifestObservation {
    match readings {
        Ok(r) => ManifestObservation {
            pyyaml: Some(r.pyyaml.clone()),
            source_sdk: r.source.result(),
            archived_sdk: r.archived.result(),
            build_pages: r.build_pages.as_ref().map(SdkDocument::result),
            source_yaml12,
        },
        Err(e) => ManifestObservation {
            pyyaml: None,
            source_sdk: Err(e),
            archived_sdk: Err("not read".into()),
            build_pages: None,
            source_yaml12,
        },
    }
}

/// One candidate's pair for [`read_batch`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pair {
    /// The staged source's manifest.yaml.
    pub source: PathBuf,
    /// The archive's manifest.yaml as extracted.
    pub archived: PathBuf,
    /// The source's `spec.pages` as the SDK's build writes them, when
    /// `lbp-build`'s host computed them already (the probe then gives them
    /// as they are and imports no SDK for this pair).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_pages: Option<serde_json::Value>,
}

/// Reads every pair with one probe process of `python` (the SDK is imported
/// once, not once per candidate), logged at `log_stem`; each answer is
/// also kept where `replay` reads a candidate's
/// (`kept_stdout[i]`, the probe's JSON report for that pair alone). When
/// the batch fails as a whole (a crash, a time-out, an answer of another
/// length), each pair is read again by a probe of its own (`single[i]`),
/// so one candidate's manifest can fail only its own reading.
pub fn read_batch(
    batch: &crate::python::batch::BatchProbe<'_>,
    env: BTreeMap<String, String>,
    pairs: &[Pair],
    kept_stdout: &[PathBuf],
    single: &[ManifestReader],
) -> Vec<Result<SdkReadings, String>> {
    let answers: Vec<Result<serde_json::Value, String>> =
        crate::python::batch::run_batch(batch, pairs, env, crate::python::PROBE_TIMEOUT);
    let whole_failed = pairs.len() > 1 && answers.iter().all(Result::is_err);
    answers
        .into_iter()
        .enumerate()
        .map(|(i, answer)| {
            if whole_failed {
                return single[i].readings(&pairs[i].source, &pairs[i].archived);
            }
            let value = answer?;
            if let Some(path) = kept_stdout.get(i) {
                let text = serde_json::to_string(&value).unwrap_or_default();
                std::fs::write(path, text + "\n")
                    .map_err(|e| format!("{}: cannot keep the answer: {e}", path.display()))?;
            }
            serde_json::from_value::<SdkReadings>(value)
                .map_err(|e| format!("the manifest probe's answer is not its report: {e}"))
        })
        .collect()
}

impl ManifestReader {
    /// The probe's readings of one pair, by a probe process of its own
    /// ([`ManifestReader::Sdk`]) or from what a run kept
    /// ([`ManifestReader::Kept`]); `Err` for the other readers.
    pub fn readings(&self, source: &Path, archived: &Path) -> Result<SdkReadings, String> {
        match self {
            ManifestReader::Sdk {
                python,
                env,
                cwd,
                log_stem,
            } => {
                let args = [source.display().to_string(), archived.display().to_string()];
                crate::python::Probe {
                    python,
                    name: "manifest_yaml_probe",
                    source: crate::python::MANIFEST_YAML_PROBE,
                    args: &args,
                    cwd,
                    env: env.clone(),
                    log_stem,
                    timeout: crate::python::PROBE_TIMEOUT,
                }
                .run::<SdkReadings>()
                .map_err(|e| format!("the manifest probe did not answer: {e}"))
            }
            ManifestReader::Kept { stdout } => std::fs::read(stdout)
                .map_err(|e| format!("{}: {e}", stdout.display()))
                .and_then(|bytes| {
                    serde_json::from_slice::<SdkReadings>(&bytes).map_err(|e| {
                        format!("{}: not the probe's JSON document: {e}", stdout.display())
                    })
                })
                .map_err(|e| format!("the manifest probe's answer is not kept: {e}")),
            ManifestReader::Deferred => {
                Err("not read yet (read in one batch after extraction)".into())
            }
            #[cfg(test)]
            ManifestReader::Yaml12 => Err("read with YAML 1.2".into()),
        }
    }

    /// Reads the source manifest and the archived one.
    pub fn observe(&self, source: &Path, archived: &Path) -> ManifestObservation {
        let source_yaml12 = read_yaml12(source);
        match self {
            ManifestReader::Sdk { .. } | ManifestReader::Kept { .. } | ManifestReader::Deferred => {
                from_readings(self.readings(source, archived), source_yaml12)
            }
            #[cfg(test)]
            ManifestReader::Yaml12 => ManifestObservation {
                pyyaml: None,
                source_sdk: source_yaml12.clone(),
                archived_sdk: read_yaml12(archived),
                build_pages: None,
                source_yaml12,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch that fails as a whole (here: an "interpreter" that exits 1
    /// at once) is not every candidate's failure: each pair is read again
    /// by a reader of its own, and only a pair whose own reading fails
    /// fails.
    #[test]
    fn a_batch_that_fails_as_a_whole_reads_each_pair_alone() {
        let dir = tempfile::tempdir().unwrap();
        let report = r#"{"pyyaml": "6.0.2", "source": {"value": {"t": "str", "v": "s"}},
            "archived": {"value": {"t": "str", "v": "a"}}, "build_pages": null}"#;
        let good = dir.path().join("good.stdout");
        std::fs::write(&good, report).unwrap();
        let pairs = vec![
            Pair {
                source: dir.path().join("a/manifest.yaml"),
                archived: dir.path().join("b/manifest.yaml"),
                build_pages: None,
            },
            Pair {
                source: dir.path().join("c/manifest.yaml"),
                archived: dir.path().join("d/manifest.yaml"),
                build_pages: None,
            },
        ];
        let single = vec![
            ManifestReader::Kept { stdout: good },
            ManifestReader::Kept {
                stdout: dir.path().join("missing.stdout"),
            },
        ];
        let log_stem = dir.path().join("manifest-yaml");
        let batch = crate::python::batch::BatchProbe {
            wrapper: &[],
            python: Path::new("/bin/false"),
            name: "manifest_yaml_probe",
            source: "",
            cwd: dir.path(),
            log_stem: &log_stem,
        };
        let kept = [dir.path().join("k1"), dir.path().join("k2")];
        let out = read_batch(&batch, BTreeMap::new(), &pairs, &kept, &single);
        assert_eq!(out.len(), 2);
        let first = out[0].as_ref().expect("read alone");
        assert_eq!(
            first.source.result(),
            Ok(serde_yaml_ng::Value::String("s".into()))
        );
        assert!(
            out[1].as_ref().unwrap_err().contains("missing.stdout"),
            "{:?}",
            out[1]
        );
        assert!(
            !kept[0].exists(),
            "a batch that did not answer keeps no answer"
        );
    }
}
