//! MCP Apps (the `io.modelcontextprotocol/ui` extension, SEP-1865): views a client that renders them shows
//! beside a tool's result, in a sandboxed frame. There is one, the approvals view: `list_requests` names it
//! in its `_meta.ui.resourceUri`, and it answers each request with `answer_request`, called through the
//! client. A client without MCP Apps ignores the `_meta` and keeps the tool's text.
//!
//! The view is one static page with its script and style inline: it loads nothing and connects nowhere, so
//! its declared CSP names no domain, and it talks only to the client over `postMessage`.

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
    html: &'static str,
    /// The tool whose results it shows.
    tool: &'static str,
}

pub const APPS: &[App] = &[App {
    uri: APPROVALS,
    name: "approvals",
    title: "Open requests",
    description: "The workspace's open requests as cards with answer buttons; shown beside `list_requests` \
                  by clients that render MCP Apps.",
    html: include_str!("approvals_app.html"),
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
pub fn read(app: &App) -> Vec<Value> {
    vec![json!({"uri": app.uri, "mimeType": MIME, "text": app.html, "_meta": ui_meta()})]
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
        let read = read(find(APPROVALS).unwrap());
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
