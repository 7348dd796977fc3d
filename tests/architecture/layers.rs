//! The code map's layers, read from `ARCHITECTURE.md` (its ```` ```layers ````
//! block), and the arrows that go against them.
//!
//! Each line of the block is `N name: module module ...`, bottom layer
//! first. A module path (`gates`, `evidence::model`) names that module and
//! every module below it, unless a longer path names another layer: the
//! longest listed prefix decides. A file may name what is in its own layer
//! or a lower one, never a higher one.

use super::imports::{Arrow, Crate, ModPath};
use std::collections::BTreeMap;

/// One layer: its number (1 is the bottom), name and modules.
#[derive(Debug, Clone)]
pub struct Layer {
    pub rank: usize,
    pub name: String,
    pub modules: Vec<ModPath>,
}

/// The layers of the block fenced ```` ```layers ```` in `markdown`.
///
/// # Errors
/// No such block, a malformed line, ranks not 1, 2, 3.., or a module listed
/// twice: a sentence naming the line.
pub fn parse(markdown: &str) -> Result<Vec<Layer>, String> {
    let mut lines = markdown.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == "```layers")
        .ok_or("ARCHITECTURE.md has no ```layers block: expected one, bottom layer first")?;
    let mut layers = Vec::new();
    let mut seen = BTreeMap::new();
    for line in lines.take_while(|l| l.trim() != "```") {
        if line.trim().is_empty() {
            continue;
        }
        let (head, modules) = line
            .split_once(':')
            .ok_or_else(|| format!("layers line {line:?}: expected `N name: module ...`"))?;
        let (rank, name) = head
            .trim()
            .split_once(' ')
            .ok_or_else(|| format!("layers line {line:?}: expected `N name: module ...`"))?;
        let rank: usize = rank
            .parse()
            .map_err(|_| format!("layers line {line:?}: {rank:?} is not a number"))?;
        if rank != layers.len() + 1 {
            return Err(format!(
                "layers line {line:?}: expected rank {}, bottom layer first",
                layers.len() + 1
            ));
        }
        let mut paths = Vec::new();
        for m in modules.split_whitespace() {
            let path: ModPath = m.split("::").map(str::to_string).collect();
            if let Some(other) = seen.insert(path.clone(), rank) {
                return Err(format!(
                    "layers: module {m} is listed in layers {other} and {rank}"
                ));
            }
            paths.push(path);
        }
        layers.push(Layer {
            rank,
            name: name.trim().to_string(),
            modules: paths,
        });
    }
    if layers.is_empty() {
        return Err("ARCHITECTURE.md's ```layers block is empty".into());
    }
    Ok(layers)
}

/// The layer of `module`: the one listing its longest prefix.
pub fn layer_of<'l>(layers: &'l [Layer], module: &[String]) -> Option<&'l Layer> {
    layers
        .iter()
        .flat_map(|l| l.modules.iter().map(move |m| (l, m)))
        .filter(|(_, m)| module.starts_with(m))
        .max_by_key(|(_, m)| m.len())
        .map(|(l, _)| l)
}

/// Non-test files of the crate that no layer covers (the crate root,
/// `lib.rs`, only declares modules and is left out).
pub fn unmapped(krate: &Crate, layers: &[Layer]) -> Vec<String> {
    krate
        .file_modules
        .iter()
        .filter(|(file, path)| {
            *file != "lib.rs" && !krate.modules[*path].test_only && layer_of(layers, path).is_none()
        })
        .map(|(file, _)| format!("src/{file}"))
        .collect()
}

/// Every arrow that goes to a higher layer, as one sentence each.
pub fn upward(krate: &Crate, layers: &[Layer]) -> Vec<(Arrow, String)> {
    let mut out = Vec::new();
    for a in &krate.arrows {
        let (from, to) = (&krate.file_modules[&a.from], &krate.file_modules[&a.to]);
        let (Some(lf), Some(lt)) = (layer_of(layers, from), layer_of(layers, to)) else {
            continue;
        };
        if lt.rank > lf.rank {
            out.push((
                a.clone(),
                format!(
                    "src/{}:{} (layer {} {}) names `{}` of src/{} (layer {} {})",
                    a.from, a.line, lf.rank, lf.name, a.path, a.to, lt.rank, lt.name
                ),
            ));
        }
    }
    out
}
