//! The console's style sheet, script, icon, service worker and manifest: static assets deployed beside the
//! Worker (build.rs copies them beside the Help Center's pages), read through [`Assets`]; nothing comes
//! from elsewhere, so the console works offline on loopback. The style sheet, script and icon are served
//! under names carrying a hash of their content, so browsers cache them for good and a new build is
//! fetched at once.

use crate::cx::Assets;
use crate::http::HttpResponse;

/// (name, served name, content type), as build.rs tabled them.
const FILES: &[(&str, &str, &str)] = include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));

/// The URL an asset is served at.
pub fn url(name: &str) -> String {
    let served = FILES.iter().find(|(n, _, _)| *n == name).map_or(name, |(_, served, _)| served);
    format!("/console/assets/{served}")
}

/// `GET /console/assets/<served name>`, `GET /console/sw.js` (`sw.js`) and `GET /console/manifest.webmanifest`.
pub async fn serve(assets: &dyn Assets, served: &str) -> HttpResponse {
    let Some((name, served, kind)) = FILES.iter().find(|(_, s, _)| *s == served) else {
        return HttpResponse::text(404, "text/plain; charset=utf-8", "no such asset\n");
    };
    let body = match assets.get(format!("help/_console/{served}")).await {
        Ok(Some(body)) => body,
        missing => {
            let why = missing.err().unwrap_or_else(|| "missing".into());
            crate::error::log_line(&format!("console asset {served}: {why}"));
            return HttpResponse::text(503, "text/plain; charset=utf-8", "the console's files are not deployed\n");
        }
    };
    let resp = match *name {
        // The service worker: at a fixed URL (a browser checks it for updates there), never cached long,
        // with the console's scope.
        "sw.js" => HttpResponse::text(200, kind, body.into_bytes())
            .with_header("cache-control", "no-cache")
            .with_header("service-worker-allowed", "/console/"),
        // The web app manifest: the console installs as an app (a phone's home screen, a desktop window).
        "manifest.webmanifest" => HttpResponse::text(200, kind, body.replace("ICON", &url("icon.svg")).into_bytes())
            .with_header("cache-control", "no-cache"),
        _ => HttpResponse::text(200, kind, body.into_bytes())
            .with_header("cache-control", "public, max-age=31536000, immutable"),
    };
    resp.with_header("x-content-type-options", "nosniff")
}
