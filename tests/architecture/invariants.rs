//! The code map's invariants that are not a matter of layers:
//! - a gate never prints: no file of `gates/` writes to the terminal (the
//!   print macros, `dbg!`, `std::io::stdout`/`stderr`, the crate's
//!   `output` module and its `stderr_line!`);
//! - only the pipeline starts gates: no file outside `pipeline` names
//!   `gates::all` or `gates::by_id`, the only ways to a gate's `run`.

use super::imports::{is_test_code, Crate, Source};
use syn::visit::Visit;

/// Macros that write to the terminal.
const PRINTING_MACROS: &[&str] = &[
    "print",
    "println",
    "eprint",
    "eprintln",
    "dbg",
    "stderr_line",
];

/// Where a file under `prefix` (a module path: `["gates"]`) writes to the
/// terminal, one sentence each; files listed in `allowed` are left out.
pub fn printing(
    krate: &Crate,
    sources: &[Source],
    prefix: &[&str],
    allowed: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    for source in sources {
        let Some(module) = krate.file_modules.get(&source.path) else {
            continue;
        };
        let under = module.len() >= prefix.len() && module.iter().zip(prefix).all(|(a, b)| a == b);
        if !under || krate.modules[module].test_only || allowed.contains(&source.path.as_str()) {
            continue;
        }
        let ast = syn::parse_file(&source.text).expect("parsed once already");
        let mut finder = PrintFinder {
            file: &source.path,
            out: &mut out,
        };
        finder.visit_file(&ast);
    }
    for u in &krate.uses {
        let module = &krate.file_modules[&u.file];
        let under = module.len() >= prefix.len() && module.iter().zip(prefix).all(|(a, b)| a == b);
        if under
            && !allowed.contains(&u.file.as_str())
            && u.path.first().is_some_and(|s| s == "output")
        {
            out.push(format!(
                "src/{}:{} names crate::{}: the terminal is the views' and the CLI's",
                u.file,
                u.line,
                u.path.join("::")
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

struct PrintFinder<'a> {
    file: &'a str,
    out: &'a mut Vec<String>,
}

impl<'ast> Visit<'ast> for PrintFinder<'_> {
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
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(last) = m.path.segments.last() {
            let name = last.ident.to_string();
            if PRINTING_MACROS.contains(&name.as_str()) {
                self.out.push(format!(
                    "src/{}:{} calls {name}!: a gate returns checks, the views render them",
                    self.file,
                    last.ident.span().start().line
                ));
            }
        }
        syn::visit::visit_macro(self, m);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let names: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let terminal = names.len() >= 2
            && names[names.len() - 2] == "io"
            && ["stdout", "stderr"].contains(&names[names.len() - 1].as_str());
        if terminal {
            self.out.push(format!(
                "src/{}:{} names {}: a gate returns checks, the views render them",
                self.file,
                p.segments[0].ident.span().start().line,
                names.join("::")
            ));
        }
        syn::visit::visit_path(self, p);
    }
}

/// Uses of `gates::all` or `gates::by_id` outside the module `starter`
/// (`pipeline`) and its descendants, and outside `gates` itself.
pub fn gate_starters(krate: &Crate, starter: &str) -> Vec<String> {
    let mut out = Vec::new();
    for u in &krate.uses {
        let names_a_starter = u.path.len() >= 2
            && u.path[0] == "gates"
            && ["all", "by_id"].contains(&u.path[1].as_str());
        let module = &krate.file_modules[&u.file];
        let allowed = module.first().is_some_and(|m| m == starter || m == "gates");
        if names_a_starter && !allowed {
            out.push(format!(
                "src/{}:{} names crate::{}: only the pipeline starts gates (it owns order, \
                 parallelism, timeouts and cancellation)",
                u.file,
                u.line,
                u.path.join("::")
            ));
        }
    }
    out
}
