//! The Help Center as web pages: `GET /help` lists every article and `GET /help/<slug>` shows one, its
//! examples naming this deployment, with a link to its translation. The articles are rendered to HTML at
//! build time (`help/render.rs`); this is only their shell. No storage is touched.

use crate::domain::help::{at_server, find, ARTICLES};
use crate::http::HttpResponse;
use maud::{html, Markup, PreEscaped, DOCTYPE};

/// Its own style, inline: the pages stand alone, outside the console's assets.
const STYLE: &str =
    "body{font:16px/1.55 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}\
pre{background:#f5f5f5;padding:.8rem;overflow:auto}code{font-size:.92em}table{border-collapse:collapse}\
td,th{border:1px solid #ddd;padding:.3rem .6rem;text-align:left}nav{font-size:.9em;margin-bottom:1.5rem}\
blockquote{border-left:3px solid #ccc;margin:0;padding-left:1rem;color:#555}";

fn page(status: u16, lang: &str, title: &str, nav: Markup, body: Markup) -> HttpResponse {
    let html = html! {
        (DOCTYPE)
        html lang=(lang) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width";
                title { (title) " · agentsky help" }
                style { (PreEscaped(STYLE)) }
            }
            body { nav { (nav) } (body) }
        }
    };
    HttpResponse::page(
        status,
        "text/html; charset=utf-8",
        "default-src 'none'; style-src 'unsafe-inline'",
        html.into_string(),
    )
}

/// `GET /help` and `GET /help/<slug>`: [`serve_page`] with the article's page read from the static assets.
pub async fn serve(cx: &crate::cx::Cx<'_>, slug: &str) -> HttpResponse {
    let Some(a) = find(slug.trim_matches('/')) else { return serve_page(slug, &cx.base_url, None) };
    match cx.env.assets.get(a.html_path()).await {
        Ok(Some(html)) => serve_page(slug, &cx.base_url, Some(&html)),
        missing => {
            let why = missing.err().unwrap_or_else(|| format!("no {} among the static assets", a.html_path()));
            crate::error::log_line(&format!("help: {why}"));
            let body = html! { h1 { "Not available" } p { "This deployment's Help Center pages are not deployed. " a href="/help" { "All articles" } } };
            page(503, "en", "Not available", html! {}, body)
        }
    }
}

/// `GET /help` (every article) and `GET /help/<slug>` (one, as a page, from `html`: its page as the build
/// rendered it), its examples naming `base`.
pub fn serve_page(slug: &str, base: &str, html: Option<&str>) -> HttpResponse {
    let slug = slug.trim_matches('/');
    if slug.is_empty() {
        let body = html! {
            h1 { "agentsky help" }
            @for (lang, heading) in [("en", "English"), ("zh", "中文")] {
                h2 { (heading) }
                ul {
                    @for a in ARTICLES.iter().filter(|a| a.lang == lang) {
                        li { a href={ "/help/" (a.slug) } { (a.title) } " — " (a.summary) }
                    }
                }
            }
        };
        return page(200, "en", "Help Center", html! {}, body);
    }
    let (Some(a), Some(article)) = (find(slug), html) else {
        let body = html! { h1 { "Not found" } p { "No such article. " a href="/help" { "All articles" } } };
        return page(404, "en", "Not found", html! {}, body);
    };
    let other = if a.lang == "en" { "中文" } else { "English" };
    let nav = html! { a href="/help" { "Help Center" } " · " a href={ "/help/" (a.translation) } { (other) } };
    // The article's HTML is the build's, escaped there.
    page(200, a.lang, a.title, nav, PreEscaped(at_server(article, base, true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::help::SERVER;

    const KEYS: &str = include_str!(concat!(env!("OUT_DIR"), "/help/en/keys-and-scopes.html"));

    #[test]
    fn pages_escape_and_link_the_translation() {
        let resp = serve_page("keys-and-scopes", "https://sky.example", Some(KEYS));
        let html = String::from_utf8(resp.body).unwrap();
        assert!(html.contains("href=\"/help/zh-keys-and-scopes\""));
        assert!(html.contains("curl -X POST https://sky.example/v1/keys") && !html.contains(SERVER), "{html}");
        let unknown = String::from_utf8(serve_page("keys-and-scopes", "", Some(KEYS)).body).unwrap();
        assert!(unknown.contains("https://&lt;your agentsky server&gt;/v1/keys"), "{unknown}");
        assert_eq!(serve_page("nope", "", None).status, 404);
        assert_eq!(serve_page("", "", None).status, 200);
        let zh = "zh-keys-and-scopes";
        assert_eq!(find(zh).unwrap().html_path(), "help/zh/keys-and-scopes.html");
    }
}
