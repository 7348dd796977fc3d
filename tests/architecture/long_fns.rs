//! Functions longer than a screen: every non-test function (free, in an
//! `impl`, a trait's default body, nested in another function), with its
//! length in lines from `fn` (or its first qualifier: `const`, `async`, `unsafe`)
//! to the closing brace. Doc comments and attributes do not count.

use super::imports::{is_test_code, Crate};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// One function: `module::Type::name` (`module::name` for a free
/// function; nested functions add their parent's name), its file, first
/// line and length in lines.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub file: String,
    pub line: usize,
    pub lines: usize,
}

/// Every non-test function of the crate's non-test files.
pub fn functions(krate: &Crate, sources: &[super::imports::Source]) -> Vec<Function> {
    let mut out = Vec::new();
    for source in sources {
        let Some(module) = krate.file_modules.get(&source.path) else {
            continue;
        };
        if krate.modules[module].test_only {
            continue;
        }
        let ast = syn::parse_file(&source.text).expect("parsed once already");
        let mut reader = FnReader {
            file: &source.path,
            scope: module.clone(),
            out: &mut out,
        };
        reader.visit_file(&ast);
    }
    out
}

/// Functions longer than `limit` lines, longest first.
pub fn longer_than(functions: &[Function], limit: usize) -> Vec<Function> {
    let mut long: Vec<Function> = functions
        .iter()
        .filter(|f| f.lines > limit)
        .cloned()
        .collect();
    long.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.name.cmp(&b.name)));
    long
}

struct FnReader<'a> {
    file: &'a str,
    /// Module path, then `Type` inside an impl, then enclosing functions.
    scope: Vec<String>,
    out: &'a mut Vec<Function>,
}

impl FnReader<'_> {
    fn record(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let start = sig.span().start().line;
        let end = block.brace_token.span.close().end().line;
        let mut full = self.scope.clone();
        full.push(name.to_string());
        self.out.push(Function {
            name: full.join("::"),
            file: self.file.to_string(),
            line: start,
            lines: end + 1 - start,
        });
    }
}

fn self_type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "_".to_string(), |s| s.ident.to_string()),
        _ => "_".to_string(),
    }
}

impl<'ast> Visit<'ast> for FnReader<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_code(&m.attrs) {
            return;
        }
        self.scope.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.scope.pop();
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test_code(&f.attrs) {
            return;
        }
        self.record(&f.sig.ident, &f.sig, &f.block);
        self.scope.push(f.sig.ident.to_string());
        syn::visit::visit_item_fn(self, f);
        self.scope.pop();
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test_code(&i.attrs) {
            return;
        }
        self.scope.push(self_type_name(&i.self_ty));
        syn::visit::visit_item_impl(self, i);
        self.scope.pop();
    }
    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if is_test_code(&t.attrs) {
            return;
        }
        self.scope.push(t.ident.to_string());
        syn::visit::visit_item_trait(self, t);
        self.scope.pop();
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test_code(&f.attrs) {
            return;
        }
        self.record(&f.sig.ident, &f.sig, &f.block);
        self.scope.push(f.sig.ident.to_string());
        syn::visit::visit_impl_item_fn(self, f);
        self.scope.pop();
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.record(&f.sig.ident, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}
