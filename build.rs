//! The static files, prepared once at build time. The Help Center, from `help/<lang>/<slug>.md` (reading
//! order: `help/articles.txt`):
//! - each article rendered to HTML, `$OUT_DIR/help/<lang>/<slug>.html` (the Worker carries no Markdown
//!   parser);
//! - every article's Markdown in one file, `$OUT_DIR/help/articles.json` (`{slug: markdown}`), read once
//!   per isolate for `help_get` and the search;
//! - `$OUT_DIR/articles.rs`, the table of articles (slug, language, translation, title, summary) the
//!   Worker compiles in (`crate::domain::help::ARTICLES`);
//!
//! and the MCP App's page (`src/ops/approvals_app.html`), `$OUT_DIR/help/_apps/approvals.html`, and the
//!   console's static files (`src/console/static`), `$OUT_DIR/help/_console/`.
//!
//! `scripts/build.sh` deploys `$OUT_DIR/help` as static assets, so none of these sits in the wasm.

use std::fmt::Write as _;
use std::path::Path;

#[path = "help/render.rs"]
mod render;

fn main() {
    println!("cargo:rerun-if-changed=help");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("help");
    let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().expect("a parent")).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    let order = read(&root.join("articles.txt"));
    let slugs = order.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
    let (mut table, mut texts) = (String::from("&[\n"), serde_json::Map::new());
    for slug in slugs {
        for (lang, twin) in [("en", format!("zh-{slug}")), ("zh", slug.to_owned())] {
            let md = read(&root.join(lang).join(format!("{slug}.md")));
            write(&out_dir.join("help").join(lang).join(format!("{slug}.html")), &render::to_html(&md));
            let id = if lang == "en" { slug.to_owned() } else { format!("zh-{slug}") };
            let (title, summary) = (render::title(&md, &id), render::summary(&md));
            // `{:?}` of a str is a valid Rust string literal.
            writeln!(
                table,
                "    Article {{ slug: {id:?}, lang: {lang:?}, translation: {twin:?}, title: {title:?}, summary: {summary:?} }},"
            )
            .expect("a String");
            texts.insert(id, md.into());
        }
    }
    table.push(']');
    write(&out_dir.join("articles.rs"), &table);
    write(&out_dir.join("help/articles.json"), &serde_json::Value::Object(texts).to_string());
    // The MCP App's page, deployed with them (every asset lives under /help, which the Worker answers).
    println!("cargo:rerun-if-changed=src/ops/approvals_app.html");
    write(&out_dir.join("help/_apps/approvals.html"), &read(&root.join("../src/ops/approvals_app.html")));
    console_assets(&root.join("../src/console/static"), &out_dir, &write);
}

/// The console's style sheet, script and icon under names carrying a hash of their content (browsers
/// cache them for good, and a new build is fetched at once), with the service worker and the manifest
/// under their own: copied to `$OUT_DIR/help/_console/`, and tabled (name, served name, type) in
/// `$OUT_DIR/console_assets.rs` for `crate::console::assets`.
fn console_assets(dir: &Path, out_dir: &Path, write: &dyn Fn(&Path, &str)) {
    use sha2::{Digest, Sha256};
    println!("cargo:rerun-if-changed=src/console/static");
    let files = [
        ("console.css", "text/css; charset=utf-8", true),
        ("console.js", "text/javascript; charset=utf-8", true),
        ("icon.svg", "image/svg+xml", true),
        ("sw.js", "text/javascript; charset=utf-8", false),
        ("manifest.webmanifest", "application/manifest+json", false),
    ];
    let mut table = String::from("&[\n");
    for (name, kind, hashed) in files {
        let path = dir.join(name);
        let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let served = match hashed {
            true => {
                let tag = hex::encode(&Sha256::digest(body.as_bytes())[..5]);
                let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
                format!("{stem}.{tag}.{ext}")
            }
            false => name.to_owned(),
        };
        write(&out_dir.join("help/_console").join(&served), &body);
        writeln!(table, "    ({name:?}, {served:?}, {kind:?}),").expect("a String");
    }
    table.push(']');
    write(&out_dir.join("console_assets.rs"), &table);
}
