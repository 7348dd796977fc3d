//! The crate's module tree and the arrows between its files, read from the
//! source text with `syn` (no compiler, no build): which file names an item
//! of which other file.
//!
//! The tree is walked the way rustc walks it, from `lib.rs` (and `main.rs`)
//! through every `mod` declaration (`#[path]` honoured), so a file no
//! declaration reaches is not part of the crate and is not read. A module
//! declared under `#[cfg(test)]`, and every item under `#[cfg(test)]` or
//! `#[test]`, is test code: its arrows are not counted.
//!
//! An arrow is counted wherever a path names the crate's own items: in `use`
//! trees, in types and expressions, and in macro bodies (`crate::x::y`
//! tokens). A path is resolved as the compiler would start to: `crate::`,
//! `super::`, `self::`, the crate's own name (from `main.rs`), a child module
//! declared in the current module, or a name a `use` of this file bound. The
//! arrow goes to the file of the longest module prefix of the resolved path;
//! arrows to the crate root (`lib.rs` only declares modules) are dropped,
//! except to `#[macro_export]` macros, which go to the file defining them.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use syn::visit::Visit;

/// The crate's name as `main.rs` spells it.
const CRATE_NAME: &str = "verify_coding_candidates";

/// A module path below the crate root: `["gates", "suites", "observe"]`.
pub type ModPath = Vec<String>;

/// One source file, by its path relative to `src/` (`/`-separated).
pub struct Source {
    pub path: String,
    pub text: String,
}

/// A module of the tree: the file that holds it, whether it is test code,
/// and whether it is a file of its own or an inline `mod x { .. }`.
#[derive(Clone, Debug)]
pub struct Module {
    pub file: String,
    pub test_only: bool,
    pub inline: bool,
}

/// One arrow: `from` (a file) names something of `to` (another file), first
/// at `line` of `from`, through `path` (as written, `::`-joined).
#[derive(Clone, Debug)]
pub struct Arrow {
    pub from: String,
    pub to: String,
    pub line: usize,
    pub path: String,
}

/// One path of non-test code that names the crate's own items, resolved:
/// in `file` at `line`, the absolute path (`["gates", "all"]`).
#[derive(Clone, Debug)]
pub struct Use {
    pub file: String,
    pub line: usize,
    pub path: ModPath,
}

/// The crate as read: every module, the module path of each file, every
/// resolved path of non-test code, and the arrows between non-test files
/// (one per pair of files, the first seen).
pub struct Crate {
    pub modules: BTreeMap<ModPath, Module>,
    pub file_modules: BTreeMap<String, ModPath>,
    pub uses: Vec<Use>,
    pub arrows: Vec<Arrow>,
}

/// Why the crate could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// A `mod x;` declaration whose file is not among the sources.
    MissingFile { declared_in: String, module: String },
    /// A file that does not parse.
    Parse { file: String, message: String },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::MissingFile {
                declared_in,
                module,
            } => write!(
                f,
                "src/{declared_in} declares `mod {module};` but neither {module}.rs nor {module}/mod.rs is beside it"
            ),
            ReadError::Parse { file, message } => write!(f, "src/{file} does not parse: {message}"),
        }
    }
}

/// Reads the crate from its sources (`lib.rs` is the root; `main.rs`, when
/// present, is read as the module `main`).
///
/// # Errors
/// A declared module without a file, or a file that does not parse.
pub fn read(sources: &[Source]) -> Result<Crate, ReadError> {
    let by_path: BTreeMap<&str, &str> = sources
        .iter()
        .map(|s| (s.path.as_str(), s.text.as_str()))
        .collect();
    let mut parsed = BTreeMap::new();
    let mut modules = BTreeMap::new();
    let mut walker = TreeWalker {
        by_path: &by_path,
        parsed: &mut parsed,
        modules: &mut modules,
    };
    walker.walk_file("lib.rs", Vec::new(), "", false)?;
    if by_path.contains_key("main.rs") {
        walker.walk_file("main.rs", vec!["main".to_string()], "", false)?;
    }
    let file_modules: BTreeMap<String, ModPath> = modules
        .iter()
        .filter(|(_, m)| !m.inline)
        .map(|(p, m)| (m.file.clone(), p.clone()))
        .collect();
    let macros = exported_macros(&parsed);
    let mut arrows = Vec::new();
    let mut uses = Vec::new();
    for (file, ast) in &parsed {
        let module = &file_modules[file];
        if modules[module].test_only {
            continue;
        }
        let mut reader = PathReader {
            modules: &modules,
            macros: &macros,
            file,
            module: module.clone(),
            aliases: BTreeMap::new(),
            found: BTreeMap::new(),
            uses: Vec::new(),
        };
        reader.bind_file_aliases(&ast.items);
        reader.visit_file(ast);
        uses.append(&mut reader.uses);
        for (to, (line, path)) in reader.found {
            arrows.push(Arrow {
                from: file.clone(),
                to,
                line,
                path,
            });
        }
    }
    Ok(Crate {
        modules,
        file_modules,
        uses,
        arrows,
    })
}

struct TreeWalker<'a> {
    by_path: &'a BTreeMap<&'a str, &'a str>,
    parsed: &'a mut BTreeMap<String, syn::File>,
    modules: &'a mut BTreeMap<ModPath, Module>,
}

impl TreeWalker<'_> {
    /// Reads `file` as module `path`; its child modules' files are looked
    /// for in `child_dir` (`""` is `src/`, else ending in `/`).
    fn walk_file(
        &mut self,
        file: &str,
        path: ModPath,
        child_dir: &str,
        test_only: bool,
    ) -> Result<(), ReadError> {
        let text = self.by_path[file];
        let ast = syn::parse_file(text).map_err(|e| ReadError::Parse {
            file: file.to_string(),
            message: format!("line {}: {e}", e.span().start().line),
        })?;
        self.modules.insert(
            path.clone(),
            Module {
                file: file.to_string(),
                test_only,
                inline: false,
            },
        );
        let items = ast.items.clone();
        self.parsed.insert(file.to_string(), ast);
        self.walk_items(file, &items, &path, child_dir, test_only)
    }

    fn walk_items(
        &mut self,
        file: &str,
        items: &[syn::Item],
        path: &ModPath,
        child_dir: &str,
        test_only: bool,
    ) -> Result<(), ReadError> {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            let name = m.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            let child_test = test_only || is_test_code(&m.attrs);
            if let Some((_, inner)) = &m.content {
                self.modules.insert(
                    child.clone(),
                    Module {
                        file: file.to_string(),
                        test_only: child_test,
                        inline: true,
                    },
                );
                let dir = format!("{child_dir}{name}/");
                self.walk_items(file, inner, &child, &dir, child_test)?;
                continue;
            }
            let (child_file, grandchild_dir) = match path_attr(&m.attrs) {
                Some(p) => {
                    let here = file.rsplit_once('/').map_or("", |(d, _)| d);
                    let joined = if here.is_empty() {
                        p.clone()
                    } else {
                        format!("{here}/{p}")
                    };
                    let dir = joined.trim_end_matches(".rs").to_string() + "/";
                    (joined, dir)
                }
                None => {
                    let flat = format!("{child_dir}{name}.rs");
                    let nested = format!("{child_dir}{name}/mod.rs");
                    let found = if self.by_path.contains_key(flat.as_str()) {
                        flat
                    } else if self.by_path.contains_key(nested.as_str()) {
                        nested
                    } else {
                        return Err(ReadError::MissingFile {
                            declared_in: file.to_string(),
                            module: name,
                        });
                    };
                    (found, format!("{child_dir}{name}/"))
                }
            };
            if !self.by_path.contains_key(child_file.as_str()) {
                return Err(ReadError::MissingFile {
                    declared_in: file.to_string(),
                    module: name,
                });
            }
            self.walk_file(&child_file, child, &grandchild_dir, child_test)?;
        }
        Ok(())
    }
}

/// `#[cfg(test)]` or `#[test]` on an item.
pub fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        if a.path().is_ident("test") {
            return true;
        }
        if !a.path().is_ident("cfg") {
            return false;
        }
        match &a.meta {
            syn::Meta::List(list) => list.tokens.to_string().trim() == "test",
            _ => false,
        }
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `#[macro_export]` macros by name, with the file that defines them.
fn exported_macros(parsed: &BTreeMap<String, syn::File>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (file, ast) in parsed {
        for item in &ast.items {
            if let syn::Item::Macro(m) = item {
                let exported = m.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                if let (true, Some(ident)) = (exported, &m.ident) {
                    out.insert(ident.to_string(), file.clone());
                }
            }
        }
    }
    out
}

struct PathReader<'a> {
    modules: &'a BTreeMap<ModPath, Module>,
    macros: &'a BTreeMap<String, String>,
    file: &'a str,
    /// The module the visitor is in (changes inside inline modules).
    module: ModPath,
    /// Names bound by this file's `use` items, to the absolute paths they name.
    aliases: BTreeMap<String, ModPath>,
    /// Target file -> (first line, path as written).
    found: BTreeMap<String, (usize, String)>,
    uses: Vec<Use>,
}

impl PathReader<'_> {
    /// Binds every name the file's non-test `use` items introduce (in any
    /// module or function of the file: a name is rarely reused for another
    /// path within one file, and when it is, both arrows are real).
    fn bind_file_aliases(&mut self, items: &[syn::Item]) {
        struct Binder<'r, 'a>(&'r mut PathReader<'a>);
        impl<'ast> Visit<'ast> for Binder<'_, '_> {
            fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
                if is_test_code(&u.attrs) {
                    return;
                }
                let mut flat = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut flat);
                for (segments, binding) in flat {
                    let Some(name) = binding else { continue };
                    if let Some(abs) = self.0.absolute(&segments) {
                        self.0.aliases.insert(name, abs);
                    }
                }
            }
            fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
                if !is_test_code(&m.attrs) {
                    syn::visit::visit_item_mod(self, m);
                }
            }
            fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
                if !is_test_code(&f.attrs) {
                    syn::visit::visit_item_fn(self, f);
                }
            }
            fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
                if !is_test_code(&i.attrs) {
                    syn::visit::visit_item_impl(self, i);
                }
            }
        }
        let mut binder = Binder(self);
        for item in items {
            binder.visit_item(item);
        }
    }

    /// The absolute module path a written path starts from, or `None` when
    /// it names nothing of this crate (std, a dependency, a local item).
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let first = segments.first()?;
        let rest = &segments[1..];
        let mut base: ModPath = match first.as_str() {
            "crate" | CRATE_NAME => Vec::new(),
            "self" => self.module.clone(),
            "super" => {
                let mut p = self.module.clone();
                p.pop();
                let mut rest_iter = rest.iter().peekable();
                let mut consumed = 0;
                while rest_iter.peek().map(|s| s.as_str()) == Some("super") {
                    p.pop();
                    rest_iter.next();
                    consumed += 1;
                }
                let mut out = p;
                out.extend(rest[consumed..].iter().cloned());
                return Some(out);
            }
            name => {
                let mut child = self.module.clone();
                child.push(name.to_string());
                // A lone name that is also a child module's is a local item
                // or variable (`observe(ctx)`); `observe::x` is the module.
                if !rest.is_empty() && self.modules.contains_key(&child) {
                    child
                } else if let Some(abs) = self.aliases.get(name) {
                    abs.clone()
                } else {
                    return None;
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// Records the arrow a written path makes, if any.
    fn note(&mut self, segments: &[String], line: usize) {
        let Some(abs) = self.absolute(segments) else {
            return;
        };
        self.uses.push(Use {
            file: self.file.to_string(),
            line,
            path: abs.clone(),
        });
        let target = if abs.len() == 1 && self.macros.contains_key(&abs[0]) {
            Some(self.macros[&abs[0]].clone())
        } else {
            (1..=abs.len())
                .rev()
                .map(|n| &abs[..n])
                .find_map(|prefix| self.modules.get(prefix))
                .filter(|m| !m.test_only)
                .map(|m| m.file.clone())
        };
        let Some(to) = target else { return };
        if to == self.file || to == "lib.rs" {
            return;
        }
        self.found
            .entry(to)
            .or_insert_with(|| (line, segments.join("::")));
    }
}

/// Every path a use tree names, with the name it binds (`None` for globs
/// and `_` renames). A glob `a::*` is recorded as the path `a`.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let bound = prefix.last().cloned();
                out.push((prefix.clone(), bound));
            } else {
                let mut full = prefix.clone();
                full.push(name.clone());
                out.push((full, Some(name)));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            let ident = r.ident.to_string();
            if ident != "self" {
                full.push(ident);
            }
            let bound = r.rename.to_string();
            out.push((full, (bound != "_").then_some(bound)));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathReader<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_code(&m.attrs) {
            return;
        }
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_code(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_code(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_code(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test_code(&u.attrs) {
            return;
        }
        let mut flat = Vec::new();
        flatten_use(&u.tree, &mut Vec::new(), &mut flat);
        let line = u.use_token.span.start().line;
        for (segments, _) in flat {
            self.note(&segments, line);
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.note(&segments, first.ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        for (segments, line) in paths_in_tokens(m.tokens.clone()) {
            self.note(&segments, line);
        }
        syn::visit::visit_macro(self, m);
    }
}

/// Paths written in a macro's tokens that start at `crate`, `super`, `self`
/// or the crate's name: `crate :: a :: b` sequences, in any group.
fn paths_in_tokens(tokens: TokenStream) -> Vec<(Vec<String>, usize)> {
    let flat: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < flat.len() {
        match &flat[i] {
            TokenTree::Group(g) => out.extend(paths_in_tokens(g.stream())),
            TokenTree::Ident(id)
                if ["crate", "super", "self", CRATE_NAME].contains(&id.to_string().as_str()) =>
            {
                let line = id.span().start().line;
                let mut segments = vec![id.to_string()];
                let mut j = i + 1;
                while j + 2 < flat.len() && is_colon_pair(&flat[j], &flat[j + 1]) {
                    match &flat[j + 2] {
                        TokenTree::Ident(next) => {
                            segments.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if segments.len() > 1 {
                    out.push((segments, line));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_colon_pair(a: &TokenTree, b: &TokenTree) -> bool {
    matches!((a, b), (TokenTree::Punct(x), TokenTree::Punct(y)) if x.as_char() == ':' && y.as_char() == ':')
}

/// Every `.rs` file under `root`, as [`Source`]s.
pub fn sources_under(root: &std::path::Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push(Source {
                    path: rel,
                    text: std::fs::read_to_string(&p).expect("read a source file"),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// A circle: units of one folder (`parent`, `crate` at the top) that
/// reach each other through their arrows.
#[derive(Debug, PartialEq, Eq)]
pub struct Circle {
    pub parent: String,
    pub units: Vec<String>,
}

/// The circles of the module tree, read folder by folder: within each
/// module, its child modules are units (a child with all its descendants),
/// and an arrow from anything in unit A to anything in unit B is an arrow
/// A -> B. A module's own file and its descendants may use each other (a
/// folder's root holds what its children share, and declares them); any
/// other circle is reported, with the folder it is in. So a circle through
/// two folders (`profile/groups.rs` -> `provision/` -> `profile.rs`) is
/// found at the top, as `profile` <-> `provision`, and one among the five
/// files of `gates/suites/` inside that folder. Largest first.
pub fn circles(krate: &Crate) -> Vec<Circle> {
    let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for a in &krate.arrows {
        let (from, to) = (&krate.file_modules[&a.from], &krate.file_modules[&a.to]);
        let common = from.iter().zip(to).take_while(|(x, y)| x == y).count();
        if common == from.len() || common == to.len() {
            continue;
        }
        levels
            .entry(from[..common].to_vec())
            .or_default()
            .entry(from[common].clone())
            .or_default()
            .insert(to[common].clone());
    }
    let mut out = Vec::new();
    for (parent, graph) in &levels {
        let mut nodes: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
        nodes.extend(graph.values().flatten().map(String::as_str));
        let nodes: Vec<&str> = nodes.into_iter().collect();
        let borrowed: BTreeMap<&str, BTreeSet<&str>> = graph
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
            .collect();
        for mut units in tarjan(&nodes, &borrowed) {
            if units.len() > 1 {
                units.sort();
                out.push(Circle {
                    parent: if parent.is_empty() {
                        "crate".to_string()
                    } else {
                        parent.join("::")
                    },
                    units,
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.units
            .len()
            .cmp(&a.units.len())
            .then(a.parent.cmp(&b.parent))
    });
    out
}

/// Tarjan's algorithm, iterative (the crate's graph is small, but a
/// recursion per file is needless).
fn tarjan<'a>(nodes: &[&'a str], graph: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<String>> {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut low: BTreeMap<&str, usize> = BTreeMap::new();
    let mut on_stack: BTreeSet<&str> = BTreeSet::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    let empty = BTreeSet::new();
    for &start in nodes {
        if index.contains_key(start) {
            continue;
        }
        // (node, iterator position over its successors)
        let mut work: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some((v, pos)) = work.pop() {
            if pos == 0 {
                index.insert(v, next);
                low.insert(v, next);
                next += 1;
                stack.push(v);
                on_stack.insert(v);
            }
            let succ: Vec<&str> = graph.get(v).unwrap_or(&empty).iter().copied().collect();
            if pos < succ.len() {
                work.push((v, pos + 1));
                let w = succ[pos];
                if !index.contains_key(w) {
                    work.push((w, 0));
                } else if on_stack.contains(w) {
                    let lw = index[w].min(low[v]);
                    low.insert(v, lw);
                }
                continue;
            }
            // Done with v: propagate to the parent, pop a component.
            if let Some(&(parent, _)) = work.last() {
                let lp = low[parent].min(low[v]);
                low.insert(parent, lp);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}
