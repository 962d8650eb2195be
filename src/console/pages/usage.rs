//! Usage: the wallet's balance, spend per day over a chosen range (a chart drawn here as SVG), the same
//! spend by agent, model or key, the budgets tasks have, and money in: adding money and saving a card
//! (each goes on to Stripe's checkout page), the automatic top-up and the receipts.

use super::health::one;
use super::Page;
use crate::console::layout::{action, hidden, money, time};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::billing::{ListReceipts, Receipts};
use crate::ops::call;
use crate::ops::metrics::{GetMetrics, Window};
use crate::ops::name;
use crate::ops::tasks::ListTasks;
use crate::ops::usage::{GetUsage, GroupBy};
use crate::rules::params::Int;
use crate::store::usage::Group;
use maud::{html, Markup};

const GROUPS: &[(&str, &str)] =
    &[("agent", "Agent"), ("model", "Model"), ("api_key", "API key"), ("session", "Session")];

/// Spend per day as bars, every day of the range shown (days without spend are empty).
fn chart(days: &[Group], from: &str, to: &str) -> Markup {
    let (Some(start), Some(end)) = (crate::rules::time::parse_day(from), crate::rules::time::parse_day(to)) else {
        return html! {};
    };
    let n = (((end - start) / crate::rules::time::DAY_MS) + 1).clamp(1, 400) as usize;
    let cents = |i: usize| {
        let day = crate::rules::time::format_day(start + i as i64 * crate::rules::time::DAY_MS);
        days.iter().find(|d| d.key.as_deref() == Some(day.as_str())).map_or(0, |d| d.cents)
    };
    let max = (0..n).map(cents).max().unwrap_or(0).max(1);
    let (w, h, left, bottom) = (720.0, 200.0, 48.0, 22.0);
    let slot = (w - left) / n as f64;
    let y0 = h - bottom;
    // Elements inside SVG are closed explicitly (`{}`): HTML parses a bare `<line>` there as left open.
    html! {
        svg.chart viewBox={ "0 0 " (w) " " (h) } role="img" aria-label="spend per day" {
            line.axis x1=(left) y1=(y0) x2=(w) y2=(y0) {}
            text x="4" y="14" { (money(max)) }
            text x="4" y=(y0) { "$0" }
            @for i in 0..n {
                @let c = cents(i);
                @let bar = (h - bottom - 10.0) * c as f64 / max as f64;
                @let x = left + i as f64 * slot + slot * 0.15;
                @let day = crate::rules::time::format_day(start + i as i64 * crate::rules::time::DAY_MS);
                rect.bar x=(one(x)) y=(one(h - bottom - bar)) width=(one((slot * 0.7).max(1.0))) height=(one(bar)) {
                    title { (day) ": " (money(c)) }
                }
                @if n <= 14 || i % (n / 7).max(1) == 0 {
                    text x=(one(x)) y=(h - 6.0) { (&day[5..]) }
                }
            }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let by = p.query("by").filter(|b| GROUPS.iter().any(|(g, _)| g == b)).unwrap_or_else(|| "agent".into());
    let workspace = Some(p.ws.slug.clone());
    let range = |group_by| GetUsage {
        from: p.query("from"),
        to: p.query("to"),
        group_by: Some(group_by),
        session_id: None,
        workspace: workspace.clone(),
    };
    let days = call::get_usage(p.cx, range(GroupBy::Day)).await?;
    let groups = call::get_usage(p.cx, range(GroupBy::from_word(&by).unwrap_or(GroupBy::Agent))).await?;
    let listed = ListTasks { workspace: workspace.clone(), limit: Some(const { Int::new(100) }), cursor: None };
    let tasks = call::list_tasks(p.cx, listed).await?.tasks;
    let budgeted: Vec<_> = tasks.iter().map(|t| &t.task).filter(|t| t.budget_cents.is_some()).collect();
    let total = groups.total_cents.max(1);
    let receipts = call::list_receipts(p.cx, ListReceipts { workspace: workspace.clone(), limit: None }).await?;
    let asked = GetMetrics { workspace, window: Some(Window::Day), agent_id: None };
    let activity = call::get_metrics(p.cx, asked).await?;
    Ok(Page {
        title: "Usage".into(),
        nav: "/usage",
        main: html! {
            h1 { "Usage" }
            p { "Balance " strong data-balance { (money(days.balance_cents)) }
                " · spent " (money(days.total_cents)) " from " (days.from) " to " (days.to) }
            form.row method="get" action=(p.link("/usage")) {
                label { "From" input type="date" name="from" value=(days.from); }
                label { "To" input type="date" name="to" value=(days.to); }
                label { "By" select name="by" { @for (g, label) in GROUPS { option value=(g) selected[*g == by] { (label) } } } }
                button type="submit" { "Show" }
            }
            div data-live="usage-chart" { (chart(&days.groups, &days.from, &days.to)) }
            h2 { "Activity, last day" }
            p.muted { "Calls, errors, latency, turns and spend every 15 minutes; longer windows and per-agent numbers are on "
                a href=(p.link("/health")) { "Health" } "." }
            (super::health::summary(&activity.totals))
            (super::health::charts(&activity))
            h2 { "By " (GROUPS.iter().find(|(g, _)| *g == by).map_or("agent", |(_, l)| l).to_lowercase()) }
            table data-live="usage-groups" {
                thead { tr { th { "Who" } th.num { "Spend" } th { "Share" } th.num { "Tokens in / out" } } }
                tbody {
                    @for g in &groups.groups {
                        tr {
                            td { code { (g.key.as_deref().unwrap_or("(none)")) } }
                            td.num { (money(g.cents)) }
                            td { meter min="0" max=(total) value=(g.cents) {} }
                            td.num { (g.input_tokens) " / " (g.output_tokens) }
                        }
                    }
                    @if groups.groups.is_empty() { tr { td colspan="4" { span.muted { "No spend in this range." } } } }
                }
            }
            (money_in(p, &receipts))
            h2 { "Budgets" }
            @if budgeted.is_empty() { p.muted { "No task has a budget. Set one on a task's page." } }
            ul { @for t in budgeted {
                li { a href=(p.link(&format!("/tasks/{}", t.task_id))) { (t.title) } " "
                     (crate::console::render::spend(t.cost_cents, t.budget_cents)) }
            } }
        },
    })
}

/// Adding money, saving a card, the automatic top-up and the receipts. The buttons go on to Stripe's
/// checkout page; without Stripe the page says so instead of offering them.
fn money_in(p: &Ctx<'_>, r: &Receipts) -> Markup {
    let config = &p.cx.env.config;
    let billing = config.stripe_secret_key.is_some() && config.stripe_webhook_secret.is_some();
    let auto = &r.auto_top_up;
    let slug = p.ws.slug.as_str();
    html! {
        h2 { "Money in" }
        @if p.query("checkout").as_deref() == Some("done") {
            p.muted role="status" { "Thank you: the balance grows as soon as Stripe reports the payment." }
        }
        @if billing {
            form.row method="post" action=(p.action_url(name::top_up)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(slug);
                label { "Cents" input type="number" name="amount_cents" min="500" max="100000" step="100" value="2000"; }
                button.primary type="submit" disabled[!p.can_write()] { "Add money" }
            }
            p {
                (action(p, name::save_card, &[("workspace", slug)], "Save a card", "", None)) " "
                @if r.card_saved { span.muted { "A card is saved." } } @else { span.muted { "No card saved." } }
            }
            @if r.card_saved {
                form.row method="post" action=(p.action_url(name::set_auto_top_up)) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(slug);
                    input type="hidden" name="enabled" value="true";
                    label { "Top up when under (cents)" input type="number" name="threshold_cents" min="0" max="100000"
                        value=(auto.threshold_cents.unwrap_or(500)); }
                    label { "by (cents)" input type="number" name="amount_cents" min="500" max="100000"
                        value=(auto.amount_cents.unwrap_or(2000)); }
                    button type="submit" disabled[!p.can_write()] { "Set automatic top-up" }
                }
                @if auto.enabled {
                    p { "Automatic top-up is on" @if auto.pending { " (one is on its way)" } ". "
                        (action(p, name::set_auto_top_up, &[("workspace", slug), ("enabled", "false")], "Turn it off", "link", None)) }
                }
                @if let Some(e) = &auto.last_error { p.error role="alert" { "The last automatic top-up failed: " (e) } }
            }
        } @else {
            p.muted { "Billing is not configured on this deployment: the operator sets STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET." }
        }
        h3 { "Receipts" }
        table data-live="receipts" {
            thead { tr { th { "When" } th.num { "Amount" } th { "Source" } th { "Stripe" } } }
            tbody {
                @for x in &r.receipts {
                    tr { td { (time(x.created_ms)) } td.num { (money(x.cents)) }
                         td { (x.source) } td { code { (x.stripe_object_id.as_deref().unwrap_or("")) } } }
                }
                @if r.receipts.is_empty() { tr { td colspan="4" { span.muted { "No money added yet." } } } }
            }
        }
    }
}
