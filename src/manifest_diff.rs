//! How the archived `manifest.yaml` may differ from the staged one: only by
//! the `spec.pages` the build sets. Pure, over parsed YAML; used by the
//! `archive-members` gate and by [`crate::manifest_yaml`] (a lower layer,
//! which is why it lives here and not under `gates/`).

use serde_yaml_ng::Value;

/// Differences between the source manifest and the archived one, as parsed
/// YAML, by dotted key path. The build's re-serialisation
/// (`yaml.safe_dump(..., sort_keys=False)` in the SDK's `buildplugin.py`)
/// keeps values and sets `spec.pages` (`populate_plugin_pages`):
/// `build_pages` is what the SDK's own build computes for this source (its
/// own pages, then one per Page component), and an archived `spec.pages`
/// equal to it stands for the source's own; without it (an SDK whose build
/// has no such step), a member `spec.pages: []` is accepted where the source
/// has no `spec.pages`, nothing else.
pub fn manifest_differences(
    source: &Value,
    member: &Value,
    build_pages: Option<&Value>,
) -> Vec<String> {
    let mut member = member.clone();
    let source_pages = source.get("spec").and_then(|s| s.get("pages")).cloned();
    if let Some(Value::Mapping(spec)) = member.get_mut("spec") {
        let built = match build_pages {
            Some(expected) => spec.get("pages") == Some(expected),
            None => {
                source_pages.is_none()
                    && matches!(spec.get("pages"), Some(Value::Sequence(s)) if s.is_empty())
            }
        };
        if built {
            match &source_pages {
                Some(p) => {
                    spec.insert(Value::String("pages".into()), p.clone());
                }
                None => {
                    spec.remove("pages");
                }
            }
        }
    }
    let mut out = Vec::new();
    diff_values(source, &member, "", &mut out);
    out
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

fn value_text(v: &Value) -> String {
    let t = serde_yaml_ng::to_string(v).unwrap_or_default();
    let t = t.trim();
    if t.len() > 80 {
        format!(
            "{}...",
            &t[..t.char_indices().nth(77).map(|(i, _)| i).unwrap_or(t.len())]
        )
    } else {
        t.to_string()
    }
}

fn diff_values(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    let shown = if path.is_empty() { "(document)" } else { path };
    match (a, b) {
        (Value::Mapping(ma), Value::Mapping(mb)) => {
            for (k, va) in ma {
                match mb.get(k) {
                    Some(vb) => diff_values(va, vb, &at(&key_text(k)), out),
                    None => out.push(format!(
                        "{}: in the source, missing from the archive",
                        at(&key_text(k))
                    )),
                }
            }
            for (k, vb) in mb {
                if !ma.contains_key(k) {
                    out.push(format!(
                        "{}: added by the build ({})",
                        at(&key_text(k)),
                        value_text(vb)
                    ));
                }
            }
        }
        (Value::Sequence(sa), Value::Sequence(sb)) if sa.len() == sb.len() => {
            for (i, (va, vb)) in sa.iter().zip(sb).enumerate() {
                diff_values(va, vb, &format!("{shown}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!(
            "{shown}: source {}, archive {}",
            value_text(a),
            value_text(b)
        )),
    }
}
