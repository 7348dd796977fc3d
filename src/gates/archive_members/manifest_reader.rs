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
    /// With `serde_yaml_ng`'s YAML 1.2 rules, for unit tests of the gate's
    /// other checks that have no interpreter; never used by the product.
    #[cfg(test)]
    Yaml12,
}

impl ManifestReader {
    /// Reads the source manifest and the archived one.
    pub fn observe(&self, source: &Path, archived: &Path) -> ManifestObservation {
        let source_yaml12 = read_yaml12(source);
        match self {
            ManifestReader::Sdk {
                python,
                env,
                cwd,
                log_stem,
            } => {
                let args = [source.display().to_string(), archived.display().to_string()];
                let probe = crate::python::Probe {
                    python,
                    name: "manifest_yaml_probe",
                    source: crate::python::MANIFEST_YAML_PROBE,
                    args: &args,
                    cwd,
                    env: env.clone(),
                    log_stem,
                    timeout: crate::python::PROBE_TIMEOUT,
                };
                match probe.run::<SdkReadings>() {
                    Ok(r) => ManifestObservation {
                        pyyaml: Some(r.pyyaml.clone()),
                        source_sdk: r.source.result(),
                        archived_sdk: r.archived.result(),
                        build_pages: r.build_pages.as_ref().map(SdkDocument::result),
                        source_yaml12,
                    },
                    Err(e) => ManifestObservation {
                        pyyaml: None,
                        source_sdk: Err(format!("the manifest probe did not answer: {e}")),
                        archived_sdk: Err("not read".into()),
                        build_pages: None,
                        source_yaml12,
                    },
                }
            }
            ManifestReader::Kept { stdout } => {
                let kept = std::fs::read(stdout)
                    .map_err(|e| format!("{}: {e}", stdout.display()))
                    .and_then(|bytes| {
                        serde_json::from_slice::<SdkReadings>(&bytes).map_err(|e| {
                            format!("{}: not the probe's JSON document: {e}", stdout.display())
                        })
                    });
                match kept {
                    Ok(r) => ManifestObservation {
                        pyyaml: Some(r.pyyaml.clone()),
                        source_sdk: r.source.result(),
                        archived_sdk: r.archived.result(),
                        build_pages: r.build_pages.as_ref().map(SdkDocument::result),
                        source_yaml12,
                    },
                    Err(e) => ManifestObservation {
                        pyyaml: None,
                        source_sdk: Err(format!("the manifest probe's answer is not kept: {e}")),
                        archived_sdk: Err("not read".into()),
                        build_pages: None,
                        source_yaml12,
                    },
                }
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
