//! The conformance suite's fixture resources, templates and prompts, by the names and texts its scenarios
//! ask for (`resources-*`, `sep-2164-resource-not-found`, `prompts-*`, `completion-complete`,
//! `input-required-result-non-tool-request`, `caching`). Served only beside the fixture tools.

use super::features::{match_template, Completed, Completion, CompletionRef, Features, PromptCall, ReadFailure};
use super::fixtures::{elicit, field, input_required, one, Fixtures, PNG_BASE64};
use super::rpc::RpcError;
use super::Era;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};

const TEMPLATE: &str = "test://template/{id}/data";

/// (uri, name, mimeType, text or `None` for the PNG).
const RESOURCES: &[(&str, &str, &str, Option<&str>)] = &[
    ("test://static-text", "Static text", "text/plain", Some("This is the content of the static text resource.")),
    ("test://static-binary", "Static binary", "image/png", None),
    ("test://watched-resource", "Watched resource", "text/plain", Some("Watched resource content.")),
    ("test://example-resource", "Example resource", "text/plain", Some("Embedded resource content for testing.")),
];

/// A prompt argument: (name, description); every one is required.
type Argument = (&'static str, &'static str);

/// (name, description, arguments).
const PROMPTS: &[(&str, &str, &[Argument])] = &[
    ("test_simple_prompt", "A simple prompt without arguments.", &[]),
    (
        "test_prompt_with_arguments",
        "A prompt that repeats its two arguments.",
        &[("arg1", "First test argument"), ("arg2", "Second test argument")],
    ),
    (
        "test_prompt_with_embedded_resource",
        "A prompt that embeds a resource.",
        &[("resourceUri", "URI of the resource to embed")],
    ),
    ("test_prompt_with_image", "A prompt carrying an image.", &[]),
    ("test_input_required_result_prompt", "Asks the user for context before rendering (2026-07-28).", &[]),
];

/// What `completion/complete` offers for `test_prompt_with_arguments`'s arguments.
const COMPLETIONS: &[&str] = &["paris", "park", "party", "test", "testing", "tested"];

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

impl Features for Fixtures {
    fn resources(&self) -> Vec<Value> {
        RESOURCES
            .iter()
            .map(|(uri, name, mime, _)| json!({"uri": uri, "name": name, "description": name, "mimeType": mime}))
            .collect()
    }

    fn resource_templates(&self) -> Vec<Value> {
        vec![json!({
            "uriTemplate": TEMPLATE, "name": "Template data", "description": "Data for an id.",
            "mimeType": "application/json"
        })]
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<Vec<Value>, ReadFailure>> {
        Box::pin(async move {
            if let Some(vars) = match_template(TEMPLATE, uri) {
                let id = vars["id"].as_str().unwrap_or_default();
                let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                return Ok(vec![json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})]);
            }
            let (_, _, mime, body) = RESOURCES.iter().find(|r| r.0 == uri).ok_or(ReadFailure::NotFound)?;
            Ok(vec![match body {
                Some(body) => json!({"uri": uri, "mimeType": mime, "text": body}),
                None => json!({"uri": uri, "mimeType": mime, "blob": PNG_BASE64}),
            }])
        })
    }

    fn prompts(&self) -> Vec<Value> {
        PROMPTS
            .iter()
            .map(|(name, description, arguments)| {
                let arguments: Vec<Value> =
                    arguments.iter().map(|(n, d)| json!({"name": n, "description": d, "required": true})).collect();
                json!({"name": name, "description": description, "arguments": arguments})
            })
            .collect()
    }

    fn get_prompt<'a>(&'a self, call: PromptCall<'a>) -> LocalBoxFuture<'a, Result<Value, RpcError>> {
        Box::pin(async move {
            let Some((_, description, arguments)) = PROMPTS.iter().find(|p| p.0 == call.name) else {
                return Err(RpcError::invalid_params(format!("Invalid params: no prompt named {:?}", call.name)));
            };
            let arg = |name: &str| call.arguments.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
            if let Some((missing, _)) = arguments.iter().find(|(n, _)| arg(n).is_empty()) {
                return Err(RpcError::invalid_params(format!("Invalid params: argument {missing:?} is required")));
            }
            let messages = match call.name {
                "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
                "test_prompt_with_arguments" => {
                    vec![user(text(&format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))))]
                }
                "test_prompt_with_embedded_resource" => vec![
                    user(json!({"type": "resource", "resource": {
                        "uri": arg("resourceUri"), "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."
                    }})),
                    user(text("Please process the embedded resource above.")),
                ],
                "test_prompt_with_image" => vec![
                    user(json!({"type": "image", "data": PNG_BASE64, "mimeType": "image/png"})),
                    user(text("Please analyze the image above.")),
                ],
                _ => {
                    if call.era == Era::Legacy {
                        vec![user(text("This prompt asks for context through 2026-07-28 input requests."))]
                    } else {
                        let answer = call.input_responses.and_then(|r| r.get("user_context"));
                        match answer.map(|a| field(a, "context")) {
                            None => {
                                let ask = elicit("What context should the prompt use?", "context", "string");
                                return Ok(input_required(one("user_context", ask), None));
                            }
                            Some(context) => vec![user(text(&format!(
                                "Use this context: {}",
                                context.unwrap_or_else(|| "(none given)".into())
                            )))],
                        }
                    }
                }
            };
            Ok(json!({"description": description, "messages": messages}))
        })
    }

    fn complete<'a>(&'a self, request: Completion<'a>) -> LocalBoxFuture<'a, Result<Completed, RpcError>> {
        Box::pin(async move {
            let known = match request.reference {
                CompletionRef::Prompt(name) => PROMPTS.iter().any(|p| p.0 == name),
                CompletionRef::Resource(uri) => uri == TEMPLATE,
            };
            if !known {
                return Err(RpcError::invalid_params("Invalid params: no such prompt or resource template"));
            }
            let values = super::features::filter_prefix(COMPLETIONS.iter().map(|s| s.to_string()), request.value);
            Ok(Completed { values, has_more: false })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn rpc(method: &str, params: Value) -> Value {
        let req = legacy_request(method, params);
        send_with(&spec(), &Fixtures, req).json_body()
    }

    #[test]
    fn the_fixture_server_declares_resources_prompts_and_completions() {
        let params =
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        let answer = send_with(
            &spec(),
            &Fixtures,
            post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})),
        );
        let caps = &answer.json_body()["result"]["capabilities"];
        assert_eq!(caps["prompts"], json!({"listChanged": false}));
        assert_eq!(caps["resources"]["subscribe"], json!(false));
        assert_eq!(caps["completions"], json!({}));
    }

    #[test]
    fn resources_read_by_uri_and_template_and_a_missing_one_is_the_eras_not_found() {
        let text = rpc("resources/read", json!({"uri": "test://static-text"}));
        assert_eq!(text["result"]["contents"][0]["mimeType"], json!("text/plain"));
        let binary = rpc("resources/read", json!({"uri": "test://static-binary"}));
        assert_eq!(binary["result"]["contents"][0]["blob"], json!(PNG_BASE64));
        let templated = rpc("resources/read", json!({"uri": "test://template/123/data"}));
        assert!(templated["result"]["contents"][0]["text"].as_str().unwrap().contains("Data for ID: 123"));
        let missing = rpc("resources/read", json!({"uri": "test://nope"}));
        assert_eq!(missing["error"]["code"], json!(-32002));
        assert_eq!(missing["error"]["data"]["uri"], json!("test://nope"));
        let modern = send_with(&spec(), &Fixtures, modern_request("resources/read", json!({"uri": "test://nope"})));
        assert_eq!(modern.status, 400);
        assert_eq!(modern.json_body()["error"]["code"], json!(-32602));
    }

    #[test]
    fn prompts_substitute_arguments_and_refuse_a_missing_one() {
        let got =
            rpc("prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}));
        assert_eq!(got["result"]["messages"][0]["content"]["text"], json!("Prompt with arguments: arg1='a', arg2='b'"));
        let missing = rpc("prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}));
        assert_eq!(missing["error"]["code"], json!(-32602));
        let not_text = rpc("prompts/get", json!({"name": "test_simple_prompt", "arguments": {"n": 1}}));
        assert_eq!(not_text["error"]["code"], json!(-32602));
        let unknown = rpc("prompts/get", json!({"name": "nope"}));
        assert_eq!(unknown["error"]["code"], json!(-32602));
    }

    #[test]
    fn completion_filters_by_prefix_and_refuses_an_unknown_reference() {
        let params = json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "argument": {"name": "arg1", "value": "par"}});
        let got = rpc("completion/complete", params);
        assert_eq!(
            got["result"]["completion"],
            json!({"values": ["paris", "park", "party"], "total": 3, "hasMore": false})
        );
        let unknown = json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}});
        assert_eq!(rpc("completion/complete", unknown)["error"]["code"], json!(-32602));
        let malformed = json!({"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}});
        assert_eq!(rpc("completion/complete", malformed)["error"]["code"], json!(-32602));
    }

    #[test]
    fn resources_subscribe_is_not_offered_and_a_listen_where_nothing_is_watched_honors_nothing() {
        for method in ["resources/subscribe", "resources/unsubscribe"] {
            assert_eq!(rpc(method, json!({"uri": "test://watched-resource"}))["error"]["code"], json!(-32601));
        }
        let filter =
            json!({"notifications": {"resourceSubscriptions": ["test://watched-resource"], "toolsListChanged": true}});
        let listen = send_with(&spec(), &Fixtures, modern_request("subscriptions/listen", filter));
        assert_eq!((listen.status, listen.header("content-type")), (200, Some("text/event-stream")));
        let body = String::from_utf8(listen.body).unwrap();
        let messages: Vec<Value> =
            body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
        assert_eq!(messages.len(), 2, "{body}");
        assert_eq!(messages[0]["method"], json!("notifications/subscriptions/acknowledged"));
        assert_eq!(messages[0]["params"]["notifications"], json!({}), "nothing here can change");
        let id = messages[1]["id"].clone();
        assert_eq!(messages[0]["params"]["_meta"][super::super::listen::SUBSCRIPTION_ID], id);
        assert_eq!(messages[1]["result"]["resultType"], json!("complete"));
        assert_eq!(messages[1]["result"]["_meta"][super::super::listen::SUBSCRIPTION_ID], id);
        let missing = send_with(&spec(), &Fixtures, modern_request("subscriptions/listen", json!({})));
        assert_eq!((missing.status, missing.json_body()["error"]["code"].clone()), (400, json!(-32602)));
    }

    #[test]
    fn modern_lists_carry_cache_hints_and_legacy_ones_do_not() {
        for method in ["resources/list", "resources/templates/list", "prompts/list"] {
            let modern = send_with(&spec(), &Fixtures, modern_request(method, json!({}))).json_body();
            assert_eq!(modern["result"]["ttlMs"], json!(60_000), "{method}");
            assert_eq!(modern["result"]["cacheScope"], json!("private"));
            assert!(rpc(method, json!({}))["result"].get("ttlMs").is_none());
        }
    }

    #[test]
    fn a_list_refuses_a_cursor_it_never_issued() {
        let params = json!({"cursor": "abc"}).as_object().cloned().unwrap();
        let answered = block_on(super::super::features::answer(&Fixtures, Era::Legacy, "prompts/list", &params));
        assert_eq!(answered.unwrap().unwrap_err().code, super::super::rpc::INVALID_PARAMS);
    }
}
