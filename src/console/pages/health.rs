//! Health: how the workspace is doing over an hour, a day, a week or a month (`get_metrics`): calls and
//! errors, latency percentiles, turns, spend and open requests as server-drawn SVG charts, the same per
//! agent, and where its turns' traces go. The Usage page draws the day's activity with the same charts.

use super::Page;
use crate::console::layout::{action, hidden, money};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::call;
use crate::ops::metrics::{GetMetrics, GetTraceExport, Metrics, Numbers, Point, SandboxNumbers, Window};
use crate::ops::name;
use maud::{html, Markup};

const WINDOWS: &[(&str, &str)] =
    &[("hour", "Last hour"), ("day", "Last day"), ("week", "Last week"), ("month", "Last month")];

/// One drawn series: its CSS class, its name in the legend, and how a point reads it.
pub struct Series<'a> {
    pub class: &'a str,
    pub name: &'a str,
    pub value: fn(&Numbers) -> f64,
}

/// A time axis label for a point.
fn label(t_ms: i64, step_minutes: i64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(t_ms).unwrap_or_default();
    if step_minutes >= 60 {
        at.format("%m-%d %H:%M").to_string()
    } else {
        at.format("%H:%M").to_string()
    }
}

/// Points as an SVG chart: the first series as bars, the others as lines over them. `unit` formats the
/// top of the scale and each point's tooltip.
pub fn chart(
    title: &str,
    points: &[Point],
    step_minutes: i64,
    series: &[Series<'_>],
    unit: fn(f64) -> String,
) -> Markup {
    let n = points.len().max(1);
    let max =
        points.iter().flat_map(|p| series.iter().map(move |s| (s.value)(&p.numbers))).fold(0.0_f64, f64::max).max(1.0);
    let (w, h, left, bottom, top) = (720.0, 180.0, 64.0, 22.0, 22.0);
    let slot = (w - left) / n as f64;
    let y = |v: f64| h - bottom - (h - bottom - top) * v / max;
    let y0 = h - bottom;
    let t = |p: &Point| label(p.t_ms, step_minutes);
    // Elements inside SVG are closed explicitly (`{}`): HTML parses a bare `<line>` there as left open.
    html! {
        svg.chart viewBox={ "0 0 " (w) " " (h) } role="img" aria-label=(title) {
            line.axis x1=(left) y1=(y0) x2=(w) y2=(y0) {}
            text x="4" y=(top + 4.0) { (unit(max)) }
            text x="4" y=(y0) { "0" }
            @for (k, s) in series.iter().enumerate() {
                @if k == 0 {
                    @for (i, p) in points.iter().enumerate().filter(|(_, p)| (s.value)(&p.numbers) > 0.0) {
                        @let v = (s.value)(&p.numbers);
                        rect class={ "bar " (s.class) } x=(one(left + i as f64 * slot + slot * 0.1)) y=(one(y(v)))
                            width=(one((slot * 0.8).max(1.0))) height=(one(h - bottom - y(v))) {
                            title { (t(p)) ": " (unit(v)) }
                        }
                    }
                } @else {
                    @let path: Vec<String> = points
                        .iter()
                        .enumerate()
                        .map(|(i, p)| format!("{:.1},{:.1}", left + (i as f64 + 0.5) * slot, y((s.value)(&p.numbers))))
                        .collect();
                    polyline class={ "line " (s.class) } points=(path.join(" ")) {}
                }
            }
            @for i in (0..points.len()).step_by((points.len() / 6).max(1)) {
                text x=(one(left + i as f64 * slot)) y=(h - 6.0) { (t(&points[i])) }
            }
            text x=(left) y="14" {
                @for s in series {
                    tspan class={ "key " (s.class) } { "■ " (s.name) } " "
                }
            }
        }
    }
}

/// A coordinate to one decimal.
pub fn one(v: f64) -> String {
    format!("{v:.1}")
}

pub fn count(v: f64) -> String {
    format!("{v:.0}")
}

pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else {
        format!("{v:.0} ms")
    }
}

pub fn cents(v: f64) -> String {
    money(v.round() as i64)
}

/// A latency percentile, 0 where nothing was timed.
fn at(ms: Option<i64>) -> f64 {
    ms.unwrap_or(0) as f64
}

/// The four charts of a metrics answer.
pub fn charts(m: &Metrics) -> Markup {
    let points = &m.series;
    let step = m.step_minutes;
    let calls = chart(
        "calls and errors",
        points,
        step,
        &[
            Series { class: "calls", name: "calls", value: |p| p.calls as f64 },
            Series { class: "errors", name: "errors", value: |p| p.errors as f64 },
        ],
        count,
    );
    let latency = chart(
        "latency",
        points,
        step,
        &[
            Series { class: "p50", name: "p50", value: |p| at(p.latency.p50_ms) },
            Series { class: "p95", name: "p95", value: |p| at(p.latency.p95_ms) },
            Series { class: "p99", name: "p99", value: |p| at(p.latency.p99_ms) },
        ],
        ms,
    );
    let turns = chart(
        "turns and open requests",
        points,
        step,
        &[
            Series { class: "turns", name: "turns", value: |p| p.turns as f64 },
            Series { class: "open", name: "open requests", value: |p| p.open_requests as f64 },
        ],
        count,
    );
    let spend = chart(
        "spend",
        points,
        step,
        &[Series { class: "spend", name: "spend", value: |p| p.spend_cents as f64 }],
        cents,
    );
    html! {
        div.charts data-live="metrics-charts" {
            figure { figcaption { "Calls and errors" } (calls) }
            figure { figcaption { "Latency (p50 bars, p95 and p99 lines)" } (latency) }
            figure { figcaption { "Turns and open requests" } (turns) }
            figure { figcaption { "Spend" } (spend) }
        }
    }
}

/// The window's totals in one line.
pub fn summary(t: &Numbers) -> Markup {
    let (calls, errors) = (t.calls, t.errors);
    let rate = if calls > 0 { errors as f64 * 100.0 / calls as f64 } else { 0.0 };
    let l = |v: Option<i64>| v.map_or("—".to_owned(), |v| ms(v as f64));
    html! {
        dl.stats data-live="metrics-totals" {
            div { dt { "Calls" } dd data-metric="calls" { (calls) } }
            div { dt { "Errors" } dd data-metric="errors" { (errors) " (" (format!("{rate:.1}")) "%)" } }
            div { dt { "p50 / p95 / p99" } dd { (l(t.latency.p50_ms)) " / " (l(t.latency.p95_ms)) " / " (l(t.latency.p99_ms)) } }
            div { dt { "Turns" } dd data-metric="turns" { (t.turns) } }
            div { dt { "Spend" } dd { (money(t.spend_cents)) } }
            div { dt { "Open requests (most)" } dd { (t.open_requests) } }
        }
    }
}

/// The window's hosted sandboxes in one line.
fn sandboxes(s: &SandboxNumbers) -> Markup {
    let l = |v: Option<i64>| v.map_or("—".to_owned(), |v| ms(v as f64));
    html! {
        dl.stats data-live="metrics-sandboxes" {
            div { dt { "Sandbox boots" } dd data-metric="sandbox-boots" { (s.boots) } }
            div { dt { "Boot p50 / p95" } dd { (l(s.boot_p50_ms)) " / " (l(s.boot_p95_ms)) } }
            div { dt { "Sandbox-minutes" } dd data-metric="sandbox-minutes" { (format!("{:.1}", s.seconds as f64 / 60.0)) } }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let window = p.query("window").filter(|w| WINDOWS.iter().any(|(k, _)| k == w)).unwrap_or_else(|| "hour".into());
    let workspace = Some(p.ws.slug.clone());
    let asked = GetMetrics { workspace: workspace.clone(), window: Window::from_word(&window), agent_id: None };
    let m = call::get_metrics(p.cx, asked).await?;
    let export = call::get_trace_export(p.cx, GetTraceExport { workspace }).await?;
    let slug = p.ws.slug.as_str();
    Ok(Page {
        title: "Health".into(),
        nav: "/health",
        main: html! {
            h1 { "Health" }
            form.row method="get" action=(p.link("/health")) {
                label { "Window" select name="window" { @for (k, l) in WINDOWS { option value=(k) selected[*k == window] { (l) } } } }
                button type="submit" { "Show" }
            }
            (summary(&m.totals))
            (sandboxes(&m.sandboxes))
            (charts(&m))
            h2 { "By agent" }
            table data-live="metrics-agents" {
                thead { tr { th { "Agent" } th.num { "Calls" } th.num { "Errors" } th.num { "p95" } th.num { "Turns" } th.num { "Spend" } } }
                tbody {
                    @for a in &m.agents {
                        @let numbers = &a.numbers;
                        tr {
                            td { @if a.agent_id.is_empty() { span.muted { "People and keys" } }
                                 @else { a href=(p.link(&format!("/agents/{}", a.agent_id))) { (a.name.as_deref().unwrap_or(&a.agent_id)) } } }
                            td.num { (numbers.calls) }
                            td.num { (numbers.errors) }
                            td.num { (numbers.latency.p95_ms.map_or("—".to_owned(), |v| ms(v as f64))) }
                            td.num { (numbers.turns) }
                            td.num { (money(numbers.spend_cents)) }
                        }
                    }
                    @if m.agents.is_empty() { tr { td colspan="6" { span.muted { "Nothing counted in this window." } } } }
                }
            }
            h2 { "Traces" }
            p.muted { "Each turn can be sent as OpenTelemetry spans (turn, steps, model calls with tokens and cost, tool calls) to an OTLP/HTTP endpoint." }
            @if let Some(url) = &export.url {
                p data-live="trace-export" { "Exporting to " code { (url) }
                  @if let Some(h) = &export.header_name { " with header " code { (h) } } ". "
                  (action(p, name::set_trace_export, &[("workspace", slug)], "Stop exporting", "link", Some("Stop exporting traces?"))) }
            } @else {
                p data-live="trace-export" { span.muted { "Not exporting." } }
            }
            form.stack method="post" action=(p.action_url(name::set_trace_export)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(slug);
                label { "OTLP traces URL" input type="url" name="url" placeholder="https://collector.example.com/v1/traces" required; }
                label { "Header name (optional)" input type="text" name="header_name" placeholder="authorization"; }
                label { "Header value (optional, sealed)" input type="password" name="header_value" autocomplete="off"; }
                button.primary type="submit" disabled[!p.can_write()] { "Export traces" }
            }
        },
    })
}
