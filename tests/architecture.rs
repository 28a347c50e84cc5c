//! The layering of DESIGN.md, checked over the source tree: data flows down, never up.
//!
//! Every `src/**/*.rs` file is lexed (comments, strings and char literals blanked, so prose and
//! messages never count), and each `crate::` path (`use` trees included), each `super::` path
//! resolved against the file's module, and each mention of a JS-binding crate (`wasm_bindgen`,
//! `wasm_bindgen_futures`, `js_sys`, `web_sys`) or of `wgpu` is checked against [`RULES`]:
//!
//! - `clock` and `error` import no other layer; `graph` imports no device layer; `backend`
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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every layer and what each must not reference. A layer is a top-level module of the crate,
/// except `backends`, which is four: its `mod.rs` (the registry), `cpu`, the CPU pool's
/// threads `cpu/threads.rs`, and `webgpu`. The crate root (`lib.rs`, the composition root)
/// is no layer: it joins them all.
const RULES: &[(&str, &[&str])] = &[
    ("clock", ALL_BUT_CLOCK),
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

/// The paths of a use tree (or plain path) starting at `toks[*i]`; advances `*i` past it.
fn use_tree(
    toks: &[(String, usize)],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) {
    let is_ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    };
    match toks.get(*i).map(|t| t.0.as_str()) {
        Some("{") => {
            *i += 1;
            loop {
                match toks.get(*i).map(|t| t.0.as_str()) {
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
            out.push(prefix.to_vec());
        }
        Some(t) if is_ident(t) => {
            let mut path = prefix.to_vec();
            path.push(t.to_string());
            *i += 1;
            if toks.get(*i).map(|t| t.0.as_str()) == Some("::") {
                *i += 1;
                use_tree(toks, i, &path, out);
            } else {
                out.push(path);
            }
        }
        _ => out.push(prefix.to_vec()),
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

/// What one file references: (line, crate-absolute path or crate name, is it a crate name,
/// is it in unit-test code).
fn references(module: &[String], src: &str) -> Vec<(usize, Vec<String>, bool, bool)> {
    let code = strip(src);
    let toks = tokens(&code);
    let mut out = Vec::new();
    let mut depth = 0usize;
    // Inline modules: (name, brace depth inside them).
    let mut mods: Vec<(String, usize)> = Vec::new();
    // The item under `#[cfg(test)]`: the depth it starts at, whether its body is open.
    let mut test_item: Option<(usize, bool)> = None;
    let mut pending_test = false;
    let mut i = 0;
    while i < toks.len() {
        let (t, line) = (toks[i].0.as_str(), toks[i].1);
        let next = |k: usize| toks.get(i + k).map(|t| t.0.as_str());
        let in_test = test_item.is_some();
        match t {
            "#" if next(1) == Some("[") && next(2) == Some("cfg") && next(3) == Some("(") => {
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
            ";" if test_item.is_some_and(|(d, opened)| !opened && d == depth) => {
                test_item = None;
            }
            "crate" if next(1) == Some("::") && (i == 0 || toks[i - 1].0 != "::") => {
                let mut paths = Vec::new();
                i += 2;
                use_tree(&toks, &mut i, &[], &mut paths);
                out.extend(paths.into_iter().map(|p| (line, p, false, in_test)));
                continue;
            }
            "super" if next(1) == Some("::") && (i == 0 || toks[i - 1].0 != "::") => {
                let mut base: Vec<String> = module.to_vec();
                base.extend(mods.iter().map(|m| m.0.clone()));
                while toks.get(i).map(|t| t.0.as_str()) == Some("super")
                    && toks.get(i + 1).map(|t| t.0.as_str()) == Some("::")
                {
                    base.pop();
                    i += 2;
                }
                let mut paths = Vec::new();
                use_tree(&toks, &mut i, &base, &mut paths);
                out.extend(paths.into_iter().map(|p| (line, p, false, in_test)));
                continue;
            }
            _ if CONFINED.iter().any(|(name, _)| *name == t) => {
                out.push((line, vec![t.to_string()], true, in_test));
            }
            _ => {}
        }
        if pending_test && t != "#" {
            // The first token of the item the attribute applies to (attributes are skipped
            // whole above, so this is its visibility, keyword or name).
            pending_test = false;
            if test_item.is_none() {
                test_item = Some((depth, false));
            }
        }
        i += 1;
    }
    out
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

#[test]
fn layers_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 20, "found only {} source files", files.len());
    let mut found = Vec::new();
    let mut edges = Vec::new();
    let mut errors = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .expect("under src/")
            .to_string_lossy()
            .replace('\\', "/");
        let own = layer(&module_of(&rel));
        if own != "root" && !is_layer(&own) {
            errors.push(format!(
                "src/{rel}: layer {own} has no row in RULES: place it in the layer map"
            ));
        }
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{rel}: {e}"));
        found.extend(check_file(&rel, &text));
        edges.extend(layer_edges(&rel, &text));
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
