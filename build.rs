//! Renders every help article (`help/<lang>/…/<slug>.md`) to HTML once, at build time, into
//! `$OUT_DIR/help/<lang>/…/<slug>.html`, which `articles!` (src/ops/help_center.rs) bundles beside the
//! Markdown. The Worker carries no Markdown parser.

use std::path::Path;

#[path = "help/render.rs"]
mod render;

fn main() {
    println!("cargo:rerun-if-changed=help");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("help");
    let out = Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("help");
    for lang in ["en", "zh"] {
        render_dir(&root.join(lang), &out.join(lang));
    }
}

fn render_dir(dir: &Path, out: &Path) {
    std::fs::create_dir_all(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a help/ entry").path();
        let name = path.file_name().expect("a file name");
        if path.is_dir() {
            render_dir(&path, &out.join(name));
        } else if path.extension().is_some_and(|e| e == "md") {
            let md = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let html = out.join(name).with_extension("html");
            std::fs::write(&html, render::to_html(&md)).unwrap_or_else(|e| panic!("{}: {e}", html.display()));
        }
    }
}
