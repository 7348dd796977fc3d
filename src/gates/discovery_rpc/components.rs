//! The components a plugin archive declares, read from the archive itself
//! (what ships), the way the SDK discovers them.
//!
//! Source: `langbot_plugin.utils.discover.engine.ComponentDiscoveryEngine`:
//! for each kind under `spec.components`, `fromFiles` names component
//! manifests and `fromDirs` (`path`, `maxDepth` default 1) names folders whose
//! `*.yaml`/`*.yml` files (at most `maxDepth` levels deep) are component
//! manifests when they hold `apiVersion`, `kind`, `metadata` and `spec`.

use super::spec::ComponentId;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

/// Largest YAML member read (component manifests are a few KiB).
const MAX_YAML_BYTES: u64 = 1 << 20;

/// A plugin's identity and declared components, from its archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// `metadata.author`.
    pub author: String,
    /// `metadata.name`.
    pub name: String,
    /// The components the manifest declares, sorted.
    pub components: Vec<ComponentId>,
    /// `spec.config[]` items' `default`s by `name`: the plugin settings a
    /// fresh installation starts with.
    pub config_defaults: serde_json::Map<String, serde_json::Value>,
    /// Each component manifest's `spec` (a Tool's `parameters` JSON schema,
    /// ...), as JSON; `null` when empty.
    pub specs: std::collections::BTreeMap<ComponentId, serde_json::Value>,
}

/// Reads `archive`'s `manifest.yaml` and the component manifests it names.
///
/// # Errors
/// A sentence naming the archive and the member when the archive or a
/// manifest cannot be read, or the manifest lacks `metadata.author`/`name`.
pub fn read(archive: &Path) -> Result<Declared, String> {
    let file = std::fs::File::open(archive)
        .map_err(|e| format!("{}: cannot open: {e}", archive.display()))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| format!("{}: not a readable ZIP archive: {e}", archive.display()))?;
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    let manifest = read_yaml(&mut zip, archive, "manifest.yaml")?;
    let (author, name) = (
        metadata(&manifest, archive, "author")?,
        metadata(&manifest, archive, "name")?,
    );
    let config_defaults = config_defaults(&manifest);
    let files = component_files(&manifest, &names);
    let mut out = BTreeSet::new();
    let mut specs = std::collections::BTreeMap::new();
    for f in files {
        let doc = read_yaml(&mut zip, archive, &f)?;
        let Some((id, spec)) = component(&doc) else {
            continue;
        };
        specs.insert(id.clone(), spec);
        out.insert(id);
    }
    Ok(Declared {
        author,
        name,
        components: out.into_iter().collect(),
        config_defaults,
        specs,
    })
}

/// The YAML member `name` of `archive` (open as `zip`), at most
/// [`MAX_YAML_BYTES`] of it, parsed.
///
/// # Errors
/// A sentence naming the archive and the member when it is missing,
/// unreadable or not valid YAML.
fn read_yaml(
    zip: &mut zip::ZipArchive<std::fs::File>,
    archive: &Path,
    name: &str,
) -> Result<Value, String> {
    let member = zip
        .by_name(name)
        .map_err(|e| format!("{}: member {name}: {e}", archive.display()))?;
    let mut text = String::new();
    member
        .take(MAX_YAML_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: member {name}: {e}", archive.display()))?;
    serde_yaml_ng::from_str(crate::manifest::strip_bom(&text))
        .map_err(|e| format!("{}: member {name}: not valid YAML: {e}", archive.display()))
}

/// The manifest's `metadata.<k>` string.
///
/// # Errors
/// A sentence naming the archive when it is missing or not a string.
fn metadata(manifest: &Value, archive: &Path, k: &str) -> Result<String, String> {
    manifest
        .get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "{}: manifest.yaml has no metadata.{k} string",
                archive.display()
            )
        })
}

/// The manifest's `spec.config[]` items' `default`s by `name`.
fn config_defaults(manifest: &Value) -> serde_json::Map<String, serde_json::Value> {
    let mut config_defaults = serde_json::Map::new();
    if let Some(Value::Sequence(items)) = manifest.get("spec").and_then(|s| s.get("config")) {
        for item in items {
            if let (Some(key), Some(default)) = (
                item.get("name").and_then(Value::as_str),
                item.get("default"),
            ) {
                if let Ok(v) = serde_json::to_value(default) {
                    config_defaults.insert(key.to_string(), v);
                }
            }
        }
    }
    config_defaults
}

/// The members the manifest's `spec.components` names as component
/// manifests: every `fromFiles` entry and, for each `fromDirs` entry, the
/// archive's `names` that are YAML files within its `maxDepth`.
fn component_files(manifest: &Value, names: &[String]) -> BTreeSet<String> {
    let mut files: BTreeSet<String> = BTreeSet::new();
    if let Some(Value::Mapping(groups)) = manifest.get("spec").and_then(|s| s.get("components")) {
        for (_kind, group) in groups {
            if let Some(Value::Sequence(list)) = group.get("fromFiles") {
                for f in list.iter().filter_map(Value::as_str) {
                    files.insert(normalise(f));
                }
            }
            if let Some(Value::Sequence(dirs)) = group.get("fromDirs") {
                for d in dirs {
                    dir_files(d, names, &mut files);
                }
            }
        }
    }
    files
}

/// Adds to `files` the archive's `names` that one `fromDirs` entry `d`
/// (`path`, `maxDepth` default 1) takes in: YAML files at most `maxDepth`
/// levels under `path`.
fn dir_files(d: &Value, names: &[String], files: &mut BTreeSet<String>) {
    let Some(path) = d.get("path").and_then(Value::as_str) else {
        return;
    };
    let depth = d.get("maxDepth").and_then(Value::as_u64).unwrap_or(1) as usize;
    let dir = normalise(path);
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    for name in names {
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let is_yaml = rest.ends_with(".yaml") || rest.ends_with(".yml");
        if is_yaml && !rest.is_empty() && rest.split('/').count() <= depth {
            files.insert(name.clone());
        }
    }
}

/// One component manifest's id (`kind`, `metadata.name`) and `spec` as
/// JSON; `None` when `doc` lacks `apiVersion`, `kind`, `metadata` or `spec`
/// (not a component manifest).
fn component(doc: &Value) -> Option<(ComponentId, serde_json::Value)> {
    let has = |k: &str| doc.get(k).is_some();
    if !(has("apiVersion") && has("kind") && has("metadata") && has("spec")) {
        return None;
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = doc
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = ComponentId {
        kind: kind.to_string(),
        name: name.to_string(),
    };
    let spec = doc
        .get("spec")
        .and_then(|v| serde_json::to_value(v).ok())
        .unwrap_or_default();
    Some((id, spec))
}

fn normalise(p: &str) -> String {
    let p = p.trim();
    let p = p.strip_prefix("./").unwrap_or(p);
    p.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn archive(members: &[(&str, &str)]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let mut zip = zip::ZipWriter::new(f.reopen().unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, text) in members {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
        f
    }

    #[test]
    fn lists_components_from_dirs_within_depth_and_from_files() {
        let comp = |kind: &str, name: &str| {
            format!("apiVersion: langbot/v1\nkind: {kind}\nmetadata:\n  name: {name}\nspec: {{}}\n")
        };
        let manifest = "apiVersion: v1\nkind: Plugin\nmetadata: {name: p, author: a}\nspec:\n  config:\n    - {name: daemon-enabled, type: boolean, default: true}\n    - {name: model, type: string}\n  components:\n    Runner:\n      fromDirs:\n        - path: components/runner/\n    Tool:\n      fromFiles: [./tools/t.yaml]\n";
        let a = archive(&[
            ("manifest.yaml", manifest),
            ("components/runner/default.yaml", &comp("Runner", "default")),
            ("components/runner/deep/other.yaml", &comp("Runner", "deep")),
            ("components/runner/notes.yaml", "just: text\n"),
            ("tools/t.yaml", &comp("Tool", "t")),
        ]);
        let got = read(a.path()).unwrap();
        assert_eq!((got.author.as_str(), got.name.as_str()), ("a", "p"));
        assert_eq!(
            serde_json::Value::Object(got.config_defaults.clone()),
            serde_json::json!({"daemon-enabled": true}),
            "only items with a default"
        );
        let got = got.components;
        assert_eq!(
            got,
            vec![
                ComponentId {
                    kind: "Runner".into(),
                    name: "default".into()
                },
                ComponentId {
                    kind: "Tool".into(),
                    name: "t".into()
                },
            ]
        );
    }
}
