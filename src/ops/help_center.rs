//! The Help Center (contract: `help_search` / `help_get`, "Help Center server"): the articles and their
//! search are [`crate::domain::help`]'s; they are served here three ways:
//! - `help_search` and `help_get` on `/v1/mcp` (read scope), like every other operation;
//! - `POST /v1/help/mcp`, a second MCP server with only those two tools, no key, and 600 calls a minute
//!   per caller address ([`HelpTools`]);
//! - `GET /help/<slug>` as a web page, which every answer links to ([`serve_page`]).
//!
//! It never touches D1: the public server must cost nothing but CPU.

use crate::cx::Cx;
use crate::domain::help::{self, at_server};
pub use crate::domain::help::{find, Article, HelpArticle, HelpGet, HelpHits, HelpSearch, ARTICLES, SERVER};
use crate::error::ApiError;
use crate::http::HttpResponse;
use crate::mcp::{CallOutcome, ToolHost};
use crate::ops;
use crate::rules::html;
use futures::future::LocalBoxFuture;
use serde_json::Value;
use std::sync::OnceLock;

/// The help server's instructions, shown to the model by clients.
pub const INSTRUCTIONS: &str = "The agentsky Help Center, in English and Chinese. \
help_search finds articles by words or a question; help_get reads one by its slug. \
Answer from the article and give its link (the `url` field).";

/// help_search
pub async fn search(cx: &Cx<'_>, p: HelpSearch) -> Result<HelpHits, ApiError> {
    Ok(help::search_at(&cx.base_url, p))
}

/// help_get
pub async fn get(cx: &Cx<'_>, p: HelpGet) -> Result<HelpArticle, ApiError> {
    help::get_at(&cx.base_url, p)
}

/// The tools of `/v1/help/mcp`, derived once from the operation table's two rows.
pub const TOOLS: [&str; 2] = ["help_search", "help_get"];

fn help_tools() -> &'static [Value] {
    static LIST: OnceLock<Vec<Value>> = OnceLock::new();
    LIST.get_or_init(|| TOOLS.iter().filter_map(|n| ops::find(n)).map(ops::Op::tool_entry).collect())
}

/// The Help Center's own MCP server: no key, and each call counted against the caller's address.
pub struct HelpTools<'a> {
    pub cx: &'a Cx<'a>,
}

/// Calls a minute one address may make to the help server.
pub const CALLS_PER_MINUTE: u32 = 600;

impl ToolHost for HelpTools<'_> {
    fn tools(&self) -> Vec<Value> {
        help_tools().to_vec()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let op = ops::find(name).filter(|op| TOOLS.contains(&op.name))?;
            let cx = self.cx;
            let result = async {
                ops::rate_limit(cx, format!("help:{}", cx.client_ip), CALLS_PER_MINUTE).await?;
                (op.run)(cx, arguments).await
            }
            .await;
            Some(match result {
                Ok(value) => crate::mcp::results::success(value),
                Err(e) => crate::mcp::results::failure(&e.finish(&cx.request_id)),
            })
        })
    }
}

const STYLE: &str =
    "body{font:16px/1.55 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}\
pre{background:#f5f5f5;padding:.8rem;overflow:auto}code{font-size:.92em}table{border-collapse:collapse}\
td,th{border:1px solid #ddd;padding:.3rem .6rem;text-align:left}nav{font-size:.9em;margin-bottom:1.5rem}\
blockquote{border-left:3px solid #ccc;margin:0;padding-left:1rem;color:#555}";

fn page(status: u16, lang: &str, title: &str, nav: &str, body: &str) -> HttpResponse {
    let html = format!(
        "<!doctype html><html lang=\"{lang}\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
<title>{} · agentsky help</title><style>{STYLE}</style></head><body><nav>{nav}</nav>{body}</body></html>",
        html::escape(title)
    );
    HttpResponse::page(status, "text/html; charset=utf-8", "default-src 'none'; style-src 'unsafe-inline'", html)
}

/// `GET /help` (every article) and `GET /help/<slug>` (one, as a page), its examples naming `base`.
pub fn serve_page(slug: &str, base: &str) -> HttpResponse {
    let slug = slug.trim_matches('/');
    if slug.is_empty() {
        let mut body = String::from("<h1>agentsky help</h1>");
        for (lang, heading) in [("en", "English"), ("zh", "中文")] {
            body.push_str(&format!("<h2>{heading}</h2><ul>"));
            for a in ARTICLES.iter().filter(|a| a.lang == lang) {
                body.push_str(&format!(
                    "<li><a href=\"/help/{}\">{}</a> — {}</li>",
                    a.slug,
                    html::escape(a.title()),
                    html::escape(&a.summary())
                ));
            }
            body.push_str("</ul>");
        }
        return page(200, "en", "Help Center", "", &body);
    }
    let Some(a) = find(slug) else {
        let body = "<h1>Not found</h1><p>No such article. <a href=\"/help\">All articles</a></p>";
        return page(404, "en", "Not found", "", body);
    };
    let other = if a.lang == "en" { "中文" } else { "English" };
    let nav = format!("<a href=\"/help\">Help Center</a> · <a href=\"/help/{}\">{other}</a>", a.translation);
    page(200, a.lang, a.title(), &nav, &at_server(a.html, base, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_escape_and_link_the_translation() {
        let resp = serve_page("keys-and-scopes", "https://sky.example");
        let html = String::from_utf8(resp.body).unwrap();
        assert!(html.contains("href=\"/help/zh-keys-and-scopes\""));
        assert!(html.contains("curl -X POST https://sky.example/v1/keys") && !html.contains(SERVER), "{html}");
        let unknown = String::from_utf8(serve_page("keys-and-scopes", "").body).unwrap();
        assert!(unknown.contains("https://&lt;your agentsky server&gt;/v1/keys"), "{unknown}");
        assert_eq!(serve_page("nope", "").status, 404);
        assert_eq!(serve_page("", "").status, 200);
    }
}
