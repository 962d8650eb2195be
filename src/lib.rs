//! agentsky: call your AI agents as tools from any MCP client. A Cloudflare Worker.
//!
//! The map:
//! - [`app`] — the whole server as `handle(env, request) -> response`; routes to the faces below and writes
//!   each request's log line and metrics (`app::observe`).
//! - [`mcp`] — the MCP transport (Streamable HTTP, stateless, both protocol eras) over a [`mcp::ToolHost`]:
//!   tools, resources, prompts, completions, tasks and progress.
//! - [`operator_mcp`], [`rest`], [`openapi`], [`ops::help`], [`help_mcp`], [`console`] — the faces of the one
//!   operation table, [`ops::OPS`] (the console is the people's face: every page a browser opens).
//! - [`receivers`] — what other services post to: Stripe's events, a workspace's records webhook.
//! - [`ops`] — the table and one file of handlers per contract area, with the MCP resource and prompt tables
//!   beside it (`ops::resources`, `ops::prompts`).
//! - [`agent`] — the session server: the eleven tools a running agent gets.
//! - [`runner`] — the runner protocol (`/v1/runner/*`) and the jobs the server gives a runner.
//! - [`oauth`] — OAuth 2.1 for MCP clients that cannot send a bearer header (discovery, clients, codes).
//! - [`domain`] — services every face shares (task folders, blobs, idempotency, rate buckets, indexing).
//! - [`session`] — a session's event log and turn state, pure over its Durable Object's storage.
//! - [`turns`] — a turn, run: the step loop, the `openai` harness, the wallet's holds and settlement.
//! - [`objects`] — the Durable Objects' shells (a session, a workspace's feed).
//! - [`rules`] — pure domain logic (ids, slugs, limits, rate buckets, sealing, prices, policy).
//! - [`store`] — every SQL statement, over the [`store::Sql`] trait (D1 in the Worker, SQLite in tests).
//! - [`identity`] — who is calling and their role in each workspace (below the store and every face).
//! - [`cx`] — what a handler may use: bindings, clock, caller, workspace rules.
//! - [`egress`] — the one door to URLs a tenant chose (the outbound rule, redirects).
//! - [`error`], [`http`], [`keycache`] — the one error type, request and response shapes, the key cache.
//! - `edge` (wasm32 only) — the Worker's entry points, D1 and Durable Object adapters.
//!
//! The core never names `worker::`; only `edge` does. Dependencies point down this list's layers
//! (`tests/host/layering.rs`; `docs/architecture.md` draws them).

pub mod agent;
pub mod app;
pub mod console;
pub mod cx;
pub mod domain;
pub mod egress;
pub mod error;
pub mod help_mcp;
pub mod http;
pub mod identity;
pub mod keycache;
pub mod mcp;
pub mod oauth;
pub mod objects;
pub mod openapi;
pub mod operator_mcp;
pub mod ops;
pub mod receivers;
pub mod rest;
pub mod rules;
pub mod runner;
pub mod session;
pub mod store;
pub mod turns;

#[cfg(target_arch = "wasm32")]
mod edge;

/// Every schema the Worker publishes, by key, derived from the types: what `src/schemas.json` must hold
/// (the Worker reads that file instead of deriving them; see `rules::schema`).
#[cfg(not(target_arch = "wasm32"))]
pub fn published_schemas() -> std::collections::BTreeMap<String, serde_json::Value> {
    let ops = ops::OPS.iter().flat_map(|op| {
        [(op.schema_key("params"), op.params_schema().clone()), (op.schema_key("result"), op.result_schema().clone())]
    });
    ops.chain(agent::published_schemas())
        .chain(ops::memory::published_schemas())
        .chain(turns::agent_tools::published_schemas())
        .collect()
}
