//! kruise-core's layering, checked from its source (issue #39; the design notes, "Dependency
//! direction").
//!
//! Every top-level module of kruise-core is either a *kind* (one workload or API kind: its
//! planner, its admission, its status) or part of the *base* layer every kind uses (selectors,
//! names, field paths, pod edits, node affinity, ordinals, the shared workload vocabulary, the
//! admission building blocks, ...). The rules:
//!
//! 1. a kind's module never refers to another kind's module;
//! 2. a base module never refers to a kind's module (not even to re-export it);
//! 3. the base modules' references to each other form no cycle.
//!
//! A *reference* is any path in code (not in comments, doc comments or string literals) that
//! names a top-level module: `crate::<module>...`, `$crate::<module>...`, or a `super::` chain
//! that climbs to the crate root and names one (`super::super::<module>`). `use` lines, paths in
//! expressions and types, and `pub use` re-exports all count. The module tree is read from
//! `src/lib.rs` down through `mod` declarations (with `#[path]`), inline `mod name { .. }`
//! blocks included, so `super` resolves as rustc resolves it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The kinds. Every other top-level module is base.
const KINDS: &[&str] = &[
    "cloneset",
    "statefulset",
    "daemonset",
    "sidecarset",
    "workloadspread",
    "pub_budget",
    "containerrecreate",
    "imagepull",
    "broadcastjob",
    "advancedcronjob",
    "ephemeraljob",
    "uniteddeployment",
    "rollouts",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
    PathSep,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Splits Rust source into identifiers, string literals and punctuation, dropping comments
/// (line, block, nested block, doc), char literals, lifetimes and numbers.
fn tokenize(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let n = chars.len();
    let at = |j: usize| chars.get(j).copied().unwrap_or('\0');
    while i < n {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            let start_line = line;
            if c != '"' {
                i += 1;
            }
            i += 1;
            let mut s = String::new();
            while i < n && chars[i] != '"' {
                if chars[i] == '\\' {
                    s.push(chars[i]);
                    i += 1;
                }
                if i < n {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
            }
            i += 1;
            out.push(Token { tok: Tok::Str(s), line: start_line });
        } else if (c == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && matches!(at(i + 2), '"' | '#'))))
            || ((c == 'b' || c == 'c') && at(i + 1) == 'r' && matches!(at(i + 2), '"' | '#'))
        {
            let start_line = line;
            i += if c == 'r' { 1 } else { 2 };
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            let mut s = String::new();
            while i < n {
                if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                s.push(chars[i]);
                i += 1;
            }
            out.push(Token { tok: Tok::Str(s), line: start_line });
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime / label ('a).
            if at(i + 1) == '\\' {
                i += 3;
                while i < n && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_digit() {
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                // `1..2` is a range, not a number with two dots.
                if chars[i] == '.' && at(i + 1) == '.' {
                    break;
                }
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let mut ident: String = chars[start..i].iter().collect();
            if let Some(raw) = ident.strip_prefix("r#") {
                ident = raw.to_string();
            }
            out.push(Token { tok: Tok::Ident(ident), line });
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token { tok: Tok::PathSep, line });
            i += 2;
        } else {
            out.push(Token { tok: Tok::Punct(c), line });
            i += 1;
        }
    }
    out
}

/// One reference from code in `from` (a top-level module) to the top-level module `to`.
#[derive(Debug, Clone)]
struct Reference {
    from: String,
    to: String,
    file: String,
    line: usize,
    path: String,
}

/// A module file to read: where it is, its module path and the directory its children live in.
struct ModFile {
    file: PathBuf,
    module: Vec<String>,
    child_dir: PathBuf,
}

fn is_ident(t: Option<&Token>, name: &str) -> bool {
    matches!(t, Some(Token { tok: Tok::Ident(s), .. }) if s == name)
}

fn is_punct(t: Option<&Token>, c: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(p), .. }) if *p == c)
}

fn is_sep(t: Option<&Token>) -> bool {
    matches!(t, Some(Token { tok: Tok::PathSep, .. }))
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token { tok: Tok::Ident(s), .. }) => Some(s),
        _ => None,
    }
}

/// The first segment of each item in a `{ a::b, c, d::{e, f} }` group starting at `toks[i]`
/// (the `{`), and the index after the group.
fn group_heads(toks: &[Token], mut i: usize) -> (Vec<String>, usize) {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Punct('{') => {
                depth += 1;
                expect_head = depth == 1;
            }
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    return (heads, i + 1);
                }
            }
            Tok::Punct(',') if depth == 1 => expect_head = true,
            Tok::Ident(s) if expect_head && depth == 1 => {
                heads.push(s.clone());
                expect_head = false;
            }
            _ => {}
        }
        i += 1;
    }
    (heads, i)
}

/// Renders the path starting at `toks[i]` for messages: segments joined by `::`, a `{ .. }`
/// group whole.
fn render_path(toks: &[Token], mut i: usize) -> String {
    let mut s = String::new();
    if is_punct(toks.get(i), '$') {
        s.push('$');
        i += 1;
    }
    while let Some(t) = toks.get(i) {
        match &t.tok {
            Tok::Ident(x) => s.push_str(x),
            Tok::Punct('*') => s.push('*'),
            Tok::Punct('{') => {
                let mut depth = 0;
                while let Some(t) = toks.get(i) {
                    match &t.tok {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => depth -= 1,
                        _ => {}
                    }
                    match &t.tok {
                        Tok::Ident(x) => s.push_str(x),
                        Tok::PathSep => s.push_str("::"),
                        Tok::Punct(',') => s.push_str(", "),
                        Tok::Punct(c) => s.push(*c),
                        Tok::Str(_) => {}
                    }
                    if depth == 0 {
                        break;
                    }
                    i += 1;
                }
                break;
            }
            _ => break,
        }
        if !is_sep(toks.get(i + 1)) {
            break;
        }
        s.push_str("::");
        i += 2;
    }
    s
}

/// Reads one module file: its references to top-level modules, and the files of the modules it
/// declares with `mod name;`.
fn scan(src_root: &Path, m: &ModFile, refs: &mut Vec<Reference>, queue: &mut Vec<ModFile>) {
    let text = std::fs::read_to_string(&m.file)
        .unwrap_or_else(|e| panic!("read {}: {e}", m.file.display()));
    let rel = m.file.strip_prefix(src_root).unwrap_or(&m.file).display().to_string();
    let toks = tokenize(&text);
    // Inline `mod name { .. }` blocks open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_path: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match &t.tok {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
                continue;
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        let module: Vec<String> =
            m.module.iter().cloned().chain(inline.iter().map(|(name, _)| name.clone())).collect();
        // `#[path = "x.rs"]`
        if is_punct(Some(t), '#')
            && is_punct(toks.get(i + 1), '[')
            && is_ident(toks.get(i + 2), "path")
            && is_punct(toks.get(i + 3), '=')
        {
            if let Some(Token { tok: Tok::Str(p), .. }) = toks.get(i + 4) {
                pending_path = Some(p.clone());
            }
            i += 5;
            continue;
        }
        if is_ident(Some(t), "mod")
            && !is_sep(toks.get(i.wrapping_sub(1)))
            && let Some(name) = ident(toks.get(i + 1))
        {
            {
                if is_punct(toks.get(i + 2), ';') {
                    assert!(inline.is_empty(), "{rel}: `mod {name};` inside an inline module");
                    let mut child = m.module.clone();
                    child.push(name.to_string());
                    let (file, child_dir) = match pending_path.take() {
                        Some(p) => {
                            let dir = if m.file.ends_with("mod.rs") || m.file.ends_with("lib.rs") {
                                m.child_dir.clone()
                            } else {
                                m.file.parent().map(Path::to_path_buf).unwrap_or_default()
                            };
                            let f = dir.join(p);
                            let cd = f.with_extension("");
                            (f, cd)
                        }
                        None => {
                            let flat = m.child_dir.join(format!("{name}.rs"));
                            if flat.exists() {
                                (flat, m.child_dir.join(name))
                            } else {
                                (m.child_dir.join(name).join("mod.rs"), m.child_dir.join(name))
                            }
                        }
                    };
                    queue.push(ModFile { file, module: child, child_dir });
                    i += 3;
                    continue;
                }
                if is_punct(toks.get(i + 2), '{') {
                    inline.push((name.to_string(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
        }
        if is_punct(Some(t), ';') {
            // A `#[path]` applies to the next `mod name;` only.
            pending_path = None;
        }
        // The start of a path: `crate::`, `$crate::` or `super::` not preceded by `::`.
        let starts = !is_sep(toks.get(i.wrapping_sub(1)))
            && is_sep(toks.get(i + 1))
            && (is_ident(Some(t), "crate") || is_ident(Some(t), "super"));
        if !starts {
            i += 1;
            continue;
        }
        let start = if is_punct(toks.get(i.wrapping_sub(1)), '$') { i - 1 } else { i };
        let (mut base, mut j): (Vec<String>, usize) = if is_ident(Some(t), "crate") {
            (Vec::new(), i + 2)
        } else {
            let mut up = module.clone();
            let mut j = i;
            while is_ident(toks.get(j), "super") && is_sep(toks.get(j + 1)) {
                assert!(!up.is_empty(), "{rel}:{}: `super` above the crate root", t.line);
                up.pop();
                j += 2;
            }
            (up, j)
        };
        let heads: Vec<String> = if !base.is_empty() {
            vec![base[0].clone()]
        } else if is_punct(toks.get(j), '{') {
            let (heads, next) = group_heads(&toks, j);
            j = next;
            heads
        } else if let Some(s) = ident(toks.get(j)) {
            base.push(s.to_string());
            vec![s.to_string()]
        } else {
            Vec::new()
        };
        let from = module.first().cloned();
        if let Some(from) = from {
            for to in heads {
                if to == "self" || to == "super" || to == from {
                    continue;
                }
                refs.push(Reference {
                    from: from.clone(),
                    to,
                    file: rel.clone(),
                    line: t.line,
                    path: render_path(&toks, start),
                });
            }
        }
        i = j.max(i + 1);
    }
}

/// Every reference between top-level modules, and the top-level modules.
fn references() -> (Vec<Reference>, BTreeSet<String>, usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut queue =
        vec![ModFile { file: src.join("lib.rs"), module: Vec::new(), child_dir: src.clone() }];
    let mut refs = Vec::new();
    let mut tops = BTreeSet::new();
    let mut seen = BTreeSet::new();
    while let Some(m) = queue.pop() {
        assert!(m.file.exists(), "module {} has no file {}", m.module.join("::"), m.file.display());
        if let Some(top) = m.module.first() {
            tops.insert(top.clone());
        }
        seen.insert(m.file.clone());
        scan(&src, &m, &mut refs, &mut queue);
    }
    // Every .rs file under src/ is part of the module tree (none escapes the check).
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                assert!(
                    seen.contains(&path),
                    "{} is not in kruise-core's module tree",
                    path.display()
                );
            }
        }
    }
    (refs, tops, seen.len())
}

fn is_kind(m: &str) -> bool {
    KINDS.contains(&m)
}

#[test]
fn kinds_are_top_level_modules() {
    let (_, tops, _) = references();
    for kind in KINDS {
        assert!(tops.contains(*kind), "kind `{kind}` is not a top-level module of kruise-core");
    }
}

#[test]
fn no_kind_refers_to_another_kind_and_base_refers_to_no_kind() {
    let (refs, _, files) = references();
    assert!(files > 50, "only {files} module files found: is the scanner broken?");
    assert!(!refs.is_empty(), "no references found: is the scanner broken?");
    let mut bad = String::new();
    for r in &refs {
        let rule = match (is_kind(&r.from), is_kind(&r.to)) {
            (true, true) => "a kind refers to another kind",
            (false, true) => "a base module refers to a kind",
            _ => continue,
        };
        let _ = writeln!(
            bad,
            "  src/{}:{}: {rule} ({} -> {}): {}",
            r.file, r.line, r.from, r.to, r.path
        );
    }
    assert!(
        bad.is_empty(),
        "kruise-core layering broken (kinds: {KINDS:?}; what two kinds share belongs in the base \
         layer):\n{bad}"
    );
}

#[test]
fn base_modules_form_no_cycle() {
    let (refs, tops, _) = references();
    let mut graph: BTreeMap<String, BTreeMap<String, &Reference>> = BTreeMap::new();
    for top in tops.iter().filter(|t| !is_kind(t)) {
        graph.entry(top.clone()).or_default();
    }
    for r in refs.iter().filter(|r| !is_kind(&r.from) && !is_kind(&r.to)) {
        graph.entry(r.from.clone()).or_default().entry(r.to.clone()).or_insert(r);
    }
    // Depth-first search; a grey node met again closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeMap<String, &Reference>>,
        colour: &mut BTreeMap<&'a str, Colour>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<&'a str>> {
        colour.insert(node, Colour::Grey);
        stack.push(node);
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            match colour.get(next.as_str()).copied().unwrap_or(Colour::White) {
                Colour::Grey => {
                    let from = stack.iter().position(|n| *n == next).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next);
                    return Some(cycle);
                }
                Colour::White => {
                    if let Some(c) = visit(next, graph, colour, stack) {
                        return Some(c);
                    }
                }
                Colour::Black => {}
            }
        }
        stack.pop();
        colour.insert(node, Colour::Black);
        None
    }
    let mut colour = BTreeMap::new();
    for node in graph.keys() {
        if colour.get(node.as_str()).copied().unwrap_or(Colour::White) == Colour::White {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, &graph, &mut colour, &mut stack) {
                let mut msg =
                    format!("kruise-core's base modules form a cycle: {}\n", cycle.join(" -> "));
                for pair in cycle.windows(2) {
                    let r = graph[pair[0]][pair[1]];
                    let _ = writeln!(msg, "  src/{}:{}: {}", r.file, r.line, r.path);
                }
                panic!("{msg}");
            }
        }
    }
}

#[test]
fn the_scanner_sees_paths_and_ignores_comments_and_strings() {
    let toks = tokenize(
        "// crate::a\n/* crate::b /* nested */ crate::c */ let x = \"crate::d\"; let y = r#\"crate::e\"#;\n\
         let z = '\\''; fn f<'a>() {} use crate::f::g; super::super::h::i();",
    );
    let idents: Vec<&str> = toks.iter().filter_map(|t| ident(Some(t))).collect();
    assert!(!idents.contains(&"a") && !idents.contains(&"b") && !idents.contains(&"c"));
    assert!(!idents.contains(&"d") && !idents.contains(&"e"));
    assert!(idents.contains(&"f") && idents.contains(&"h"));
    let line = toks.iter().find(|t| is_ident(Some(t), "h")).map(|t| t.line);
    assert_eq!(line, Some(3));
}
