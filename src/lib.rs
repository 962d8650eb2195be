//! agentsky: call your AI agents as tools from any MCP client.
pub mod http;
pub mod mcp;
