//! The layering of DESIGN.md, checked over the source tree: data flows down, never up.
//!
//! Every `src/**/*.rs` file is lexed (comments, strings and char literals blanked, so prose and
//! messages never count), and each `crate::` path (`use` trees included), each `super::` path
//! resolved against the file's module, and each mention of a JS-binding crate (`wasm_bindgen`,
//! `wasm_bindgen_futures`, `js_sys`, `web_sys`) or of `wgpu` is checked against [`RULES`]:
//!
//! - `clock`, `sort` and `error` import no other layer; `graph` imports no device layer; `backend`
//!   imports no concrete device (`backends`);
//! - the CPU pool's threads (`backends/cpu/threads.rs`) import nothing above `error`: the
//!   pool (`backends/cpu/pool.rs`) builds on them, never the reverse;
//! - `backends/cpu` and `backends/webgpu` never import each other, nor the registry in
//!   `backends/mod.rs`, `runtime`, `model`, `bench`, `testing` or `wasm`;
//! - `runtime` imports no concrete device; `model` imports neither `backend` nor `backends`
//!   (models run through the runtime); `testing` imports no `model`, `bench` or `wasm`;
//! - `wasm` reaches the concrete devices only through the registry module (`backends`),
//!   never `backends/cpu` or `backends/webgpu`; nothing below `wasm` imports `wasm`;
//! - JS-binding crates are named only in `src/wasm/` and `src/clock.rs` (the one clock);
//!   `wgpu` only in `src/backends/webgpu/`.
//!
//! Every source file belongs to a layer with a row in [`RULES`] (or is the crate root), and
//! the layers' imports (outside unit tests) form no cycle, whatever the rules allow.
//!
//! Unit-test code (an item under `#[cfg(test)]`) may also use `testing`. Violations that
//! remain while the redesign lands are in [`ALLOWED`], each naming what removes it; an entry
//! that no longer matches anything fails the test, so the list only shrinks.
//!
//! Modules import each other in no cycle either ([`module_edges`], [`module_cycles`]). Every
//! source file is a module: `graph/dtype.rs` is `graph::dtype`, `graph/mod.rs` is `graph`,
//! `lib.rs` is `crate`; inline modules belong to their file. A file's code outside unit tests
//! imports module B when:
//!
//! - a path it writes resolves to B or to an item in B. The paths are `crate::` (`$crate::`),
//!   `super::` and `self::` paths, `use` trees included, and relative ones (`dtype::DType`,
//!   `use kernels::{gemm, quant}`) whose first name, in the (inline) module it is written in,
//!   is a child module, a module a `use` there names (`use super::kernels;` then
//!   `kernels::gemm::f()`; `as` names too), or a child of a module a `use` there globs
//!   (`use super::*`). A path resolves to its longest prefix that is a module:
//!   `crate::graph::dtype::DType` to `graph::dtype`, `crate::graph::DType` (a re-export) to
//!   `graph`, `crate::Result` to `crate`;
//! - except a path in a `use` with a visibility (`pub use`, `pub(crate) use`) that resolves
//!   into the file's own descendants: a module re-exporting its descendants' items is
//!   structure, not a dependency (nor is `mod x;`). But where the file's own code uses a name
//!   such a re-export binds (a type's, trait's or constant's name anywhere; a function's or
//!   macro's where it is called; the first name of a path such as `Op::Add`), that use imports
//!   the descendant.
//!
//! A module's references to itself are no imports, nor are those between a module and its
//! ancestors or descendants (a parent and its children are one namespace). Every
//! strongly connected component of more than one module fails the test, listed with every
//! import between its modules and one reference each (there is no allow-list: the last four
//! cycles were broken when this check landed). Code under other `cfg`s counts. Unseen: the names a glob re-export binds, a
//! re-exported function named without a call, and names used in an inline module other than
//! the re-export's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every layer and what each must not reference. A layer is a top-level module of the crate,
/// except `backends`, which is four: its `mod.rs` (the registry), `cpu`, the CPU pool's
/// threads `cpu/threads.rs`, and `webgpu`. The crate root (`lib.rs`, the composition root)
/// is no layer: it joins them all.
const RULES: &[(&str, &[&str])] = &[
    ("clock", ALL_BUT_CLOCK),
    // The crate's one sort for cold paths: a leaf like the clock.
    (
        "sort",
        &[
            "clock",
            "error",
            "graph",
            "backend",
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "error",
        &[
            "clock",
            "graph",
            "backend",
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "backends/cpu/threads",
        &[
            "graph",
            "backend",
            "backends",
            "backends/cpu",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "graph",
        &[
            "backend",
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "backend",
        &[
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "backends",
        &["runtime", "model", "bench", "testing", "wasm"],
    ),
    (
        "backends/cpu",
        &[
            "backends",
            "backends/webgpu",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "backends/webgpu",
        &[
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "runtime",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "runtime",
        &[
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "model",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    (
        "model",
        &[
            "backend",
            "backends",
            "backends/cpu",
            "backends/cpu/threads",
            "backends/webgpu",
            "bench",
            "testing",
            "wasm",
        ],
    ),
    ("testing", &["model", "bench", "wasm"]),
    ("bench", &["wasm"]),
    (
        "wasm",
        &["backends/cpu", "backends/cpu/threads", "backends/webgpu"],
    ),
];

/// What `clock` must not reference: every other layer.
const ALL_BUT_CLOCK: &[&str] = &[
    "error",
    "graph",
    "backend",
    "backends",
    "backends/cpu",
    "backends/cpu/threads",
    "backends/webgpu",
    "runtime",
    "model",
    "bench",
    "testing",
    "wasm",
];

/// Crates that may be named only in the listed layers.
const CONFINED: &[(&str, &[&str])] = &[
    ("wasm_bindgen", &["wasm", "clock"]),
    ("wasm_bindgen_futures", &["wasm", "clock"]),
    ("js_sys", &["wasm", "clock"]),
    ("web_sys", &["wasm", "clock"]),
    ("wgpu", &["backends/webgpu"]),
];

/// Violations that remain for now: (file, what it references: a layer or a crate, what
/// removes it). Delete an entry when its fix lands; a stale entry fails the test.
const ALLOWED: &[(&str, &str, &str)] = &[
    // wgpu panics outside a window or worker, so the WebGPU family probes `navigator.gpu`
    // itself before asking wgpu for an adapter (its "unavailable reason" in Node).
    (
        "src/backends/webgpu/context.rs",
        "js_sys",
        "a later issue: the navigator.gpu probe handed in by src/wasm/ (the worker issue moves \
         where the engine starts)",
    ),
    (
        "src/backends/webgpu/context.rs",
        "wasm_bindgen",
        "a later issue: the navigator.gpu probe handed in by src/wasm/",
    ),
];

/// One forbidden reference.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    line: usize,
    /// The layer or crate referenced.
    target: String,
    /// The path or name as resolved, for the message.
    what: String,
}

/// `src` with comments, string/char literals blanked to spaces (line breaks kept).
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r')) && !prev_is_ident(&c, i) && {
            let s = if at(0) == 'b' { 1 } else { 0 };
            let mut k = s + 1;
            while at(k) == '#' {
                k += 1;
            }
            at(k) == '"'
        } {
            // Raw string: r"..", r#".."#, br"..".
            let s = if at(0) == 'b' { 1 } else { 0 };
            let mut hashes = 0;
            while at(s + 1 + hashes) == '#' {
                hashes += 1;
            }
            let open = s + 2 + hashes;
            for _ in 0..open {
                out.push(' ');
            }
            i += open;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|h| c.get(i + 1 + h) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if at(0) == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() {
                let ch = c[i];
                if ch == '\\' {
                    blank(&mut out, ch);
                    if let Some(&n) = c.get(i + 1) {
                        blank(&mut out, n);
                    }
                    i += 2;
                    continue;
                }
                blank(&mut out, ch);
                i += 1;
                if ch == '"' {
                    break;
                }
            }
        } else if at(0) == '\'' && (at(1) == '\\' || at(2) == '\'') {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            out.push(' ');
            i += 1;
            while i < c.len() {
                let ch = c[i];
                if ch == '\\' {
                    out.push_str("  ");
                    i += 2;
                    continue;
                }
                blank(&mut out, ch);
                i += 1;
                if ch == '\'' {
                    break;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// Identifiers and punctuation of stripped code, each with its line (from 1).
fn tokens(code: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' || ch == '$' {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((c[start..i].iter().collect(), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push((ch.to_string(), line));
            i += 1;
        }
    }
    out
}

/// One path of a use tree (or a plain path).
#[derive(Clone, Debug, PartialEq, Eq)]
struct UsePath {
    path: Vec<String>,
    /// The name it brings into scope in a `use` (its last segment, or the `as` name; `self`
    /// in a list binds its parent's name); `None` for a glob, `as _` or a path cut short.
    binds: Option<String>,
    /// A glob (`path::*`).
    glob: bool,
}

/// The paths of a use tree (or plain path) starting at `toks[*i]`; advances `*i` past it
/// (and past an `as name` after a leaf).
fn use_tree(toks: &[(String, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<UsePath>) {
    let is_ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    let tok = |k: usize| toks.get(k).map(|t| t.0.as_str());
    match tok(*i) {
        Some("{") => {
            *i += 1;
            loop {
                match tok(*i) {
                    None => return,
                    Some("}") => {
                        *i += 1;
                        return;
                    }
                    Some(",") => *i += 1,
                    Some(_) => {
                        let before = *i;
                        use_tree(toks, i, prefix, out);
                        if *i == before {
                            *i += 1;
                        }
                    }
                }
            }
        }
        Some("*") => {
            *i += 1;
            out.push(UsePath {
                path: prefix.to_vec(),
                binds: None,
                glob: true,
            });
        }
        Some(t) if is_ident(t) => {
            // `{self, ..}` names the list's parent.
            let parent_self = t == "self" && !prefix.is_empty() && tok(*i + 1) != Some("::");
            let mut path = prefix.to_vec();
            if !parent_self {
                path.push(t.to_string());
            }
            *i += 1;
            if tok(*i) == Some("::") {
                *i += 1;
                use_tree(toks, i, &path, out);
                return;
            }
            let mut binds = path.last().cloned();
            // `as name` (not a cast to a path: `x as crate::T` keeps its path).
            if tok(*i) == Some("as")
                && tok(*i + 1).is_some_and(is_ident)
                && tok(*i + 2) != Some("::")
            {
                binds = tok(*i + 1).filter(|n| *n != "_").map(str::to_string);
                *i += 2;
            }
            out.push(UsePath {
                path,
                binds,
                glob: false,
            });
        }
        _ => out.push(UsePath {
            path: prefix.to_vec(),
            binds: None,
            glob: false,
        }),
    }
}

/// Evaluates the cfg predicate at `toks[*k]` for a non-test build: `Some(false)` when it is
/// false whatever the other options, `Some(true)` when true whatever they are, else `None`.
/// Advances `*k` past the predicate (and the `)` closing the list it is in, if it is last).
fn cfg_without_test(toks: &[(String, usize)], k: &mut usize) -> Option<bool> {
    let t = toks.get(*k).map_or("", |t| t.0.as_str()).to_string();
    *k += 1;
    let is = |k: usize, s: &str| toks.get(k).is_some_and(|t| t.0 == s);
    if matches!(t.as_str(), "all" | "any" | "not") && is(*k, "(") {
        *k += 1;
        let mut args = Vec::new();
        while *k < toks.len() && !is(*k, ")") {
            args.push(cfg_without_test(toks, k));
            if is(*k, ",") {
                *k += 1;
            }
        }
        *k += 1;
        match t.as_str() {
            "all" if args.contains(&Some(false)) => Some(false),
            "all" if args.iter().all(|a| *a == Some(true)) => Some(true),
            "any" if args.contains(&Some(true)) => Some(true),
            "any" if args.iter().all(|a| *a == Some(false)) => Some(false),
            "not" => args.first().copied().flatten().map(|a| !a),
            _ => None,
        }
    } else if t == "test" {
        Some(false)
    } else {
        // `feature = "..."` and the like: the string is blanked, so `=` stands alone.
        if is(*k, "=") {
            *k += 1;
        }
        None
    }
}

/// The module path of a file under `src/` (`backends/cpu/mod.rs` → `[backends, cpu]`).
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The layer a crate-absolute path belongs to (`root` for re-exports such as `crate::Error`).
fn layer(path: &[String]) -> String {
    match path.first().map(String::as_str) {
        None => "root".into(),
        Some("backends") => match (
            path.get(1).map(String::as_str),
            path.get(2).map(String::as_str),
        ) {
            (Some("cpu"), Some("threads")) => "backends/cpu/threads".into(),
            (Some(d @ ("cpu" | "webgpu")), _) => format!("backends/{d}"),
            _ => "backends".into(),
        },
        Some(m) if m.starts_with(|c: char| c.is_lowercase()) => m.into(),
        Some(_) => "root".into(),
    }
}

/// How a path is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// `crate::..` or `$crate::..`.
    Crate,
    /// `super::..`, resolved against the module it is written in.
    Super,
    /// `self::..`, resolved against the module it is written in.
    OwnModule,
    /// `name::..` (not `crate`, `super`, `self`, nor after `::` or `.`): a path relative to
    /// the module it is written in; a child module's or an imported module's path, or one
    /// that is no module of this crate (`std::..`, `Self::..`, `Vec::..`).
    Bare,
    /// A mention of a crate in [`CONFINED`].
    Confined,
}

/// One reference in a file.
#[derive(Clone, Debug)]
struct Ref {
    line: usize,
    form: Form,
    /// Crate-absolute for `Crate`, `Super` and `OwnModule`; as written for `Bare`; the
    /// crate's name for `Confined`.
    path: Vec<String>,
    /// In unit-test code (an item under `#[cfg(test)]`).
    in_test: bool,
    /// In a `use` item with a visibility (`pub use`, `pub(crate) use`, ..): a re-export.
    reexport: bool,
    /// In a `use` item: the name it binds (see [`UsePath`]).
    binds: Option<String>,
    /// In a `use` item.
    in_use: bool,
    /// In a `use` item: a glob.
    glob: bool,
    /// The module it is written in: the file's, inline modules included.
    scope: Vec<String>,
}

/// An identifier of a file's code outside `use` items and paths (not after `::` or `.`):
/// a name that may be one a `use` in the file brought into scope.
#[derive(Clone, Debug)]
struct Name {
    line: usize,
    name: String,
    /// Whether `(` or `!` follows (a call of a function or macro).
    called: bool,
    in_test: bool,
    /// As in [`Ref::scope`].
    scope: Vec<String>,
}

/// What one file references: (line, crate-absolute path or crate name, is it a crate name,
/// is it in unit-test code). Only `crate::`, `$crate::` and `super::` paths and crate names:
/// what the layer rules check.
fn references(module: &[String], src: &str) -> Vec<(usize, Vec<String>, bool, bool)> {
    scan(module, src)
        .0
        .into_iter()
        .filter(|r| matches!(r.form, Form::Crate | Form::Super | Form::Confined))
        .map(|r| (r.line, r.path, r.form == Form::Confined, r.in_test))
        .collect()
}

/// Every reference of one file (module `module`) and the names its code mentions.
fn scan(module: &[String], src: &str) -> (Vec<Ref>, Vec<Name>) {
    let code = strip(src);
    let toks = tokens(&code);
    let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
    let is_ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    let mut refs = Vec::new();
    let mut names = Vec::new();
    let mut depth = 0usize;
    // Inline modules: (name, brace depth inside them).
    let mut mods: Vec<(String, usize)> = Vec::new();
    // The item under `#[cfg(test)]`: the depth it starts at, whether its body is open.
    let mut test_item: Option<(usize, bool)> = None;
    let mut pending_test = false;
    // The `use` item being read: whether it has a visibility, the depth it is at.
    let mut use_item: Option<(bool, usize)> = None;
    let mut i = 0;
    while i < toks.len() {
        let (t, line) = (toks[i].0.as_str(), toks[i].1);
        let prev = if i == 0 { "" } else { tok(i - 1) };
        if pending_test && t != "#" {
            // The first token of the item the attribute applies to (attributes are skipped
            // whole below, so this is its visibility, keyword or name).
            pending_test = false;
            if test_item.is_none() {
                test_item = Some((depth, false));
            }
        }
        let in_test = test_item.is_some();
        let scope = || {
            let mut s = module.to_vec();
            s.extend(mods.iter().map(|m| m.0.clone()));
            s
        };
        let starts_path = tok(i + 1) == "::" && prev != "::" && prev != ".";
        let mut read_path = |i: &mut usize, form: Form, base: &[String]| {
            let mut paths = Vec::new();
            use_tree(&toks, i, base, &mut paths);
            let (in_use, reexport) = use_item.map_or((false, false), |(p, _)| (true, p));
            refs.extend(paths.into_iter().map(|p| Ref {
                line,
                form,
                path: p.path,
                in_test,
                reexport,
                in_use,
                binds: p.binds.filter(|_| in_use),
                glob: p.glob && in_use,
                scope: scope(),
            }));
        };
        match t {
            "#" if tok(i + 1) == "[" && tok(i + 2) == "cfg" && tok(i + 3) == "(" => {
                // `#[cfg(...)]`: a test item when its predicate cannot hold outside tests.
                let mut k = i + 4;
                let test_only = cfg_without_test(&toks, &mut k) == Some(false);
                while k < toks.len() && toks[k].0 != "]" {
                    k += 1;
                }
                if test_only && test_item.is_none() {
                    pending_test = true;
                }
                i = k + 1;
                continue;
            }
            "{" => {
                depth += 1;
                if i >= 2 && toks[i - 2].0 == "mod" {
                    mods.push((toks[i - 1].0.clone(), depth));
                }
                if let Some((d, opened)) = test_item.as_mut() {
                    if *d + 1 == depth {
                        *opened = true;
                    }
                }
            }
            "}" => {
                depth = depth.saturating_sub(1);
                while mods.last().is_some_and(|m| m.1 > depth) {
                    mods.pop();
                }
                if test_item.is_some_and(|(d, opened)| opened && d == depth) {
                    test_item = None;
                }
            }
            ";" => {
                if test_item.is_some_and(|(d, opened)| !opened && d == depth) {
                    test_item = None;
                }
                if use_item.is_some_and(|(_, d)| d == depth) {
                    use_item = None;
                }
            }
            "use" if prev != "::" => {
                // `pub use`, `pub(crate) use`, `pub(in path) use`: a re-export.
                let mut k = i;
                if prev == ")" {
                    while k > 0 && tok(k - 1) != "(" {
                        k -= 1;
                    }
                    k = k.saturating_sub(1);
                }
                use_item = Some((k > 0 && tok(k - 1) == "pub", depth));
            }
            "crate" | "$crate" if starts_path => {
                i += 2;
                read_path(&mut i, Form::Crate, &[]);
                continue;
            }
            "self" if starts_path => {
                i += 2;
                read_path(&mut i, Form::OwnModule, &scope());
                continue;
            }
            "super" if starts_path => {
                let mut base = scope();
                while tok(i) == "super" && tok(i + 1) == "::" {
                    base.pop();
                    i += 2;
                }
                read_path(&mut i, Form::Super, &base);
                continue;
            }
            _ if CONFINED.iter().any(|(name, _)| *name == t) => {
                refs.push(Ref {
                    line,
                    form: Form::Confined,
                    path: vec![t.to_string()],
                    in_test,
                    reexport: false,
                    in_use: use_item.is_some(),
                    binds: None,
                    glob: false,
                    scope: scope(),
                });
            }
            _ if starts_path && is_ident(t) && tok(i + 2) != "<" => {
                read_path(&mut i, Form::Bare, &[]);
                continue;
            }
            _ if is_ident(t)
                && use_item.is_none()
                && !matches!(
                    prev,
                    "::" | "."
                        | "fn"
                        | "struct"
                        | "enum"
                        | "union"
                        | "trait"
                        | "type"
                        | "mod"
                        | "const"
                        | "static"
                        | "let"
                        | "mut"
                        | "ref"
                ) =>
            {
                names.push(Name {
                    line,
                    name: t.to_string(),
                    called: matches!(tok(i + 1), "(" | "!"),
                    in_test,
                    scope: scope(),
                });
            }
            _ => {}
        }
        i += 1;
    }
    (refs, names)
}

/// The violations in one file (`rel` is its path under `src/`).
fn check_file(rel: &str, src: &str) -> Vec<Violation> {
    let file = format!("src/{rel}");
    let module = module_of(rel);
    let own = layer(&module);
    let forbidden = RULES
        .iter()
        .find(|(l, _)| *l == own)
        .map_or(&[][..], |r| r.1);
    let mut out = Vec::new();
    for (line, path, is_crate, in_test) in references(&module, src) {
        let (target, what) = if is_crate {
            let name = path[0].clone();
            let allowed = CONFINED
                .iter()
                .find(|(n, _)| *n == name)
                .is_some_and(|(_, ls)| ls.contains(&own.as_str()));
            if allowed {
                continue;
            }
            (name.clone(), name)
        } else {
            let target = layer(&path);
            if target == own || !forbidden.contains(&target.as_str()) {
                continue;
            }
            if in_test && target == "testing" {
                continue;
            }
            (target, format!("crate::{}", path.join("::")))
        };
        out.push(Violation {
            file: file.clone(),
            line,
            target,
            what,
        });
    }
    out
}

/// Whether `l` is a layer (has a row in [`RULES`]).
fn is_layer(l: &str) -> bool {
    RULES.iter().any(|(x, _)| *x == l)
}

/// One reference of a layer to another, outside unit tests.
#[derive(Clone, Debug)]
struct Edge {
    from: String,
    to: String,
    /// Where, for the message: `src/file:line: crate::path`.
    at: String,
}

/// The references of one file's code outside unit tests to another layer (the crate root's
/// re-exports and items, which belong to no layer, aside).
fn layer_edges(rel: &str, src: &str) -> Vec<Edge> {
    let module = module_of(rel);
    let own = layer(&module);
    references(&module, src)
        .into_iter()
        .filter(|&(_, _, is_crate, in_test)| !is_crate && !in_test)
        .filter_map(|(line, path, _, _)| {
            let to = layer(&path);
            (to != own && is_layer(&to) && is_layer(&own)).then(|| Edge {
                from: own.clone(),
                to,
                at: format!("src/{rel}:{line}: crate::{}", path.join("::")),
            })
        })
        .collect()
}

/// A cycle among the layers `edges` join, as the layers along it with the first repeated at
/// the end, or `None` when there is none (a depth-first search, layers in name order).
fn find_cycle(edges: &[Edge]) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
    }
    /// 1: on the current path; 2: done (no cycle through it).
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        path.push(n);
        for &m in next.get(n).into_iter().flatten() {
            match state.get(m) {
                Some(1) => {
                    let start = path.iter().position(|&p| p == m).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[start..].iter().map(|p| p.to_string()).collect();
                    cycle.push(m.to_string());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, next, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    let starts: Vec<&str> = next.keys().copied().collect();
    for n in starts {
        if !state.contains_key(n) {
            if let Some(c) = visit(n, &next, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The failure message for a cycle: each step with one reference that makes it.
fn describe_cycle(cycle: &[String], edges: &[Edge]) -> String {
    let steps: Vec<String> = cycle
        .windows(2)
        .map(|w| {
            let at = edges
                .iter()
                .find(|e| e.from == w[0] && e.to == w[1])
                .map_or("?", |e| e.at.as_str());
            format!("  {} -> {} ({at})", w[0], w[1])
        })
        .collect();
    format!(
        "the layers import each other in a loop:\n{}",
        steps.join("\n")
    )
}

/// A module's name in messages: `graph::dtype`, `crate` for the crate root (`lib.rs`).
fn module_name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// What a file re-exports from its descendants: (scope, name bound) → (the descendant
/// module, the path re-exported).
type Reexports<'a> = BTreeMap<(&'a [String], &'a str), (Vec<String>, &'a [String])>;

/// The references between the modules (source files) of `files` (path under `src/`, text)
/// outside unit tests, as the file's doc comment says what counts.
fn module_edges(files: &[(String, String)]) -> Vec<Edge> {
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .map(|(rel, _)| module_of(rel))
        .chain([Vec::new()])
        .collect();
    // The module a crate-absolute path is in: its longest prefix that is a module.
    let module_at = |path: &[String]| -> Vec<String> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains(p))
            .unwrap_or_default()
    };
    let mut edges = Vec::new();
    for (rel, src) in files {
        let own = module_of(rel);
        let (refs, names) = scan(&own, src);
        let refs: Vec<Ref> = refs
            .into_iter()
            .filter(|r| r.form != Form::Confined)
            .collect();
        // Crate-absolute paths; a bare path's once its first name is known.
        let mut abs: Vec<Option<Vec<String>>> = refs
            .iter()
            .map(|r| (r.form != Form::Bare).then(|| r.path.clone()))
            .collect();
        loop {
            // What the `use` items bring into scope: (scope, name) → module, scope → globs.
            let mut bound: BTreeMap<(&[String], &str), &[String]> = BTreeMap::new();
            let mut globs: BTreeMap<&[String], Vec<&[String]>> = BTreeMap::new();
            for (r, a) in refs.iter().zip(&abs) {
                let Some(a) = a.as_deref().filter(|a| modules.contains(*a)) else {
                    continue;
                };
                if r.glob {
                    globs.entry(&r.scope).or_default().push(a);
                } else if let Some(name) = &r.binds {
                    bound.entry((&r.scope, name)).or_insert(a);
                }
            }
            let resolved: Vec<Option<Vec<String>>> = refs
                .iter()
                .zip(&abs)
                .map(|(r, a)| {
                    if a.is_some() || r.form != Form::Bare {
                        return None;
                    }
                    let (first, rest) = r.path.split_first()?;
                    let child = |m: &[String]| {
                        let mut c = m.to_vec();
                        c.push(first.clone());
                        modules.contains(&c).then_some(c)
                    };
                    let module = child(&r.scope)
                        .or_else(|| {
                            bound
                                .get(&(&r.scope[..], first.as_str()))
                                .map(|m| m.to_vec())
                        })
                        .or_else(|| globs.get(&r.scope[..])?.iter().find_map(|g| child(g)))?;
                    Some([module, rest.to_vec()].concat())
                })
                .collect();
            if resolved.iter().all(Option::is_none) {
                break;
            }
            for (a, new) in abs.iter_mut().zip(resolved) {
                if new.is_some() {
                    *a = new;
                }
            }
        }
        // Re-exports of the file's own descendants are structure: no edge, but the names
        // they bind are the descendant's items when the file's code uses them.
        let mut reexported: Reexports = BTreeMap::new();
        let at = |line: usize, what: &str| format!("src/{rel}:{line}: {what}");
        for (r, a) in refs.iter().zip(&abs) {
            let Some(a) = a else { continue };
            let to = module_at(a);
            if r.in_test || to == own {
                continue;
            }
            if r.reexport && to.starts_with(&own) {
                if let Some(name) = &r.binds {
                    reexported.insert((&r.scope, name), (to, a));
                }
                continue;
            }
            edges.push(Edge {
                from: module_name(&own),
                to: module_name(&to),
                at: at(r.line, &format!("crate::{}", a.join("::"))),
            });
        }
        // The code's uses of re-exported names: a type's, trait's or constant's name (upper
        // case) wherever it stands, a function's or macro's when called, and a path's first
        // name (`DType::F32`) that is no module.
        let uses = names
            .iter()
            .filter(|n| n.called || n.name.starts_with(|c: char| c.is_uppercase()))
            .map(|n| (n.line, n.name.as_str(), n.in_test, &n.scope))
            .chain(
                refs.iter()
                    .zip(&abs)
                    .filter(|(r, a)| r.form == Form::Bare && a.is_none() && !r.in_use)
                    .map(|(r, _)| (r.line, r.path[0].as_str(), r.in_test, &r.scope)),
            );
        for (line, name, in_test, scope) in uses {
            if in_test {
                continue;
            }
            if let Some((to, path)) = reexported.get(&(&scope[..], name)) {
                edges.push(Edge {
                    from: module_name(&own),
                    to: module_name(to),
                    at: at(
                        line,
                        &format!("{name} (re-exported from crate::{})", path.join("::")),
                    ),
                });
            }
        }
    }
    // A module and its ancestors (`crate` included) are one namespace: a parent's code using
    // its children, and the children using what the parent defines, is how a Rust module is
    // built, not a cycle between rooms.
    edges.retain(|e| !related(&e.from, &e.to));
    edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
    edges
}

/// Whether module `a` is `b`'s ancestor or descendant (names as [`module_name`] writes them).
fn related(a: &str, b: &str) -> bool {
    let under = |x: &str, y: &str| y == "crate" || x.starts_with(&format!("{y}::"));
    under(a, b) || under(b, a)
}

/// The strongly connected components of more than one module that `edges` join: each a
/// cycle of imports (or several sharing modules), its modules in name order.
fn module_cycles(edges: &[Edge]) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in edges {
        next.entry(&e.from).or_default().insert(&e.to);
        next.entry(&e.to).or_default();
    }
    // Tarjan's algorithm.
    struct State<'a> {
        next: BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(n: &'a str, s: &mut State<'a>) {
        let k = s.index.len();
        s.index.insert(n, (k, k));
        s.stack.push(n);
        s.on_stack.insert(n);
        let succ: Vec<&str> = s.next[n].iter().copied().collect();
        for m in succ {
            if !s.index.contains_key(m) {
                visit(m, s);
                let low = s.index[m].1.min(s.index[n].1);
                s.index.get_mut(n).expect("visited").1 = low;
            } else if s.on_stack.contains(m) {
                let low = s.index[m].0.min(s.index[n].1);
                s.index.get_mut(n).expect("visited").1 = low;
            }
        }
        if s.index[n].0 == s.index[n].1 {
            let mut scc = Vec::new();
            while let Some(m) = s.stack.pop() {
                s.on_stack.remove(m);
                scc.push(m.to_string());
                if m == n {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    let mut s = State {
        next,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in nodes {
        if !s.index.contains_key(n) {
            visit(n, &mut s);
        }
    }
    s.out.sort();
    s.out
}

/// The failure message for a module cycle: every import between its modules, each with one
/// reference that makes it.
fn describe_module_cycle(scc: &[String], edges: &[Edge]) -> String {
    let mut steps: Vec<String> = Vec::new();
    for e in edges {
        let step = format!("  {} -> {}", e.from, e.to);
        let inside = scc.contains(&e.from) && scc.contains(&e.to);
        if inside && !steps.iter().any(|s| s.starts_with(&format!("{step} ("))) {
            steps.push(format!("{step} ({})", e.at));
        }
    }
    format!(
        "modules import each other in a loop: {}\n{}",
        scc.join(", "),
        steps.join("\n")
    )
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file: (path under `src/`, text).
fn source_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} source files", files.len());
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&src)
                .expect("under src/")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text)
        })
        .collect()
}

#[test]
fn layers_import_only_downward() {
    let mut found = Vec::new();
    let mut edges = Vec::new();
    let mut errors = Vec::new();
    for (rel, text) in &source_files() {
        let own = layer(&module_of(rel));
        if own != "root" && !is_layer(&own) {
            errors.push(format!(
                "src/{rel}: layer {own} has no row in RULES: place it in the layer map"
            ));
        }
        found.extend(check_file(rel, text));
        edges.extend(layer_edges(rel, text));
    }
    if let Some(cycle) = find_cycle(&edges) {
        errors.push(describe_cycle(&cycle, &edges));
    }
    let mut used = BTreeSet::new();
    for v in &found {
        match ALLOWED
            .iter()
            .position(|(f, t, _)| *f == v.file && *t == v.target)
        {
            Some(k) => {
                used.insert(k);
            }
            None => errors.push(format!(
                "{}:{}: {} references {} (layer {})",
                v.file,
                v.line,
                layer(&module_of(v.file.trim_start_matches("src/"))),
                v.what,
                v.target
            )),
        }
    }
    for (k, (f, t, why)) in ALLOWED.iter().enumerate() {
        if !used.contains(&k) {
            errors.push(format!(
                "ALLOWED entry ({f}, {t}) matches nothing any more ({why}): delete it"
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "layering violations:\n{}",
        errors.join("\n")
    );
}

#[test]
fn modules_import_without_cycles() {
    let edges = module_edges(&source_files());
    let errors: Vec<String> = module_cycles(&edges)
        .iter()
        .map(|scc| describe_module_cycle(scc, &edges))
        .collect();
    assert!(errors.is_empty(), "module cycles:\n{}", errors.join("\n"));
}

#[test]
fn checker_catches_bad_imports() {
    let targets = |rel: &str, src: &str| -> Vec<String> {
        check_file(rel, src).into_iter().map(|v| v.target).collect()
    };
    // Upward and sideways imports, in every form a path can take.
    assert_eq!(
        targets("graph/op.rs", "use crate::backend::Device;\n"),
        ["backend"]
    );
    assert_eq!(
        targets(
            "backend/exec.rs",
            "use crate::{graph::Graph, backends::{cpu::CpuDevice, webgpu}};"
        ),
        ["backends/cpu", "backends/webgpu"]
    );
    assert_eq!(
        targets(
            "backends/cpu/kernels/gemm.rs",
            "fn f() { crate::backends::webgpu::WebGpuReg::new(); }"
        ),
        ["backends/webgpu"]
    );
    assert_eq!(
        targets(
            "backends/cpu/kernels/gemm.rs",
            "use super::super::super::webgpu::Ctx;"
        ),
        ["backends/webgpu"]
    );
    assert_eq!(
        targets("model/bert.rs", "let r = crate::backends::registry();"),
        ["backends"]
    );
    assert_eq!(
        targets("backend/sched/cost.rs", "let t = js_sys::Date::now();"),
        ["js_sys"]
    );
    assert_eq!(
        targets("runtime.rs", "#[wasm_bindgen]\npub struct X;"),
        ["wasm_bindgen"]
    );
    assert_eq!(
        targets("model/gguf.rs", "use crate::testing::Rng;"),
        ["testing"]
    );
    // The bottom layers, the CPU pool's threads, models and the wasm bindings.
    assert_eq!(
        targets("error.rs", "use crate::graph::{DType, OpKind};"),
        ["graph", "graph"]
    );
    assert_eq!(
        targets("backends/cpu/threads.rs", "use super::pool::Pool;"),
        ["backends/cpu"]
    );
    assert_eq!(
        targets(
            "backends/cpu/threads.rs",
            "fn f() { crate::backends::cpu::pool::Pool::global(); }"
        ),
        ["backends/cpu"]
    );
    assert_eq!(
        targets("model/smoke.rs", "use crate::backend::run_graph;"),
        ["backend"]
    );
    assert_eq!(
        targets(
            "wasm/bench.rs",
            "use crate::backends::cpu::CpuDevice;\n\
             fn f() { crate::backends::webgpu::all_devices_buffers(); }\n\
             fn g() { crate::backends::cpu::threads::count(); }"
        ),
        ["backends/cpu", "backends/webgpu", "backends/cpu/threads"]
    );
    assert_eq!(
        targets("testing/sched.rs", "use crate::model::bert::Bert;"),
        ["model"]
    );
    // The line is reported.
    let v = check_file("graph/mod.rs", "\n\nuse crate::runtime::Runtime;");
    assert_eq!((v.len(), v[0].line), (1, 3));
}

#[test]
fn checker_finds_layer_cycles() {
    let edges = |files: &[(&str, &str)]| -> Vec<Edge> {
        files
            .iter()
            .flat_map(|(rel, src)| layer_edges(rel, src))
            .collect()
    };
    // The two loops this checker was written against: error <-> graph, threads <-> pool.
    let e = edges(&[
        ("graph/dtype.rs", "use crate::error::{Error, Result};"),
        ("error.rs", "use crate::graph::{DType, OpKind};"),
    ]);
    assert_eq!(find_cycle(&e).unwrap(), ["error", "graph", "error"]);
    let msg = describe_cycle(&find_cycle(&e).unwrap(), &e);
    assert!(msg.contains("src/error.rs:1: crate::graph::DType"), "{msg}");
    let e = edges(&[
        ("backends/cpu/pool.rs", "use super::threads::MAX_THREADS;"),
        ("backends/cpu/threads.rs", "use super::pool::Pool;"),
    ]);
    assert_eq!(
        find_cycle(&e).unwrap(),
        ["backends/cpu", "backends/cpu/threads", "backends/cpu"]
    );
    // A longer loop, through layers the rules let import each other.
    let e = edges(&[
        ("bench.rs", "use crate::testing::cases;"),
        ("testing/mod.rs", "use crate::runtime::Runtime;"),
        ("runtime/mod.rs", "use crate::bench::MatmulProblem;"),
    ]);
    assert_eq!(
        find_cycle(&e).unwrap(),
        ["bench", "testing", "runtime", "bench"]
    );
    // Downward only, unit-test code, the crate root and a layer's own modules: no cycle.
    let e = edges(&[
        ("graph/dtype.rs", "use crate::error::Error;"),
        (
            "backend/mod.rs",
            "use crate::graph::Graph; use crate::Error;",
        ),
        (
            "model/bert.rs",
            "#[cfg(test)]\nmod t { use crate::testing::Rng; }",
        ),
        ("testing/mod.rs", "use crate::backends::registry;"),
        (
            "backends/cpu/mod.rs",
            "use super::webgpu; use crate::backends::cpu::pool::Pool;",
        ),
        (
            "lib.rs",
            "pub use error::Error; fn f() { crate::backends::registry(); }",
        ),
    ]);
    assert_eq!(find_cycle(&e), None, "{e:?}");
}

#[test]
fn checker_ignores_what_is_not_an_import() {
    let clean = |rel: &str, src: &str| {
        let v = check_file(rel, src);
        assert!(v.is_empty(), "{rel}: {v:?}");
    };
    // Comments, doc comments and strings mention layers freely.
    clean(
        "graph/op.rs",
        "// use crate::backends::cpu;\n/// see [`crate::backend::Device`]\n\
         /* crate::backends /* nested */ js_sys */ fn f() -> &'static str { \"crate::backend::x\" }\n\
         const R: &str = r#\"use crate::backends;\"#; const C: char = '\"'; fn g<'a>(x: &'a u8) {}",
    );
    // Own layer, lower layers, the clock's JS access, wasm's bindings, test support in tests.
    clean(
        "backends/cpu/buffer.rs",
        "use crate::backend::Device; use crate::graph::Graph; use super::kernels;",
    );
    clean("clock.rs", "fn now() -> f64 { js_sys::Date::now() }");
    clean(
        "wasm/mod.rs",
        "use wasm_bindgen::prelude::*; use crate::runtime::Runtime;",
    );
    clean(
        "model/gguf.rs",
        "#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::testing::Rng;\n}",
    );
    clean(
        "backends/cpu/buffer.rs",
        "#[cfg(test)]\nuse crate::testing::Rng;\nfn f() {}",
    );
    clean(
        "model/bert.rs",
        "#[cfg(all(test, not(target_arch = \"wasm32\")))]\nmod t { use crate::testing::Rng; }",
    );
    // `wasm_bindgen_test` is the test harness, not a binding type.
    clean(
        "backends/cpu/kernels/simd.rs",
        "#[cfg_attr(target_arch = \"wasm32\", wasm_bindgen_test::wasm_bindgen_test)] fn t() {}",
    );
    // Test support stays out of non-test code, even right after a test module, and under a
    // cfg that also holds outside tests.
    let bad = [
        "#[cfg(test)]\nmod tests {}\nuse crate::testing::Rng;",
        "#[cfg(not(test))]\nuse crate::testing::Rng;",
        "#[cfg(any(test, feature = \"testing\"))]\nuse crate::testing::Rng;",
    ];
    for src in bad {
        assert_eq!(check_file("model/gguf.rs", src).len(), 1, "{src}");
    }
}

#[test]
fn checker_finds_module_cycles() {
    let files = |fs: &[(&str, &str)]| -> Vec<(String, String)> {
        fs.iter()
            .map(|(rel, src)| (rel.to_string(), src.to_string()))
            .collect()
    };
    let cycles = |fs: &[(&str, &str)]| module_cycles(&module_edges(&files(fs)));
    // Two siblings importing each other (through `super::` and through `crate::`), while
    // their parent only declares them and re-exports their items, in every form.
    let graph = [
        (
            "graph/mod.rs",
            "mod dtype;\npub mod kquant;\npub use dtype::{DType, QK as BLOCK};\n\
             pub use self::kquant::*;\npub(crate) use crate::graph::kquant::Block;\n\
             pub fn f() {}",
        ),
        (
            "graph/dtype.rs",
            "use super::f;\n\nfn g() -> super::kquant::Block { todo!() }",
        ),
        ("graph/kquant.rs", "use crate::graph::dtype::DType;"),
    ];
    let e = module_edges(&files(&graph));
    let c = module_cycles(&e);
    assert_eq!(c, [["graph::dtype", "graph::kquant"]]);
    let msg = describe_module_cycle(&c[0], &e);
    assert!(
        msg.contains("src/graph/kquant.rs:1: crate::graph::dtype::DType")
            && msg.contains("src/graph/dtype.rs:3: crate::graph::kquant::Block"),
        "{msg}"
    );
    // A path resolves to its longest prefix that is a module: the parent for what it
    // re-exports, the crate root for `crate::Result`.
    let to = |rel: &str, src: &str| -> Vec<String> {
        let mut fs = files(&graph);
        fs.push((rel.to_string(), src.to_string()));
        module_edges(&fs)
            .into_iter()
            .filter(|e| e.from == module_name(&module_of(rel)))
            .map(|e| e.to)
            .collect()
    };
    assert_eq!(
        to(
            "graph/op.rs",
            "use crate::graph::{DType, dtype::QK};\nfn f() -> crate::Result<()> { Ok(()) }"
        ),
        ["graph::dtype"]
    );
    // Three modules in a loop, one step written inside a function.
    let webgpu = [
        (
            "backends/webgpu/mod.rs",
            "mod context;\nmod ops;\nmod shader;\npub use context::Ctx;",
        ),
        (
            "backends/webgpu/context.rs",
            "use super::shader::ShaderKey;",
        ),
        (
            "backends/webgpu/shader.rs",
            "fn f() { super::ops::Kernel::run(); }",
        ),
        (
            "backends/webgpu/ops.rs",
            "use crate::backends::webgpu::{buffer, context::Ctx};",
        ),
        ("backends/webgpu/buffer.rs", ""),
    ];
    assert_eq!(
        cycles(&webgpu),
        [[
            "backends::webgpu::context",
            "backends::webgpu::ops",
            "backends::webgpu::shader"
        ]]
    );
    // A parent and its children are one namespace: a parent that uses what it re-exports,
    // or calls into a child by a relative path or through a module a `use` named (under
    // another name), while the child uses the parent, makes no cycle.
    let program = "use super::Runtime;";
    assert_eq!(
        cycles(&[
            (
                "runtime/mod.rs",
                "mod program;\npub use program::Program;\npub struct Runtime;"
            ),
            ("runtime/program.rs", program),
        ]),
        Vec::<Vec<String>>::new()
    );
    let e = module_edges(&files(&[
        (
            "runtime/mod.rs",
            "mod program;\npub use program::Program;\npub struct Runtime { p: Program }",
        ),
        ("runtime/program.rs", program),
    ]));
    assert_eq!(module_cycles(&e), Vec::<Vec<String>>::new());
    assert!(e.is_empty(), "{e:?}");
    let gemm = ("backends/cpu/kernels/gemm.rs", "use super::Epilogue;");
    for parent in [
        "mod gemm;\npub struct Epilogue;\nfn run() { gemm::matmul(); }",
        "mod gemm;\npub struct Epilogue;\nuse self::gemm as g;\nfn run() { g::matmul(); }",
    ] {
        assert_eq!(
            cycles(&[("backends/cpu/kernels/mod.rs", parent), gemm]),
            Vec::<Vec<String>>::new(),
            "{parent}"
        );
    }
    let e = module_edges(&files(&[
        (
            "model/mod.rs",
            "use crate::model::tokenizer as tok;\nfn f() { tok::llm::Llm::new(); }",
        ),
        ("model/tokenizer.rs", ""),
        ("model/tokenizer/llm.rs", ""),
    ]));
    assert!(e.is_empty(), "{e:?}");
    // Unit-test code and a module's references to itself are no imports.
    assert_eq!(
        cycles(&[
            (
                "graph/op.rs",
                "#[cfg(test)]\nmod tests {\n    use crate::graph::tensor::Tensor;\n}\n\
                 use crate::graph::op::Op;"
            ),
            ("graph/tensor.rs", "use super::op::Op;"),
        ]),
        Vec::<Vec<String>>::new()
    );
}
