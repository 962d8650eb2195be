//! The layering, enforced, over the whole tree: the Worker (`src/`), the CLI (`cli/src/`) and the crate the
//! two share (`wire/src/`).
//!
//! - Each crate's top-level modules form one ordered list, bottom to top: a module may name only modules
//!   listed before it (below it), and of those only the ones its row lists. So dependencies point down, and
//!   no two modules name each other, however indirectly. Comments group the rows into layers; within a
//!   layer the rows' order is the order too, so a same-layer name (`error` → `http`, `console` → `oauth`)
//!   is allowed only upward from a later row to an earlier one, and only where that row lists it.
//! - Inside every folder module (`src/domain/`, `src/console/pages/`, `cli/src/turn/`, …) its files name each
//!   other in no circle: were `a` to name `b` and `b`, through any chain, `a`, the two would be one file in
//!   fact. The folder's own file (`mod.rs`, or `turn.rs` beside `turn/`) declares its files and is not one
//!   of them; what it brings in from a file (`pub use b::Item`) counts as that file when another names it
//!   (`super::Item`).
//!
//! A file "names" a module when its code (comments and literals stripped) has a path to it: `crate::m`,
//! `crate::{m, …}`, `super::m`, `self::m`, a `use` of a module beside it, or, in the CLI's `main.rs`,
//! `sky::m` (its library). Not followed: globs (`use super::*`) and renames (`pub use b::Item as Other`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's top-level modules, bottom to top, each with the modules below it that it may name.
type Layers = &'static [(&'static str, &'static [&'static str])];

/// The Worker's modules, bottom to top. A module missing here is a test failure: a new module must say
/// where it sits.
const WORKER: Layers = &[
    // Foundations: HTTP shapes, the error vocabulary, pure rules, who is calling.
    ("http", &[]),
    ("error", &["http"]),
    ("rules", &["error"]),
    ("identity", &["rules"]),
    // The callers this isolate looked up lately: the door reads it, every revocation clears it.
    ("keycache", &["identity"]),
    // Every SQL statement (and `stmt!`, the store's own macro, exported at the crate root).
    ("store", &["rules", "error", "identity"]),
    // The session's core: event log and turn state, pure over the object's storage.
    ("session", &["rules", "error", "http", "identity", "store"]),
    // What a handler may use (it reaches sessions through `session`'s calls), and the one door to tenant
    // URLs.
    ("cx", &["rules", "error", "http", "identity", "store", "session"]),
    ("egress", &["rules", "error", "http", "cx"]),
    // The MCP transport, below the faces that speak it.
    ("mcp", &["rules", "error", "http"]),
    // Services every face shares.
    ("domain", &["rules", "error", "http", "identity", "store", "cx", "egress", "session"]),
    // The session server: a face, below `turns` because the `openai` harness calls the session server's
    // tools as their client.
    ("agent", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "mcp"]),
    // A turn, run: the step loop and the harnesses.
    ("turns", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "agent"]),
    // Faces. None names another face (but for `agent`, above); the console and the MCP/REST adapters drive
    // the operation table.
    ("runner", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain"]),
    ("ops", &["rules", "error", "http", "identity", "keycache", "store", "cx", "egress", "session", "domain", "mcp"]),
    // OAuth sign-in for MCP clients: its endpoints and client resolution, below the console, whose consent
    // page uses them.
    ("oauth", &["rules", "error", "http", "identity", "keycache", "store", "cx", "egress", "domain"]),
    // The people's pages: the signed-in console, and the public ones (device sign-in, share links, the
    // Help Center), whose transcript page reads and writes a session's log (`session`).
    ("console", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "ops", "oauth"]),
    ("operator_mcp", &["error", "cx", "mcp", "ops"]),
    ("rest", &["error", "http", "cx", "ops"]),
    ("openapi", &["ops"]),
    // The Help Center's own MCP server: two rows of the table, no key.
    ("help_mcp", &["cx", "mcp", "ops"]),
    // What other services post to (Stripe, a workspace's records webhook), acting through the operations'
    // own code.
    ("receivers", &["rules", "error", "http", "store", "cx", "domain", "ops"]),
    // The Worker's side, on top: the whole server's routing, then the entry points and the platform's
    // adapters, then the Durable Objects, which run on those adapters.
    (
        "app",
        &[
            "rules",
            "error",
            "http",
            "keycache",
            "store",
            "session",
            "cx",
            "mcp",
            "agent",
            "runner",
            "ops",
            "oauth",
            "console",
            "operator_mcp",
            "rest",
            "openapi",
            "help_mcp",
            "receivers",
        ],
    ),
    ("edge", &["rules", "error", "http", "store", "session", "cx", "domain", "ops", "app"]),
    ("objects", &["rules", "error", "store", "session", "cx", "domain", "turns", "edge"]),
];

/// Items of the Worker's root that are not modules: the module each stands for.
const WORKER_ROOT: &[(&str, Option<&str>)] = &[("stmt", Some("store"))];

/// The CLI's modules, bottom to top (`main` is the binary, naming its library as `sky::`).
const CLI: Layers = &[
    // Foundations: the command line, where things live, HTTP, files, pure edits and words.
    ("args", &[]),
    ("context", &[]),
    ("api", &[]),
    ("files", &[]),
    ("edit", &[]),
    ("command_line", &[]),
    ("skill", &[]),
    ("harness", &[]),
    ("granted", &[]),
    ("notify", &[]),
    ("config", &["context", "files"]),
    ("grants_file", &["files"]),
    // The runner protocol's calls, which the loop and a turn both make; it names neither.
    ("runner_client", &["api"]),
    // The commands a person runs.
    ("auth", &["api", "config", "context"]),
    ("approvals", &["api", "auth", "config", "context", "notify"]),
    ("company_skills", &["api", "files", "skill"]),
    ("setup", &["api", "auth", "company_skills", "config", "context", "edit", "files", "skill"]),
    // `sky mcp`, and the shims a turn's agent finds first on its `PATH` (which relay through it).
    ("relay", &["api", "grants_file"]),
    ("shim", &["granted", "grants_file", "relay"]),
    // One claimed turn, then the loop that claims them.
    ("turn", &["api", "command_line", "company_skills", "files", "granted", "harness", "runner_client", "shim"]),
    ("runner", &["api", "auth", "command_line", "config", "context", "files", "runner_client", "turn"]),
    // The binary.
    (
        "main",
        &["args", "context", "config", "command_line", "auth", "approvals", "setup", "relay", "shim", "turn", "runner"],
    ),
];

/// Items of the CLI's root (`lib.rs`): its own, naming no module, so any module may name them.
const CLI_ROOT: &[(&str, Option<&str>)] = &[
    ("Error", None),
    ("Result", None),
    ("DEFAULT_SERVER", None),
    ("key_prefix", None),
    ("redact", None),
    ("redaction", None),
];

/// The shared crate's modules, bottom to top.
const WIRE: Layers =
    &[("argv", &[]), ("paths", &[]), ("redact", &[]), ("targets", &[]), ("runner", &[]), ("skills", &["paths"])];

struct Crate {
    dir: &'static str,
    layers: Layers,
    root_items: &'static [(&'static str, Option<&'static str>)],
    /// The library's name, as the binary names it.
    alias: Option<&'static str>,
}

const CRATES: &[Crate] = &[
    Crate { dir: ".", layers: WORKER, root_items: WORKER_ROOT, alias: None },
    Crate { dir: "cli", layers: CLI, root_items: CLI_ROOT, alias: Some("sky") },
    Crate { dir: "wire", layers: WIRE, root_items: &[], alias: None },
];

// ---- The scanner: which modules a file names. ----

/// Code without comments (`//`, `/* */`, doc comments) and without the contents of string, raw-string and
/// char literals (a string stays as `""`), so that braces and paths are the code's own.
fn code_of(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let prev = if i > 0 { c[i - 1] } else { ' ' };
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r'
            && (!ident(prev) || (prev == 'b' && (i < 2 || !ident(c[i - 2]))))
            && matches!(c.get(i + 1), Some('"' | '#'))
            && {
                let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
                c.get(i + 1 + hashes) == Some(&'"')
            }
        {
            // A raw string, `r#"…"#`: it ends at a quote followed by as many hashes.
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            i += 2 + hashes;
            while i < c.len()
                && !(c[i] == '"' && c[i + 1..].iter().take(hashes).filter(|&&h| h == '#').count() == hashes)
            {
                i += 1;
            }
            i += 1 + hashes;
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            // An escaped char literal: `'\''`, `'\n'`, `'\u{7f}'`.
            i += 3;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            // A char literal, `'{'`; anything else after a quote is a lifetime or a label.
            i += 3;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A path a file names, as written.
struct Named {
    /// The inline modules (`mod tests {`) it sits in.
    ctx: Vec<String>,
    path: Vec<String>,
    /// Brought in by a `use` (a bare `use b::Item` is `self::b::Item`).
    imported: bool,
}

/// Every path `code` names from the crate root or relative to its own module (`crate::…`, `super::…`,
/// `self::…`, `alias::…` for a binary naming its library, and whatever a `use` brings in).
/// `a::{b, c::{d, self}}` is `a::b`, `a::c::d` and `a::c`.
fn paths_in(code: &str, alias: Option<&str>) -> Vec<Named> {
    let c: Vec<char> = code.chars().collect();
    let is_ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    let word_at = |i: usize| c[i..].iter().take_while(|&&ch| is_ident(ch)).collect::<String>();
    let skip_ws = |mut i: usize| {
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        i
    };
    // One use-tree from `i`, below `prefix`: its paths, and where it ends.
    fn tree(c: &[char], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let is_ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
        let mut path = prefix;
        loop {
            while i < c.len() && c[i].is_whitespace() {
                i += 1;
            }
            if c.get(i) == Some(&'{') {
                i += 1;
                loop {
                    while i < c.len() && (c[i].is_whitespace() || c[i] == ',') {
                        i += 1;
                    }
                    if i >= c.len() || c[i] == '}' {
                        return i + 1;
                    }
                    let before = i;
                    i = tree(c, i, path.clone(), out);
                    // What follows an item up to its comma (`as name`) names nothing.
                    while i < c.len() && c[i] != ',' && c[i] != '}' {
                        i += 1;
                    }
                    if i == before {
                        i += 1;
                    }
                }
            }
            let word: String = c[i.min(c.len())..].iter().take_while(|&&ch| is_ident(ch)).collect();
            if word.is_empty() {
                // `*`, a generic's `<`, or the end: the path so far.
                out.push(path);
                return i;
            }
            i += word.len();
            if word != "self" || path.is_empty() {
                path.push(word);
            }
            let j = {
                let mut j = i;
                while j < c.len() && c[j].is_whitespace() {
                    j += 1;
                }
                j
            };
            if c.get(j) == Some(&':') && c.get(j + 1) == Some(&':') {
                i = j + 2;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let mut found = Vec::new();
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0;
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '{' {
            depth += 1;
            if let Some(name) = pending.take() {
                inline.push((depth, name));
            }
            i += 1;
        } else if ch == '}' {
            if inline.last().is_some_and(|(d, _)| *d == depth) {
                inline.pop();
            }
            depth -= 1;
            i += 1;
        } else if ch == ';' {
            pending = None;
            i += 1;
        } else if is_ident(ch) && (i == 0 || !(is_ident(c[i - 1]) || c[i - 1] == ':')) {
            let word = word_at(i);
            let after = skip_ws(i + word.len());
            if word == "mod" {
                let name = word_at(after);
                if !name.is_empty() && c.get(skip_ws(after + name.len())) == Some(&'{') {
                    pending = Some(name);
                }
            }
            let rooted = |w: &str| ["crate", "super", "self"].contains(&w) || Some(w) == alias;
            let ctx: Vec<String> = inline.iter().map(|(_, n)| n.clone()).collect();
            if word == "use" {
                let mut paths = Vec::new();
                let end = tree(&c, after, Vec::new(), &mut paths);
                for mut path in paths {
                    if !path.first().is_some_and(|first| rooted(first)) {
                        path.insert(0, "self".to_owned());
                    }
                    found.push(Named { ctx: ctx.clone(), path, imported: true });
                }
                i = end.max(i + word.len());
            } else if rooted(&word) && c.get(after) == Some(&':') && c.get(after + 1) == Some(&':') {
                let mut paths = Vec::new();
                let end = tree(&c, i, Vec::new(), &mut paths);
                found.extend(paths.into_iter().map(|path| Named { ctx: ctx.clone(), path, imported: false }));
                i = end.max(i + word.len());
            } else {
                i += word.len();
            }
        } else {
            i += 1;
        }
    }
    found
}

/// A path as seen from `module` (and the inline modules `ctx` within its file), from the crate root:
/// `super::b` in `a::x` is `a::b`.
fn absolute(module: &[String], ctx: &[String], path: &[String], alias: Option<&str>) -> Vec<String> {
    let mut here: Vec<String> = module.iter().chain(ctx).cloned().collect();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            here.clear();
            rest = &path[1..];
        }
        Some(first) if Some(first) == alias => {
            here.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        _ => {}
    }
    while rest.first().is_some_and(|s| s == "super") {
        here.pop();
        rest = &rest[1..];
    }
    here.extend(rest.iter().cloned());
    here
}

// ---- The tree: files, their modules, what they name. ----

struct Source {
    /// The file, from the repository's root.
    file: String,
    /// Its module from the crate root: `src/ops/rows/x.rs` is `ops::rows::x`, `src/ops/mod.rs` is `ops`,
    /// the root file (`lib.rs`) is empty.
    module: Vec<String>,
    /// Every path it names, from the crate root.
    names: Vec<Vec<String>>,
    /// Of those, what its own `use`s bring in (outside inline modules).
    imports: Vec<Vec<String>>,
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn sources(crate_dir: &str, alias: Option<&str>) -> Vec<Source> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = repo.join(crate_dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
            if module.last().is_some_and(|m| m == "mod") || module == ["lib"] {
                module.pop();
            }
            let code = code_of(&std::fs::read_to_string(&path).unwrap());
            let named = paths_in(&code, alias);
            let imports = named
                .iter()
                .filter(|n| n.imported && n.ctx.is_empty())
                .map(|n| absolute(&module, &n.ctx, &n.path, alias))
                .collect();
            let names = named.iter().map(|n| absolute(&module, &n.ctx, &n.path, alias)).collect();
            let file = path.strip_prefix(repo).unwrap().to_string_lossy().replace('\\', "/");
            Source { file, module, names, imports }
        })
        .collect()
}

// ---- The checks. ----

/// What is wrong with a crate's top-level layering.
fn layering_faults(krate: &Crate, sources: &[Source]) -> Vec<String> {
    let mut wrong = Vec::new();
    // The list itself: each module once, each naming only modules below it.
    let mut below: BTreeSet<&str> = BTreeSet::new();
    for (module, names) in krate.layers {
        for name in *names {
            if !below.contains(name) {
                wrong.push(format!("{}: `{module}` may name `{name}`, which is not below it", krate.dir));
            }
        }
        if !below.insert(module) {
            wrong.push(format!("{}: `{module}` is listed twice", krate.dir));
        }
    }
    let modules: BTreeSet<&str> = sources.iter().filter_map(|s| s.module.first()).map(String::as_str).collect();
    for (module, _) in krate.layers {
        if !modules.contains(module) {
            wrong.push(format!("{}: `{module}` is listed but is no module", krate.dir));
        }
    }
    let rules: BTreeMap<&str, &[&str]> = krate.layers.iter().copied().collect();
    let root: BTreeMap<&str, Option<&str>> = krate.root_items.iter().copied().collect();
    for s in sources {
        let Some(module) = s.module.first() else { continue };
        let Some(allowed) = rules.get(module.as_str()) else {
            wrong.push(format!("{}: module `{module}` has no place in the layers", s.file));
            continue;
        };
        for name in &s.names {
            let Some(first) = name.first() else { continue };
            let other = match root.get(first.as_str()) {
                Some(None) => continue,
                Some(Some(owner)) => *owner,
                None if modules.contains(first.as_str()) => first.as_str(),
                None => {
                    wrong.push(format!("{}: names `crate::{first}`, no module nor a known root item", s.file));
                    continue;
                }
            };
            if other != module && !allowed.contains(&other) {
                wrong.push(format!("{}: `{module}` names `{other}`", s.file));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    wrong
}

/// The edges between the children of `folder`: `a → b` when a file of child `a` names child `b`, directly
/// or through what the folder's own file brings in from `b` (`pub use b::Item`, named as `super::Item`). The
/// folder's own file (its `mod.rs`, or the `folder.rs` beside it) is not a child: it declares them all.
fn edges_in(sources: &[Source], folder: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let n = folder.len();
    let inside = || sources.iter().filter(|s| s.module.len() > n && s.module.starts_with(folder));
    let children: BTreeSet<&String> = inside().map(|s| &s.module[n]).collect();
    let brought: BTreeMap<&String, &String> = sources
        .iter()
        .filter(|s| s.module == folder)
        .flat_map(|s| &s.imports)
        .filter(|p| p.len() > n + 1 && p.starts_with(folder) && children.contains(&p[n]))
        .map(|p| (p.last().unwrap(), &p[n]))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in inside() {
        let from = &s.module[n];
        let to = edges.entry(from.clone()).or_default();
        for name in s.names.iter().filter(|name| name.len() > n && name.starts_with(folder)) {
            let child = if children.contains(&name[n]) { Some(&name[n]) } else { brought.get(&name[n]).copied() };
            if let Some(child) = child.filter(|child| *child != from) {
                to.insert(child.clone());
            }
        }
    }
    edges
}

/// The circles of a graph: its strongly connected parts of two or more, each with its edges.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<(BTreeSet<String>, Vec<String>)> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = edges.keys().map(|k| (k, reach(k))).collect();
    let mut found: Vec<(BTreeSet<String>, Vec<String>)> = Vec::new();
    for (node, seen) in &reaches {
        if !seen.contains(*node) {
            continue;
        }
        let part: BTreeSet<String> = seen.iter().filter(|other| reaches[other].contains(*node)).cloned().collect();
        if found.iter().any(|(p, _)| p == &part) {
            continue;
        }
        let inner = part
            .iter()
            .flat_map(|a| edges[a].iter().filter(|b| part.contains(*b)).map(move |b| format!("{a} → {b}")))
            .collect();
        found.push((part, inner));
    }
    found
}

#[test]
fn dependencies_point_down() {
    let mut wrong = Vec::new();
    for krate in CRATES {
        wrong.extend(layering_faults(krate, &sources(krate.dir, krate.alias)));
    }
    assert!(wrong.is_empty(), "dependencies that do not point down:\n{}", wrong.join("\n"));
}

#[test]
fn no_folder_has_a_circle() {
    let mut wrong = Vec::new();
    for krate in CRATES {
        let sources = sources(krate.dir, krate.alias);
        let folders: BTreeSet<&[String]> =
            sources.iter().flat_map(|s| (1..s.module.len()).map(|k| &s.module[..k])).collect();
        for folder in folders {
            let at = format!("{}/src/{}/", krate.dir, folder.join("/")).trim_start_matches("./").to_owned();
            for (part, inner) in circles(&edges_in(&sources, folder)) {
                let files: Vec<&str> = part.iter().map(String::as_str).collect();
                wrong.push(format!("{at}: {} name each other ({})", files.join(", "), inner.join(", ")));
            }
        }
    }
    assert!(wrong.is_empty(), "circles inside folders:\n{}", wrong.join("\n"));
}

#[test]
fn the_scanner_reads_paths() {
    let code = code_of(concat!(
        "use crate::{a::b, c::{d, self as e}, f};\n// crate::g\n/* crate::h */ let s = \"crate::i\\\" crate::j\";\n",
        "let r = r#\"crate::k \"#; let c = '{'; crate::l::m::<T>();\nmod tests { use super::super::n; }\n",
        "use super::{o::p, *}; use q::{r, s::self};\n",
    ));
    let module: Vec<String> = ["x", "y"].map(String::from).to_vec();
    let found: Vec<String> =
        paths_in(&code, None).iter().map(|n| absolute(&module, &n.ctx, &n.path, None).join("::")).collect();
    assert_eq!(found, ["a::b", "c::d", "c", "f", "l::m", "x::n", "x::o::p", "x", "x::y::q::r", "x::y::q::s"]);
}

#[test]
fn a_circle_is_seen() {
    let edges: BTreeMap<String, BTreeSet<String>> = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
        .into_iter()
        .map(|(a, bs)| (a.to_owned(), bs.iter().map(|b| b.to_string()).collect()))
        .collect();
    let found = circles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1, ["a → b", "b → c", "c → a"]);
}

#[test]
fn a_name_upward_and_a_row_out_of_order_are_refused() {
    let krate = Crate { dir: "x", layers: &[("a", &["b"]), ("b", &[]), ("b", &[])], root_items: &[], alias: None };
    let source = |module: &str| Source {
        file: format!("x/src/{module}.rs"),
        module: vec![module.to_owned()],
        names: vec![vec!["a".to_owned(), "f".to_owned()]],
        imports: Vec::new(),
    };
    let faults = layering_faults(&krate, &[source("a"), source("b")]);
    let expected =
        ["x/src/b.rs: `b` names `a`", "x: `a` may name `b`, which is not below it", "x: `b` is listed twice"];
    assert_eq!(faults, expected);
}
