//! Operability on the host: each request's log line, W3C trace context in and onward, the metrics
//! rollups and `get_metrics`, the health check, and a turn exported as OpenTelemetry spans.

use crate::support::TestApp;
use agentsky::cx::Config;
use agentsky::http::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn req(method: &str, path: &str, key: &str, headers: &[(&str, &str)], body: Option<Value>) -> HttpRequest {
    let mut h = vec![
        ("host".to_owned(), "127.0.0.1:8787".to_owned()),
        ("content-type".into(), "application/json".into()),
        ("authorization".into(), format!("Bearer {key}")),
    ];
    h.extend(headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    HttpRequest {
        stream: None,
        method: method.into(),
        path: path.into(),
        query: query.into(),
        headers: h,
        body: body.map(|b| serde_json::to_vec(&b).unwrap()).unwrap_or_default(),
        client_ip: "203.0.113.7".into(),
    }
}

#[test]
fn each_request_logs_one_line_of_ids_counts_and_times_and_never_the_key() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (resp, line) = app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    assert_eq!(resp.status, 200);
    assert_eq!(line["log"], "request");
    assert_eq!(line["face"], "rest");
    assert_eq!(line["op"], "list_agents");
    assert_eq!(line["status"], 200);
    assert_eq!(line["error_code"], "");
    assert!(line["key_id"].as_str().unwrap().starts_with("key_"), "{line}");
    assert!(line["workspace_id"].as_str().unwrap().starts_with("ws"), "{line}");
    assert!(line["d1_round_trips"].as_u64().unwrap() >= 1);
    assert!(line["duration_ms"].is_i64());
    assert_eq!(line["request_id"], "req_test");
    assert_eq!(line["trace_id"].as_str().unwrap(), resp.header("x-trace-id").unwrap());
    let text = line.to_string();
    assert!(!text.contains(&ada.key), "the key never reaches the log: {text}");
    assert!(!text.contains(&ada.key[4..]), "nor any part of it: {text}");

    // A refusal names its code; an MCP tool call names the tool.
    let (resp, line) = app.send_logged(req("GET", "/v1/sessions/ses_00000000000000000000000000", &ada.key, &[], None));
    assert_eq!(resp.status, 404);
    assert_eq!(line["error_code"], "not_found");
    let (_, line) = app.send_logged(req("GET", "/v1/agents", "ast_wrong", &[], None));
    assert_eq!((line["status"].as_u64(), line["error_code"].as_str()), (Some(401), Some("unauthorized")));
    assert!(!line.to_string().contains("ast_wrong"));
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_agents", "arguments": {}}});
    let mut mcp = req(
        "POST",
        "/v1/mcp",
        &ada.key,
        &[("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-06-18")],
        Some(call),
    );
    mcp.client_ip = "203.0.113.8".into();
    let (resp, line) = app.send_logged(mcp);
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    assert_eq!((line["face"].as_str(), line["op"].as_str()), (Some("operator_mcp"), Some("tools/call:list_agents")));
}

/// `REQUEST_LOG=errors` keeps the lines of failed (and slow) requests only.
#[test]
fn with_request_log_errors_only_a_success_writes_no_line_and_a_failure_does() {
    let app = TestApp::with_config(Config { log_errors_only: true, ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    let (resp, line) = app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    assert_eq!((resp.status, line), (200, Value::Null));
    let (resp, line) = app.send_logged(req("GET", "/v1/sessions/ses_00000000000000000000000000", &ada.key, &[], None));
    assert_eq!((resp.status, line["error_code"].as_str()), (404, Some("not_found")));
    let (_, line) = app.send_logged(req("GET", "/v1/agents", "ast_wrong", &[], None));
    assert_eq!(line["error_code"], "unauthorized");
}

#[test]
fn a_callers_traceparent_is_continued_from_the_header_or_the_mcp_meta() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let tp = format!("00-{TRACE}-00f067aa0ba902b7-01");
    let (resp, line) = app.send_logged(req("GET", "/v1/agents", &ada.key, &[("traceparent", &tp)], None));
    assert_eq!(resp.header("x-trace-id"), Some(TRACE));
    assert_eq!(line["trace_id"], TRACE);
    // A malformed one starts a new trace rather than failing the request.
    let resp = app.send(req("GET", "/v1/agents", &ada.key, &[("traceparent", "00-zz-00-01")], None));
    assert_eq!(resp.status, 200);
    assert_ne!(resp.header("x-trace-id"), Some(TRACE));
    assert_eq!(resp.header("x-trace-id").unwrap().len(), 32);
    // The 2026-07-28 wire carries it in `_meta`.
    let other = "0af7651916cd43dd8448eb211c80319c";
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_agents", "arguments": {}, "_meta": {"traceparent": format!("00-{other}-b7ad6b7169203331-01")}}});
    let mcp = req(
        "POST",
        "/v1/mcp",
        &ada.key,
        &[("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-06-18")],
        Some(call),
    );
    let (resp, _) = app.send_logged(mcp);
    assert_eq!(resp.header("x-trace-id"), Some(other));
}

#[test]
fn metrics_count_calls_errors_and_latency_per_minute_and_get_metrics_reads_them_back() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for _ in 0..3 {
        app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    }
    app.send_logged(req("GET", "/v1/sessions/ses_00000000000000000000000000", &ada.key, &[], None));
    app.advance(61_000);
    app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    let (resp, _) = app.send_logged(req("GET", "/v1/metrics?window=hour", &ada.key, &[], None));
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let m = resp.json_body();
    assert_eq!(m["window"], "hour");
    assert_eq!(m["step_minutes"], 1);
    assert_eq!(m["series"].as_array().unwrap().len(), 60, "every minute of the hour, empty ones too");
    // 5 calls counted before this one (its own row is written after it answers).
    assert_eq!(m["totals"]["calls"], 5, "{m}");
    assert_eq!(m["totals"]["errors"], 1);
    assert!(m["totals"]["latency"]["p50_ms"].is_i64());
    let busy: Vec<i64> =
        m["series"].as_array().unwrap().iter().map(|p| p["calls"].as_i64().unwrap()).filter(|c| *c > 0).collect();
    assert_eq!(busy, [4, 1], "two minutes had calls");
    assert_eq!(m["agents"][0]["agent_id"], "", "people's and keys' calls are no agent's");

    // A day is 96 points of 15 minutes, each starting on its step.
    let day = app.request("GET", "/v1/metrics?window=day", Some(&ada.key), None).json_body();
    let points = day["series"].as_array().unwrap();
    assert_eq!((points.len(), day["step_minutes"].as_i64()), (96, Some(15)));
    assert!(points.iter().all(|p| p["t_ms"].as_i64().unwrap() % (15 * 60_000) == 0));
    let counted: i64 = points.iter().map(|p| p["calls"].as_i64().unwrap()).sum();
    assert_eq!(counted, day["totals"]["calls"].as_i64().unwrap(), "every counted call is in a point");
    assert_eq!(counted, 6, "the five before, and the hour's read");

    // The window is a closed word set; a bad one is refused by name.
    let bad = app.request("GET", "/v1/metrics?window=year", Some(&ada.key), None);
    assert_eq!(bad.status, 400);
    assert!(bad.json_body()["error"]["message"].as_str().unwrap().contains("window"));
    // Another account sees none of it.
    let bob = app.signup("Bob", "bob@example.com");
    let theirs = app.request("GET", "/v1/metrics", Some(&bob.key), None).json_body();
    assert_eq!(theirs["totals"]["calls"], 0, "{theirs}");
    let none = app.request("GET", &format!("/v1/metrics?workspace={}", ada.slug), Some(&bob.key), None);
    assert_eq!(none.status, 404);
}

/// A workspace's `metric_minute` rows, without the workspace: the minute, then every count column.
fn rollup(app: &TestApp, workspace_id: &str) -> Vec<Vec<i64>> {
    let sql = "SELECT minute, calls, errors, latency_sum_ms, latency_max_ms, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9,
                      h10, h11, turns, spend_cents, open_requests
               FROM metric_minute WHERE workspace_id = ?1 ORDER BY minute, agent_id";
    let mut stmt = app.db.0.prepare(sql).unwrap();
    let rows = stmt.query_map([workspace_id], |r| (0..20).map(|i| r.get::<_, i64>(i)).collect()).unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn counting_calls_costs_no_round_trip_and_sums_as_one_upsert_per_call_did() {
    use agentsky::rules::metrics::CallTally;
    use agentsky::store::metrics::add_calls;
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let ws: String =
        app.db.0.query_row("SELECT workspace_id FROM workspace WHERE slug = ?1", [&ada.slug], |r| r.get(0)).unwrap();
    // The key is in this isolate's cache from here on; start from no counts at all.
    app.send(req("GET", "/v1/agents", &ada.key, &[], None));
    app.system(|cx| Box::pin(agentsky::app::observe::write_pending(cx.env)));
    app.db.0.execute("DELETE FROM metric_minute", []).unwrap();

    // Each call makes one round trip, its own read with the calls before it riding in front.
    let mut made = vec![];
    for i in 0..7 {
        if i == 4 {
            app.advance(61_000);
        }
        let path = if i % 3 == 1 { "/v1/sessions/ses_00000000000000000000000000" } else { "/v1/agents" };
        let minute = app.now_ms.get().div_euclid(60_000);
        let (resp, trips) = app.send_counted(req("GET", path, &ada.key, &[], None));
        assert_eq!((trips, resp.header("x-d1-queries")), (1, Some("1")), "call {i}: {}", resp.status);
        made.push((minute, resp.status >= 400));
        if i == 5 {
            // A call with no round trip of its own carries nothing: the calls wait for the next one.
            let (open, trips) = app.send_counted(req("GET", "/v1/openapi.json", &ada.key, &[], None));
            assert_eq!((open.status, trips), (200, 0));
        }
    }
    // A read right after sees every call before it, carried by its first round trip (none of its own).
    let (resp, trips) = app.send_counted(req("GET", "/v1/metrics?window=hour", &ada.key, &[], None));
    assert_eq!(resp.header("x-d1-queries"), Some(trips.to_string().as_str()));
    let m = resp.json_body();
    assert_eq!((m["totals"]["calls"].as_i64(), m["totals"]["errors"].as_i64()), (Some(7), Some(2)), "{m}");
    made.push((app.now_ms.get().div_euclid(60_000), false));
    assert!(!app.sessions.pending_calls.is_empty(), "the read's own call waits");
    // While one flush waits, another request's adds no timer of its own: the waiting one covers it.
    let pending = &app.sessions.pending_calls;
    pending.set_flush_wakes(app.now_ms.get() + 1_000);
    app.system(|cx| Box::pin(agentsky::app::observe::flush_later(cx.env)));
    assert!(!pending.is_empty() && pending.flush_waiting(app.now_ms.get()), "left to the waiting flush");
    // One cut short (its wake a second past) no longer counts.
    app.advance(2_001);
    assert!(!pending.flush_waiting(app.now_ms.get()));
    // An idle isolate writes what waits a second later, itself.
    app.system(|cx| Box::pin(agentsky::app::observe::flush_later(cx.env)));
    assert!(pending.is_empty());
    assert!(!pending.flush_waiting(app.now_ms.get()), "done waiting: the next request may start a flush");

    // The same rows as one upsert per call wrote before, latency buckets and maximum included.
    app.system(|cx| {
        Box::pin(async move {
            for (minute, error) in made {
                cx.db().all(add_calls("ws_before", "", minute, &CallTally::one(error, 0))).await.unwrap();
            }
            let mut merged = CallTally::default();
            for (i, ms) in [3, 40, 40, 700, 99_000, 12].into_iter().enumerate() {
                let one = CallTally::one(i == 2, ms);
                cx.db().all(add_calls("ws_each", "agt_1", 9, &one)).await.unwrap();
                merged.merge(&one);
                if i == 2 {
                    cx.db().all(add_calls("ws_merged", "agt_1", 9, &merged)).await.unwrap();
                    merged = CallTally::default();
                }
            }
            cx.db().all(add_calls("ws_merged", "agt_1", 9, &merged)).await.unwrap();
        })
    });
    let counted = rollup(&app, &ws);
    assert_eq!(counted, rollup(&app, "ws_before"));
    assert_eq!(counted.iter().map(|r| r[1]).collect::<Vec<_>>(), [4, 4], "two minutes: 4 calls, then 3 and the read");
    assert_eq!(rollup(&app, "ws_each"), rollup(&app, "ws_merged"));
    assert_eq!(rollup(&app, "ws_each")[0][1..5], [6, 1, 99_795, 99_000]);
}

#[test]
fn open_requests_are_sampled_by_minute() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let ws: String =
        app.db.0.query_row("SELECT workspace_id FROM workspace WHERE slug = ?1", [&ada.slug], |r| r.get(0)).unwrap();
    let sample = |app: &TestApp| {
        app.system(|cx| {
            Box::pin(async move {
                let minute = cx.now_ms.div_euclid(60_000);
                cx.db().all(agentsky::store::metrics::sample_open_requests(minute)).await.unwrap();
            })
        })
    };
    sample(&app);
    let m = app.request("GET", "/v1/metrics", Some(&ada.key), None).json_body();
    assert_eq!(m["totals"]["open_requests"], 0);
    for i in 0..3 {
        let ws = ws.clone();
        app.system(move |cx| {
            Box::pin(async move {
                let stmt = agentsky::store::requests::insert_request(
                    &format!("req_{i}"),
                    &ws,
                    "task_1",
                    "ses_1",
                    "question",
                    &json!({"prompt": "?"}),
                    None,
                    None,
                    cx.now_ms,
                );
                cx.db().all(stmt).await.unwrap();
            })
        });
    }
    sample(&app);
    app.advance(60_000);
    sample(&app);
    let m = app.request("GET", "/v1/metrics", Some(&ada.key), None).json_body();
    assert_eq!(m["totals"]["open_requests"], 3, "{}", m["totals"]);
    let sampled: Vec<i64> = m["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["open_requests"].as_i64().unwrap())
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(sampled, [3, 3], "one sample a minute");
}

#[test]
fn health_says_whether_each_backing_service_answers_and_nothing_else() {
    let app = TestApp::new();
    let resp = app.request("GET", "/v1/health", None, None);
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let h = resp.json_body();
    assert_eq!(h["ok"], true);
    for check in ["d1", "session_object", "r2", "queue"] {
        assert_eq!(h["checks"][check], json!({"ok": true}), "{h}");
    }
    let keys: Vec<&String> = h.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["checks", "name", "ok", "version"]);
}

#[test]
fn health_shows_the_isolate_memory_to_the_admin_token_alone() {
    let app = TestApp::with_config(Config { admin_token: Some("adm_secret".into()), ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    let admin = app.request("GET", "/v1/health", Some("adm_secret"), None).json_body();
    // The wasm linear memory is only known on wasm; the host reports null.
    assert_eq!(admin["memory"]["wasm_bytes"], Value::Null, "{admin}");
    assert!(admin["memory"]["key_cache"]["entries"].is_u64(), "{admin}");
    assert_eq!(admin["memory"]["pending_calls"]["dropped_calls"], 0, "{admin}");
    for bearer in [None, Some(ada.key.as_str()), Some("adm_wrong"), Some("ast_unknown")] {
        let h = app.request("GET", "/v1/health", bearer, None).json_body();
        assert_eq!(h["ok"], true, "{bearer:?}: {h}");
        assert!(h.get("memory").is_none(), "{bearer:?}: {h}");
    }
}

#[test]
fn trace_export_takes_an_outbound_url_and_a_sealed_header_never_shown_again() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let put = |body: Value| app.request("PUT", "/v1/trace-export", Some(&ada.key), Some(body));
    let r = put(json!({"url": "http://10.0.0.1/v1/traces"}));
    assert_eq!(r.status, 400, "the outbound rule applies: {:?}", r.json_body());
    let r = put(json!({"url": "https://otel.example.com/v1/traces", "header_name": "x-key"}));
    assert_eq!(r.status, 400);
    assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("header_value"));
    let r = put(json!({"url": "https://otel.example.com/v1/traces", "header_name": "bad header", "header_value": "v"}));
    assert_eq!(r.status, 400);
    let r = put(
        json!({"url": "https://otel.example.com/v1/traces", "header_name": "x-honeycomb-team", "header_value": "canary-otel-ingest-key"}),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    assert_eq!(r.json_body()["header_name"], "x-honeycomb-team");
    assert!(!String::from_utf8_lossy(&r.body).contains("canary-otel-ingest-key"));
    let got = app.request("GET", "/v1/trace-export", Some(&ada.key), None).json_body();
    assert_eq!(got["url"], "https://otel.example.com/v1/traces");
    assert!(!got.to_string().contains("canary-otel-ingest-key"));
    let stored: String = app.db.0.query_row("SELECT header_sealed FROM trace_export", [], |r| r.get(0)).unwrap();
    assert!(!stored.contains("canary-otel-ingest-key"), "sealed at rest");
    let r = put(json!({}));
    assert_eq!(r.status, 200);
    assert_eq!(app.request("GET", "/v1/trace-export", Some(&ada.key), None).json_body()["url"], Value::Null);
}

#[test]
fn a_turn_is_traced_into_its_model_calls_counted_and_exported_as_otlp_spans() {
    let app = TestApp::with_config(Config {
        admin_token: Some("adm".into()),
        secrets_key: Some("test-master-key".into()),
        prices: agentsky::rules::prices::Prices::parse(r#"{"gpt-test": [1000000, 2000000]}"#).unwrap(),
        ..TestApp::config()
    });
    let ada = app.signup("Ada", "ada@example.com");
    app.request(
        "POST",
        &format!("/v1/workspaces/{}/credit", ada.slug),
        Some("adm"),
        Some(json!({"amount_cents": 1_000_000})),
    );
    for (name, value) in [("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-canary-123")] {
        app.request("PUT", &format!("/v1/secrets/{name}"), Some(&ada.key), Some(json!({"value": value})));
    }
    let r = app.request(
        "PUT",
        "/v1/trace-export",
        Some(&ada.key),
        Some(json!({"url": "https://otel.example.com/v1/traces", "header_name": "x-key", "header_value": "ingest-1"})),
    );
    assert_eq!(r.status, 200);
    let agent = app
        .request(
            "POST",
            "/v1/agents",
            Some(&ada.key),
            Some(json!({"name": "G", "harness": "openai", "model": "gpt-test"})),
        )
        .json_body()["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.sessions.net.answer(|out| {
        if out.url.contains("otel.example.com") {
            return HttpResponse::json(200, &json!({}));
        }
        HttpResponse::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20}}),
        )
    });
    let tp = format!("00-{TRACE}-00f067aa0ba902b7-01");
    let start = req(
        "POST",
        "/v1/sessions",
        &ada.key,
        &[("traceparent", &tp)],
        Some(json!({"agent_id": agent, "message": "hello", "idempotency_key": "k1"})),
    );
    let resp = app.send(start);
    assert_eq!(resp.status, 201, "{}", String::from_utf8_lossy(&resp.body));
    app.settle();

    let sent = app.sessions.net.requests.borrow().clone();
    let model = sent.iter().find(|o| o.url.contains("model.example.com")).expect("the model was called");
    let header = model.headers.iter().find(|(k, _)| k == "traceparent").map(|(_, v)| v.clone()).expect("traceparent");
    assert!(header.starts_with(&format!("00-{TRACE}-")), "the model call continues the caller's trace: {header}");
    let export = sent.iter().find(|o| o.url == "https://otel.example.com/v1/traces").expect("the turn was exported");
    assert!(export.headers.contains(&("x-key".into(), "ingest-1".into())), "the sealed header is opened for it");
    let body: Value = serde_json::from_slice(&export.body).unwrap();
    let spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array().unwrap();
    let by_name = |n: &str| {
        spans
            .iter()
            .find(|s| s["name"].as_str().unwrap().starts_with(n))
            .unwrap_or_else(|| panic!("no {n} span in {spans:?}"))
    };
    let (turn, step, chat) = (by_name("turn"), by_name("step"), by_name("chat"));
    assert!(spans.iter().all(|s| s["traceId"] == TRACE));
    assert_eq!(step["parentSpanId"], turn["spanId"]);
    assert_eq!(chat["parentSpanId"], step["spanId"]);
    assert_ne!(turn["parentSpanId"], Value::Null, "the turn hangs under the request that started it");
    let attr = |s: &Value, k: &str| {
        s["attributes"].as_array().unwrap().iter().find(|a| a["key"] == k).map(|a| a["value"].clone())
    };
    assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), Some(json!({"intValue": "100"})));
    assert_eq!(attr(turn, "gen_ai.usage.output_tokens"), Some(json!({"intValue": "20"})));
    assert_eq!(attr(turn, "agentsky.cost_cents"), Some(json!({"intValue": "140"})));
    assert!(!String::from_utf8_lossy(&export.body).contains("sk-canary-123"), "no secret in a span");

    let m = app.request("GET", "/v1/metrics", Some(&ada.key), None).json_body();
    assert_eq!(m["totals"]["turns"], 1, "{m}");
    assert_eq!(m["totals"]["spend_cents"], 140);
    assert_eq!(m["totals"]["input_tokens"], 100);
    let by_agent =
        m["agents"].as_array().unwrap().iter().find(|a| a["agent_id"] == agent.as_str()).expect("the agent's row");
    assert_eq!((by_agent["turns"].as_i64(), by_agent["name"].as_str()), (Some(1), Some("G")));
    let one = app.request("GET", &format!("/v1/metrics?agent_id={agent}"), Some(&ada.key), None).json_body();
    assert_eq!(one["totals"]["turns"], 1);
    assert_eq!(one["agents"], json!([]));
}

#[test]
fn a_member_below_admin_sees_only_the_trace_exports_origin() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@acme.example");
    app.shared_workspace(&ada, "acme");
    let bo = app.signup("Bo", "bo@acme.example");
    let r = app.request("POST", "/v1/workspaces/acme/invitations", Some(&ada.key), Some(json!({"role": "member"})));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let r = app.request("POST", "/v1/invitations/accept", Some(&bo.key), Some(json!({"token": token})));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    let url = "https://otel.example.com:4318/ingest/tok-canary/v1/traces?key=q-canary";
    let r = app.request("PUT", "/v1/trace-export", Some(&ada.key), Some(json!({"url": url, "workspace": "acme"})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let r = app.request("PUT", "/v1/trace-export", Some(&bo.key), Some(json!({"url": url, "workspace": "acme"})));
    assert_eq!(r.status, 403, "setting it needs admin: {:?}", r.json_body());
    let got = app.request("GET", "/v1/trace-export?workspace=acme", Some(&bo.key), None);
    assert_eq!(got.status, 200, "{:?}", got.json_body());
    assert_eq!(got.json_body()["url"], "https://otel.example.com:4318");
    assert!(!String::from_utf8_lossy(&got.body).contains("canary"));
    let got = app.request("GET", "/v1/trace-export?workspace=acme", Some(&ada.key), None).json_body();
    assert_eq!(got["url"], url, "the admin sees the whole URL");
}

#[test]
fn a_call_run_again_for_a_changed_caller_logs_how_it_ended_not_the_first_refusal() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (resp, _) = app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    assert_eq!(resp.status, 200);
    // A new membership: the isolate's cached caller no longer agrees with the key's lookup, so the next
    // call runs once as the cached caller (refused when the lookup disagrees) and again as the fresh one.
    let (resp, _) = app.send_logged(req("POST", "/v1/workspaces", &ada.key, &[], Some(json!({"name": "Lab"}))));
    assert_eq!(resp.status, 201);
    let (resp, line) = app.send_logged(req("GET", "/v1/agents", &ada.key, &[], None));
    assert_eq!(resp.status, 200);
    assert_eq!((line["status"].as_u64(), line["error_code"].as_str()), (Some(200), Some("")), "{line}");
}
