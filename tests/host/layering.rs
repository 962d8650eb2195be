//! The layering, enforced: each top-level module of `src/` may name only the modules below it, so
//! dependencies point down and faces (the operator's operations, the session server, the runner
//! protocol, the console) share logic through the domain layer, never through each other.
//!
//! A module "names" another when its code (comments stripped) says `crate::that` or `crate::{that, …}`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What each module may name besides itself. A module missing here is a test failure: a new module
/// must say where it sits.
const MAY_NAME: &[(&str, &[&str])] = &[
    // Foundations: pure rules, the error vocabulary, HTTP shapes, who is calling.
    ("http", &[]),
    ("rules", &["error"]),
    ("error", &["http"]),
    ("identity", &["rules"]),
    // The callers this isolate looked up lately: the door reads it, every revocation clears it.
    ("keycache", &["identity"]),
    // Every SQL statement (`stmt!` is the store's own macro, exported at the crate root).
    ("store", &["rules", "error", "identity", "stmt"]),
    // What a handler may use, and the one door to tenant URLs.
    ("cx", &["rules", "error", "http", "identity", "store", "session"]),
    ("egress", &["rules", "error", "http", "cx"]),
    // The session's core: event log and turn state, pure over the object's storage.
    ("session", &["rules", "error", "http", "identity", "store"]),
    // Services every face shares.
    ("domain", &["rules", "error", "http", "identity", "store", "cx", "egress", "session"]),
    // A turn, run: the step loop and the harnesses. The `openai` harness calls the session server's
    // tools as their client, the one face it names.
    ("turns", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "agent"]),
    // The MCP transport, below the faces that speak it.
    ("mcp", &["rules", "error", "http"]),
    // Faces. None names another face; the console and the MCP/REST adapters drive the operation table.
    ("ops", &["rules", "error", "http", "identity", "keycache", "store", "cx", "egress", "session", "domain", "mcp"]),
    ("agent", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "mcp"]),
    ("runner", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain"]),
    // The people's pages: the signed-in console, and the public ones (device sign-in, share links, the
    // Help Center), whose transcript page reads and writes a session's log (`session`).
    ("console", &["rules", "error", "http", "identity", "store", "cx", "egress", "session", "domain", "ops", "oauth"]),
    // OAuth sign-in for MCP clients: its endpoints and client resolution, below the console, whose
    // consent page uses them.
    ("oauth", &["rules", "error", "http", "identity", "keycache", "store", "cx", "egress", "domain"]),
    ("operator_mcp", &["error", "cx", "mcp", "ops"]),
    ("rest", &["error", "http", "cx", "ops"]),
    ("openapi", &["ops"]),
    // The Help Center's own MCP server: two rows of the table, no key.
    ("help_mcp", &["cx", "mcp", "ops"]),
    // What other services post to (Stripe, a workspace's records webhook), acting through the operations'
    // own code.
    ("receivers", &["rules", "error", "http", "store", "cx", "domain", "ops"]),
    // The Worker's side: the whole server, its objects and entry points, on top.
    ("app", &["*"]),
    ("objects", &["*"]),
    ("edge", &["*"]),
];

/// Code without `//` comments (doc comments included) and without string literals' contents.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if in_str {
                if c == '"' && prev != '\\' {
                    in_str = false;
                    kept.push('"');
                }
                prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            } else if c == '"' {
                in_str = true;
                kept.push('"');
                prev = ' ';
            } else if c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            } else {
                kept.push(c);
                prev = c;
            }
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The top-level modules `code` names.
fn named(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::b, c}`: the first segment of each top-level item of the group.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        found.insert(ident(&group[j..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn dependencies_point_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let rules: BTreeMap<&str, &[&str]> = MAY_NAME.iter().copied().collect();
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if rel == "lib.rs" {
            continue;
        }
        let module = rel.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
        let Some(allowed) = rules.get(module.as_str()) else {
            wrong.push(format!("src/{rel}: module `{module}` has no place in MAY_NAME"));
            continue;
        };
        if allowed.contains(&"*") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        for other in named(&code) {
            if other != module && !allowed.contains(&other.as_str()) {
                wrong.push(format!("src/{rel}: `{module}` names `crate::{other}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies that do not point down:\n{}", wrong.join("\n"));
}

#[test]
fn the_scanner_sees_groups_and_skips_comments() {
    let code = code_of("use crate::{a::b, c::{d, e}, f};\n// crate::g\nlet s = \"crate::h\"; crate::i::j();\n");
    assert_eq!(named(&code), ["a", "c", "f", "i"].into_iter().map(String::from).collect());
}

/// The table itself has no circle: were `a` allowed to name `b` and `b`, through any chain, `a`, the two
/// would be one layer in fact, whatever the table says. (A `*` row, the top, names everything and is named
/// by nothing.)
#[test]
fn the_allowed_names_form_no_circle() {
    let rules: BTreeMap<&str, &[&str]> = MAY_NAME.iter().copied().collect();
    for (start, _) in MAY_NAME {
        let mut stack: Vec<Vec<&str>> = vec![vec![start]];
        while let Some(path) = stack.pop() {
            let last = *path.last().unwrap();
            for next in rules.get(last).copied().unwrap_or(&[]) {
                if *next == "*" || !rules.contains_key(next) {
                    continue;
                }
                assert!(*next != *start, "a circle in MAY_NAME: {} → {start}", path.join(" → "));
                if !path.contains(next) {
                    stack.push(path.iter().copied().chain([*next]).collect());
                }
            }
        }
    }
    let named_by_others: Vec<&str> = MAY_NAME.iter().flat_map(|(_, names)| names.iter().copied()).collect();
    for top in ["app", "objects", "edge"] {
        assert!(!named_by_others.contains(&top), "`{top}` is the top: nothing below may name it");
    }
}
