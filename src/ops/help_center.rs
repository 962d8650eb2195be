//! The Help Center's operations (contract: `help_search` / `help_get`, "Help Center server"): the articles
//! and their search are [`crate::domain::help`]'s; they are served three ways:
//! - `help_search` and `help_get` on `/v1/mcp` (read scope), like every other operation (here);
//! - `POST /v1/help/mcp`, a second MCP server with only those two tools, no key, and 600 calls a minute
//!   per caller address ([`crate::help_mcp`]);
//! - `GET /help/<slug>` as a web page, which every answer links to ([`crate::console::help`]).
//!
//! It never touches D1: the public server must cost nothing but CPU.

use crate::cx::Cx;
use crate::domain::help;
pub use crate::domain::help::{find, Article, HelpArticle, HelpGet, HelpHits, HelpSearch, ARTICLES, SERVER};
use crate::error::ApiError;

/// help_search
pub async fn search(cx: &Cx<'_>, p: HelpSearch) -> Result<HelpHits, ApiError> {
    Ok(help::library(&*cx.env.assets).await?.search_at(&cx.base_url, p))
}

/// help_get
pub async fn get(cx: &Cx<'_>, p: HelpGet) -> Result<HelpArticle, ApiError> {
    help::library(&*cx.env.assets).await?.get_at(&cx.base_url, p)
}
