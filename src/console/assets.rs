//! The console's style sheet and script, compiled into the Worker: nothing comes from elsewhere, so
//! the console works offline on loopback. Each is served under a name that carries a hash of its
//! content, so browsers cache it for good and a new build is fetched at once.

use crate::http::HttpResponse;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

const FILES: &[(&str, &str, &str)] = &[
    ("console.css", "text/css; charset=utf-8", include_str!("static/console.css")),
    ("console.js", "text/javascript; charset=utf-8", include_str!("static/console.js")),
    ("icon.svg", "image/svg+xml", include_str!("static/icon.svg")),
];

/// The service worker: at a fixed URL (a browser checks it for updates there), never cached long, with
/// the console's scope.
pub fn service_worker() -> HttpResponse {
    HttpResponse::text(200, "text/javascript; charset=utf-8", include_str!("static/sw.js").as_bytes().to_vec())
        .with_header("cache-control", "no-cache")
        .with_header("service-worker-allowed", "/console/")
        .with_header("x-content-type-options", "nosniff")
}

/// The web app manifest: the console installs as an app (a phone's home screen, a desktop window).
pub fn manifest() -> HttpResponse {
    let manifest = include_str!("static/manifest.webmanifest").replace("ICON", &url("icon.svg"));
    HttpResponse::text(200, "application/manifest+json", manifest.into_bytes()).with_header("cache-control", "no-cache")
}

fn hashed() -> &'static Vec<(String, &'static str, &'static str)> {
    static HASHED: OnceLock<Vec<(String, &'static str, &'static str)>> = OnceLock::new();
    HASHED.get_or_init(|| {
        FILES
            .iter()
            .map(|(name, kind, body)| {
                let tag = hex::encode(&Sha256::digest(body.as_bytes())[..5]);
                let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
                (format!("{stem}.{tag}.{ext}"), *kind, *body)
            })
            .collect()
    })
}

/// The URL an asset is served at.
pub fn url(name: &str) -> String {
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    let found = hashed().iter().find(|(n, _, _)| n.starts_with(&format!("{stem}.")) && n.ends_with(&format!(".{ext}")));
    format!("/console/assets/{}", found.map_or(name, |(n, _, _)| n.as_str()))
}

/// `GET /console/assets/<name>`
pub fn serve(name: &str) -> HttpResponse {
    match hashed().iter().find(|(n, _, _)| n == name) {
        Some((_, kind, body)) => HttpResponse::text(200, kind, body.as_bytes().to_vec())
            .with_header("cache-control", "public, max-age=31536000, immutable")
            .with_header("x-content-type-options", "nosniff"),
        None => HttpResponse::text(404, "text/plain; charset=utf-8", "no such asset\n"),
    }
}
