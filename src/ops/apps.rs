//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865): views a client that renders them shows
//! beside a tool's result, in a sandboxed frame. There is one, the approvals view: `list_requests` names it
//! in its `_meta.ui.resourceUri`, and it answers each request with `answer_request`, called through the
//! client. A client without MCP Apps ignores the `_meta` and keeps the tool's text.
//!
//! The view is one static page with its script and style inline: it loads nothing and connects nowhere, so
//! its declared CSP names no domain, and it talks only to the client over `postMessage`. The page is a
//! static asset (build.rs copies it beside the Help Center's), read through [`Assets`], not carried in
//! the wasm.

use crate::cx::Assets;
use crate::error::ApiError;
use serde_json::{json, Value};

/// The MIME type of an MCP App's HTML.
pub const MIME: &str = "text/html;profile=mcp-app";

/// The approvals view's address.
pub const APPROVALS: &str = "ui://agentsky/approvals";

/// One view: its address, name, title, description and page.
pub struct App {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// Its page among the static assets.
    asset: &'static str,
    /// The tool whose results it shows.
    tool: &'static str,
}

pub const APPS: &[App] = &[App {
    uri: APPROVALS,
    name: "approvals",
    title: "Open requests",
    description: "The workspace's open requests as cards with answer buttons; shown beside `list_requests` \
                  by clients that render MCP Apps.",
    asset: "help/_apps/approvals.html",
    tool: "list_requests",
}];

/// The view at `uri`.
pub fn find(uri: &str) -> Option<&'static App> {
    APPS.iter().find(|a| a.uri == uri)
}

/// A tool's `_meta` linking it to its view: `ui.resourceUri`, and the older flat `ui/resourceUri` key
/// clients from before the nested one still read (the reference SDK writes both).
pub fn tool_meta(tool: &str) -> Option<Value> {
    let app = APPS.iter().find(|a| a.tool == tool)?;
    Some(json!({"ui": {"resourceUri": app.uri}, "ui/resourceUri": app.uri}))
}

/// What a client applies to the view's frame: no domain for anything (it loads and fetches nothing), and a
/// border around it.
fn ui_meta() -> Value {
    json!({"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": true}})
}

/// The `resources/list` entries.
pub fn list() -> Vec<Value> {
    APPS.iter()
        .map(|a| {
            json!({
                "uri": a.uri, "name": a.name, "title": a.title, "description": a.description,
                "mimeType": MIME, "_meta": ui_meta()
            })
        })
        .collect()
}

/// `resources/read` of a view.
pub async fn read(app: &App, assets: &dyn Assets) -> Result<Vec<Value>, ApiError> {
    let missing = |why: String| {
        ApiError::cause(format!("{} among the static assets: {why}", app.asset))
            .with_message("this deployment's MCP App views are not deployed")
    };
    let html = assets.get(app.asset.to_owned()).await.map_err(missing)?.ok_or_else(|| missing("missing".into()))?;
    Ok(vec![json!({"uri": app.uri, "mimeType": MIME, "text": html, "_meta": ui_meta()})])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_requests_names_the_approvals_view_and_it_reads_as_an_mcp_app() {
        let meta = tool_meta("list_requests").unwrap();
        assert_eq!(meta["ui"]["resourceUri"], APPROVALS);
        assert_eq!(meta["ui/resourceUri"], APPROVALS);
        assert!(tool_meta("answer_request").is_none());
        struct Built;
        impl Assets for Built {
            fn get(&self, path: String) -> futures::future::LocalBoxFuture<'_, Result<Option<String>, String>> {
                Box::pin(async move { Ok(std::fs::read_to_string(format!("{}/{path}", env!("OUT_DIR"))).ok()) })
            }
        }
        let read = futures::executor::block_on(read(find(APPROVALS).unwrap(), &Built)).unwrap();
        assert_eq!(read[0]["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(read[0]["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
        let html = read[0]["text"].as_str().unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        // Self-contained: nothing loaded from elsewhere, and request text never parsed as HTML.
        for banned in ["src=\"http", "href=\"http", "@import", "innerHTML", "outerHTML", "insertAdjacentHTML"] {
            assert!(!html.contains(banned), "{banned}");
        }
    }
}
