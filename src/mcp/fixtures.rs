//! The tools the official MCP conformance suite calls by name (`@modelcontextprotocol/conformance`), served
//! at `POST /v1/conformance/mcp` in a test configuration only, so the suite can exercise the real transport.
//!
//! Never mount this in production: it answers anyone, and its names and texts are the suite's, not ours.
//! Each tool's expected shape is the suite's scenario text (`tools-call-*`, `server-stateless`,
//! `input-required-result-*`, `json-schema-2020-12`, `http-custom-header-server-validation`).
//!
//! The `test_input_required_result_*` tools use MRTR (SEP-2322): instead of sending the client a request,
//! they answer `resultType: "input_required"` with `inputRequests`, and finish when the client retries with
//! `inputResponses`. Round state travels in `requestState`, signed so a tampered state is refused; the key
//! is fixed because the state carries nothing secret and these tools only run in tests.

use super::{rpc, CallOutcome, Era, RpcError, ToolCall, ToolHost, ToolReply};
use base64::Engine as _;
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

/// The conformance suite's fixture tools.
pub struct Fixtures;

/// A 1×1 red PNG.
pub(super) const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of 8 kHz mono silence.
const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
const STATE_KEY: &[u8] = b"agentsky conformance fixtures: requestState integrity";

/// (name, description). The first one must be callable with `{}` and succeed: `http-header-validation`
/// calls whatever tool is listed first.
const TOOLS: &[(&str, &str)] = &[
    ("test_simple_text", "Returns a simple text response."),
    ("test_image_content", "Returns a 1x1 PNG image."),
    ("test_audio_content", "Returns a short WAV audio clip."),
    ("test_embedded_resource", "Returns an embedded text resource."),
    ("test_multiple_content_types", "Returns text, an image and an embedded resource."),
    ("test_error_handling", "Always fails with a tool error (isError: true)."),
    ("test_missing_capability", "Needs the client's sampling capability; refused with -32021 without it."),
    ("test_logging_tool", "Does its work without logging unless the request sets a log level."),
    ("test_streaming_elicitation", "Asks the user a question through an elicitation input request."),
    ("test_input_required_result_elicitation", "Asks for the user's name, then greets them."),
    ("test_input_required_result_sampling", "Asks the client's model a question, then reports the answer."),
    ("test_input_required_result_list_roots", "Asks for the client's roots, then lists them."),
    ("test_input_required_result_request_state", "Asks for confirmation and round-trips a signed requestState."),
    ("test_input_required_result_multiple_inputs", "Asks for a name, a model greeting and the roots at once."),
    ("test_input_required_result_multi_round", "Asks two questions in two rounds."),
    ("test_input_required_result_tampered_state", "Refuses a requestState that fails its integrity check."),
    ("test_input_required_result_capabilities", "Asks only through the capabilities the client declared."),
    ("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features"),
    ("test_x_mcp_header", "Echoes a region that clients mirror into the Mcp-Param-Region header."),
    ("test_tool_with_progress", "Reports three progress steps (0, 50, 100 of 100), then answers."),
];

impl ToolHost for Fixtures {
    fn tools(&self) -> Vec<Value> {
        TOOLS
            .iter()
            .map(|(name, description)| json!({"name": name, "description": description, "inputSchema": input_schema(name)}))
            .collect()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let capabilities = Map::new();
            let arguments = arguments.as_object().cloned().unwrap_or_default();
            let call = ToolCall {
                name,
                arguments: std::borrow::Cow::Owned(arguments),
                era: Era::Legacy,
                client_capabilities: &capabilities,
                input_responses: None,
                request_state: None,
                task: super::TaskMode::No,
                progress: None,
            };
            match run(&call) {
                ToolReply::Done(result) => Some(result),
                ToolReply::Success(value) => Some(super::results::success(value)),
                ToolReply::UnknownTool | ToolReply::Refused(_) | ToolReply::Task(_) => None,
            }
        })
    }

    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move { run(&call) })
    }

    fn features(&self) -> Option<&dyn super::features::Features> {
        Some(self)
    }
}

fn input_schema(name: &str) -> Value {
    match name {
        "json_schema_2020_12_tool" => json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }),
        "test_x_mcp_header" => json!({"type": "object", "properties": {
            "region": {"type": "string", "description": "Where to run.", "x-mcp-header": "Region"}
        }}),
        _ => json!({"type": "object", "properties": {}}),
    }
}

fn run(call: &ToolCall) -> ToolReply {
    let answer = match call.name {
        "test_simple_text" => Ok(text("This is a simple text response for testing.")),
        "test_image_content" => {
            Ok(json!({"content": [{"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}]}))
        }
        "test_audio_content" => {
            Ok(json!({"content": [{"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}]}))
        }
        "test_embedded_resource" => Ok(json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."
        }}]})),
        "test_multiple_content_types" => Ok(json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"
            }}
        ]})),
        "test_error_handling" => Ok(json!({
            "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
            "isError": true
        })),
        "test_logging_tool" => {
            Ok(text("Done. This server answers one JSON body per request, so it sends no log messages."))
        }
        "json_schema_2020_12_tool" => {
            Ok(text(&format!("Received {}", Value::Object(call.arguments.clone().into_owned()))))
        }
        "test_x_mcp_header" => Ok(text(&format!("Region: {}", call.arguments.get("region").unwrap_or(&Value::Null)))),
        "test_missing_capability" => require(call, &["sampling"]).map(|()| text("The client declared sampling.")),
        "test_streaming_elicitation" => require(call, &["elicitation"]).map(|()| ask_name(call, "confirmation")),
        "test_input_required_result_elicitation" => {
            require(call, &["elicitation"]).map(|()| ask_name(call, "user_name"))
        }
        "test_input_required_result_sampling" => require(call, &["sampling"]).map(|()| sampling_round(call)),
        "test_input_required_result_list_roots" => require(call, &["roots"]).map(|()| roots_round(call)),
        "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
            require(call, &["elicitation"]).and_then(|()| confirm_round(call))
        }
        "test_input_required_result_multiple_inputs" => {
            require(call, &["elicitation", "sampling", "roots"]).and_then(|()| multiple_inputs_round(call))
        }
        "test_input_required_result_multi_round" => require(call, &["elicitation"]).and_then(|()| multi_round(call)),
        "test_input_required_result_capabilities" => require(call, &[]).map(|()| capabilities_round(call)),
        "test_tool_with_progress" => {
            // Reported only where a stream can carry it (2025 wire, a token, `text/event-stream` accepted).
            for step in [0.0, 50.0, 100.0] {
                if let Some(progress) = call.progress {
                    progress.report(step, Some(100.0), Some(&format!("{step} of 100")));
                }
            }
            Ok(text("Progress test completed."))
        }
        _ => return ToolReply::UnknownTool,
    };
    match answer {
        Ok(result) => ToolReply::Done(result),
        Err(reply) => reply,
    }
}

fn text(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}]})
}

/// These tools need the modern era (MRTR) and the named client capabilities: a tool MUST NOT rely on a
/// capability the client did not declare, so a missing one is −32021 naming it (SEP-2575).
fn require(call: &ToolCall, capabilities: &[&str]) -> Result<(), ToolReply> {
    if call.era == Era::Legacy {
        let message = format!("{} needs protocol 2026-07-28 (multi round-trip requests).", call.name);
        return Err(ToolReply::Done(json!({"content": [{"type": "text", "text": message}], "isError": true})));
    }
    let missing: Map<String, Value> = capabilities
        .iter()
        .filter(|c| !call.client_capabilities.contains_key(**c))
        .map(|c| (c.to_string(), json!({})))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&String> = missing.keys().collect();
    let message = format!("Missing required client capability: {names:?}");
    let error = RpcError::new(rpc::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
        .with_data(json!({"requiredCapabilities": missing}));
    Err(ToolReply::Refused(error))
}

pub(super) fn input_required(requests: Map<String, Value>, state: Option<String>) -> Value {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

pub(super) fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    }})
}

fn sample(prompt: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens
    }})
}

fn list_roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

pub(super) fn one(key: &str, request: Value) -> Map<String, Value> {
    Map::from_iter([(key.to_owned(), request)])
}

/// The retry's answer to input request `key`, if the client sent one.
fn response<'c>(call: &'c ToolCall, key: &str) -> Option<&'c Value> {
    call.input_responses.and_then(|r| r.get(key))
}

/// A form field of an accepted elicitation, as text.
pub(super) fn field(answer: &Value, name: &str) -> Option<String> {
    if answer["action"] != "accept" {
        return None;
    }
    match &answer["content"][name] {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn ask_name(call: &ToolCall, key: &str) -> Value {
    match response(call, key) {
        Some(answer) => match field(answer, "name") {
            Some(name) => text(&format!("Hello, {name}!")),
            None => text("Hello, whoever you are!"),
        },
        None => input_required(one(key, elicit("What is your name?", "name", "string")), None),
    }
}

fn sampling_round(call: &ToolCall) -> Value {
    match response(call, "capital_question") {
        Some(answer) => {
            text(&format!("The model answered: {}", answer["content"]["text"].as_str().unwrap_or("(no text)")))
        }
        None => input_required(one("capital_question", sample("What is the capital of France?", 100)), None),
    }
}

fn roots_round(call: &ToolCall) -> Value {
    match response(call, "client_roots") {
        Some(answer) => {
            let roots: Vec<&str> =
                answer["roots"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
            text(&format!("The client's roots: {}", roots.join(", ")))
        }
        None => input_required(one("client_roots", list_roots()), None),
    }
}

/// `request_state` and `tampered_state`: one confirmation, with a signed state that must come back intact.
fn confirm_round(call: &ToolCall) -> Result<Value, ToolReply> {
    let ask = || {
        input_required(
            one("confirm", elicit("Please confirm", "ok", "boolean")),
            Some(sign(&format!("{}:1", call.name))),
        )
    };
    let Some(state) = call.request_state else {
        return Ok(ask());
    };
    verified(state, &format!("{}:1", call.name))?;
    Ok(match response(call, "confirm") {
        Some(_) => text("state-ok: the requestState came back intact and the user confirmed."),
        None => ask(),
    })
}

fn multiple_inputs_round(call: &ToolCall) -> Result<Value, ToolReply> {
    let expected = format!("{}:1", call.name);
    let all = Map::from_iter([
        ("user_name".to_owned(), elicit("What is your name?", "name", "string")),
        ("greeting".to_owned(), sample("Generate a greeting", 50)),
        ("client_roots".to_owned(), list_roots()),
    ]);
    let Some(state) = call.request_state else {
        return Ok(input_required(all, Some(sign(&expected))));
    };
    verified(state, &expected)?;
    let missing: Map<String, Value> = all.into_iter().filter(|(key, _)| response(call, key).is_none()).collect();
    if missing.is_empty() {
        return Ok(text("Got the name, the greeting and the roots."));
    }
    Ok(input_required(missing, Some(sign(&expected))))
}

/// Round 1 asks for a name; round 2 (state `…:1`) asks for a colour and carries the name in a new state;
/// round 3 (state `…:2:<name>`) completes.
fn multi_round(call: &ToolCall) -> Result<Value, ToolReply> {
    let step1 = || {
        let state = sign(&format!("{}:1", call.name));
        input_required(one("step1", elicit("Step 1: What is your name?", "name", "string")), Some(state))
    };
    let step2 = |name: &str| {
        let state = sign(&format!("{}:2:{name}", call.name));
        input_required(one("step2", elicit("Step 2: What is your favorite color?", "color", "string")), Some(state))
    };
    let Some(state) = call.request_state else {
        return Ok(step1());
    };
    let plain = open(state)?;
    let round = plain.strip_prefix(call.name).and_then(|rest| rest.strip_prefix(':')).unwrap_or("");
    if round == "1" {
        return Ok(match response(call, "step1") {
            Some(answer) => step2(&field(answer, "name").unwrap_or_else(|| "someone".into())),
            None => step1(),
        });
    }
    let Some(name) = round.strip_prefix("2:") else {
        return Err(tampered());
    };
    Ok(match response(call, "step2") {
        Some(answer) => {
            text(&format!("{name} likes {}.", field(answer, "color").unwrap_or_else(|| "no colour".into())))
        }
        None => step2(name),
    })
}

/// Asks only through what the client declared; with nothing declared there is nothing to ask.
fn capabilities_round(call: &ToolCall) -> Value {
    let mut requests = Map::new();
    if call.client_capabilities.contains_key("sampling") {
        requests.insert("capital_question".into(), sample("What is the capital of France?", 100));
    }
    if call.client_capabilities.contains_key("elicitation") {
        requests.insert("user_name".into(), elicit("What is your name?", "name", "string"));
    }
    if call.client_capabilities.contains_key("roots") {
        requests.insert("client_roots".into(), list_roots());
    }
    let unanswered: Map<String, Value> =
        requests.into_iter().filter(|(key, _)| response(call, key).is_none()).collect();
    if unanswered.is_empty() {
        return text("Asked through every declared capability.");
    }
    input_required(unanswered, None)
}

fn sign(plain: &str) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = engine.encode(plain);
    format!("{payload}.{}", hex::encode(crate::rules::hmac::hmac_sha256(STATE_KEY, payload.as_bytes())))
}

/// The plain state, when `state` is one this server signed.
fn open(state: &str) -> Result<String, ToolReply> {
    let (payload, mac) = state.rsplit_once('.').ok_or_else(tampered)?;
    let mac = hex::decode(mac).map_err(|_| tampered())?;
    let expected = crate::rules::hmac::hmac_sha256(STATE_KEY, payload.as_bytes());
    if !bool::from(subtle::ConstantTimeEq::ct_eq(expected.as_slice(), mac.as_slice())) {
        return Err(tampered());
    }
    let plain = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).map_err(|_| tampered())?;
    String::from_utf8(plain).map_err(|_| tampered())
}

fn verified(state: &str, expected: &str) -> Result<(), ToolReply> {
    if open(state)? == expected {
        Ok(())
    } else {
        Err(tampered())
    }
}

fn tampered() -> ToolReply {
    ToolReply::Refused(RpcError::invalid_params("Invalid params: requestState failed its integrity check"))
}

#[cfg(test)]
mod tests {
    use super::super::testing::block_on;
    use super::*;

    fn modern<'a>(
        name: &'a str,
        caps: &'a Map<String, Value>,
        responses: Option<&'a Map<String, Value>>,
        state: Option<&'a str>,
    ) -> ToolReply {
        let call = ToolCall {
            name,
            arguments: Default::default(),
            era: Era::Modern,
            client_capabilities: caps,
            input_responses: responses,
            request_state: state,
            task: crate::mcp::TaskMode::No,
            progress: None,
        };
        block_on(Fixtures.call_with(call))
    }

    fn all_caps() -> Map<String, Value> {
        json!({"sampling": {}, "elicitation": {}, "roots": {}}).as_object().cloned().unwrap()
    }

    fn done(reply: ToolReply) -> Value {
        match reply {
            ToolReply::Done(result) => result,
            other => panic!("expected a result, got {other:?}"),
        }
    }

    fn accept(content: Value) -> Value {
        json!({"action": "accept", "content": content})
    }

    #[test]
    fn every_listed_tool_has_a_description_and_an_object_schema() {
        for tool in Fixtures.tools() {
            assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool["inputSchema"]["type"], json!("object"));
        }
        assert_eq!(Fixtures.tools()[0]["name"], json!("test_simple_text"));
    }

    #[test]
    fn the_content_fixtures_answer_the_suites_shapes() {
        let simple = block_on(Fixtures.call("test_simple_text", json!({}))).unwrap();
        assert_eq!(simple["content"][0]["text"], json!("This is a simple text response for testing."));
        let audio = block_on(Fixtures.call("test_audio_content", json!({}))).unwrap();
        assert_eq!(audio["content"][0]["mimeType"], json!("audio/wav"));
        let error = block_on(Fixtures.call("test_error_handling", json!({}))).unwrap();
        assert_eq!(error["isError"], json!(true));
        assert!(block_on(Fixtures.call("no_such_tool", json!({}))).is_none());
    }

    #[test]
    fn an_undeclared_capability_is_refused_with_its_name() {
        let none = Map::new();
        let ToolReply::Refused(error) = modern("test_missing_capability", &none, None, None) else {
            panic!("not refused")
        };
        assert_eq!(error.code, rpc::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(error.data.unwrap()["requiredCapabilities"], json!({"sampling": {}}));
    }

    #[test]
    fn an_elicitation_round_trip_completes_and_a_wrong_key_is_asked_again() {
        let caps = all_caps();
        let first = done(modern("test_input_required_result_elicitation", &caps, None, None));
        assert_eq!(first["resultType"], json!("input_required"));
        assert_eq!(first["inputRequests"]["user_name"]["method"], json!("elicitation/create"));
        let wrong = json!({"wrong_key": accept(json!({"data": "x"}))}).as_object().cloned().unwrap();
        assert_eq!(
            done(modern("test_input_required_result_elicitation", &caps, Some(&wrong), None))["resultType"],
            json!("input_required")
        );
        let right = json!({"user_name": accept(json!({"name": "Alice"})), "extra": {}}).as_object().cloned().unwrap();
        let last = done(modern("test_input_required_result_elicitation", &caps, Some(&right), None));
        assert_eq!(last["content"][0]["text"], json!("Hello, Alice!"));
    }

    #[test]
    fn a_signed_state_round_trips_and_a_tampered_one_is_refused() {
        let caps = all_caps();
        let first = done(modern("test_input_required_result_tampered_state", &caps, None, None));
        let state = first["requestState"].as_str().unwrap().to_owned();
        let answers = json!({"confirm": accept(json!({"ok": true}))}).as_object().cloned().unwrap();
        let ok = done(modern("test_input_required_result_tampered_state", &caps, Some(&answers), Some(&state)));
        assert!(ok["content"][0]["text"].as_str().unwrap().contains("state-ok"));
        let tampered = format!("{state}-TAMPERED");
        let refused = modern("test_input_required_result_tampered_state", &caps, Some(&answers), Some(&tampered));
        assert!(matches!(refused, ToolReply::Refused(e) if e.code == rpc::INVALID_PARAMS));
    }

    #[test]
    fn multi_round_takes_three_rounds_with_a_new_state_each_time() {
        let caps = all_caps();
        let name = "test_input_required_result_multi_round";
        let r1 = done(modern(name, &caps, None, None));
        let s1 = r1["requestState"].as_str().unwrap().to_owned();
        let a1 = json!({"step1": accept(json!({"name": "Alice"}))}).as_object().cloned().unwrap();
        let r2 = done(modern(name, &caps, Some(&a1), Some(&s1)));
        let s2 = r2["requestState"].as_str().unwrap().to_owned();
        assert_ne!(s1, s2);
        assert!(r2["inputRequests"]["step2"].is_object());
        let a2 = json!({"step2": accept(json!({"color": "blue"}))}).as_object().cloned().unwrap();
        let r3 = done(modern(name, &caps, Some(&a2), Some(&s2)));
        assert_eq!(r3["content"][0]["text"], json!("Alice likes blue."));
    }

    #[test]
    fn only_declared_capabilities_are_asked_through() {
        let sampling_only = json!({"sampling": {}}).as_object().cloned().unwrap();
        let result = done(modern("test_input_required_result_capabilities", &sampling_only, None, None));
        let methods: Vec<&Value> =
            result["inputRequests"].as_object().unwrap().values().map(|r| &r["method"]).collect();
        assert_eq!(methods, vec![&json!("sampling/createMessage")]);
    }

    #[test]
    fn mrtr_tools_explain_themselves_in_the_legacy_era() {
        let result = block_on(Fixtures.call("test_input_required_result_elicitation", json!({}))).unwrap();
        assert_eq!(result["isError"], json!(true));
    }
}
