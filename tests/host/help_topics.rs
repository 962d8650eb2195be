//! Help for every documented topic (issue 16, item 2): a `connectors/<kind>` guide for each provider a
//! target can be, every topic the help text names exists, and every link between Help Center articles
//! leads to an article.

use crate::support::TestApp;
use agentsky::rules::targets::{PROVIDERS, SCOPES};
use serde_json::json;

#[test]
fn every_connector_kind_has_a_help_topic_with_what_to_connect_the_scopes_and_a_request_access() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let all = app.ok(&ada.key, "help", json!({}));
    let topics: Vec<&str> = all["topics"].as_array().unwrap().iter().map(|t| t["topic"].as_str().unwrap()).collect();
    for kind in PROVIDERS {
        let topic = format!("connectors/{kind}");
        assert!(topics.contains(&topic.as_str()), "{topic} in {topics:?}");
        let guide = app.ok(&ada.key, "help", json!({"topic": topic}));
        let steps = guide["steps"].as_str().unwrap_or_else(|| panic!("{topic} has steps: {guide}"));
        assert!(steps.contains(&format!("provider `{kind}`")), "{topic}: what to connect: {steps}");
        for scope in SCOPES {
            assert!(steps.contains(&format!("`{scope}`: ")), "{topic} says what `{scope}` allows: {steps}");
        }
        assert!(steps.contains("request_access {\"target\":"), "{topic}: an example request_access: {steps}");
        let ops: Vec<&str> =
            guide["operations"].as_array().unwrap().iter().map(|o| o["name"].as_str().unwrap()).collect();
        assert!(ops.contains(&"connect_target") && ops.contains(&"set_policy"), "{topic}: {ops:?}");
    }
}

#[test]
fn every_topic_the_help_names_exists_and_every_article_link_leads_to_an_article() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let all = app.ok(&ada.key, "help", json!({}));
    let topics: Vec<String> =
        all["topics"].as_array().unwrap().iter().map(|t| t["topic"].as_str().unwrap().to_owned()).collect();
    // Every topic answers, with a summary of its own (never the fallback).
    for topic in &topics {
        let one = app.ok(&ada.key, "help", json!({"topic": topic}));
        let summary = one["topics"][0]["summary"].as_str().unwrap();
        assert!(!summary.starts_with("Operations on "), "`{topic}` has no summary of its own");
    }
    // Topics named in the help's own text, like `connectors/<kind>` or `workflow`, exist.
    let text = all.to_string();
    for kind in PROVIDERS {
        assert!(text.contains(kind), "the connectors summary names `{kind}`");
    }
    // The groups the Help Center's tool-groups article lists are help topics.
    let groups = crate::support::article_markdown("tool-groups");
    for line in groups.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| group")) {
        let group = line.trim_start_matches("| ").split(' ').next().unwrap();
        assert!(topics.iter().any(|t| t == group), "tool-groups names `{group}`, which help does not know");
    }
}
