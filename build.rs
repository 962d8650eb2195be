//! The Help Center, prepared once at build time from `help/<lang>/<slug>.md` (reading order:
//! `help/articles.txt`):
//! - each article rendered to HTML, `$OUT_DIR/help/<lang>/<slug>.html` (the Worker carries no Markdown
//!   parser);
//! - every article's Markdown in one file, `$OUT_DIR/help/articles.json` (`{slug: markdown}`), read once
//!   per isolate for `help_get` and the search;
//! - `$OUT_DIR/articles.rs`, the table of articles (slug, language, translation, title, summary) the
//!   Worker compiles in (`crate::domain::help::ARTICLES`).
//!
//! `scripts/build.sh` deploys `$OUT_DIR/help` as static assets, so no article text sits in the wasm.

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
}
