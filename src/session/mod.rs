//! A session's own state, as its `Session` Durable Object keeps it: the ordered event log, the turn
//! state and the stored configuration, in the object's SQLite. Everything here is synchronous and pure
//! over [`LocalSql`], so the same code runs in the object and in host tests; the object's shell adds only
//! waiting, alarms and the network.
//!
//! Writes that belong together happen without an `.await` between them, which the platform commits
//! atomically: a step's events and the turn state that follows them land together or not at all.

pub mod echo;
pub mod goal;
pub mod keyed;
pub mod protocol;

use crate::store::{Param, Row};
pub use protocol::*;
use serde_json::{json, Value};

/// A turn about to begin: the configuration it runs under and what the session has spent so far.
#[derive(Debug, Clone)]
pub struct Opening {
    pub config: SessionConfig,
    pub spent_cents: i64,
    /// The session's first turn: its run's price is due.
    pub first: bool,
}

/// Rewrites every string inside `v` (object keys aside) with `f`: how redaction reaches into event bodies.
pub fn map_text(v: &mut Value, f: &impl Fn(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(items) => items.iter_mut().for_each(|i| map_text(i, f)),
        Value::Object(map) => map.values_mut().for_each(|i| map_text(i, f)),
        _ => {}
    }
}

/// The object's SQLite (or rusqlite on the host): synchronous, one database per session.
pub trait LocalSql {
    fn exec(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, String>;
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS event (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, message_id TEXT NOT NULL,
       body TEXT NOT NULL, at_ms INTEGER NOT NULL)",
    // A page for one message reads only that message's rows, whatever the log's length.
    "CREATE INDEX IF NOT EXISTS event_message ON event(message_id, seq)",
    "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
    // Keys of events reported from outside (runners), so a retried post never doubles an event.
    "CREATE TABLE IF NOT EXISTS ext_key (k TEXT PRIMARY KEY)",
];

/// How often a turn waiting on a runner wakes to look again (claims and events wake it sooner).
pub const RUNNER_RECHECK_MS: i64 = 10 * 60_000;

/// The most events one page returns.
pub const MAX_PAGE: u32 = 200;
/// A `Read` from here: only events that land after the call (a resource subscription's watch). No client
/// cursor parses to it.
pub const FROM_END: i64 = -1;

/// A session's state over its storage.
pub struct Core<'a, S: LocalSql + ?Sized> {
    sql: &'a S,
}

type Res<T> = Result<T, Refusal>;

fn storage(e: String) -> Refusal {
    Refusal::new(Code::Internal, format!("session storage: {e}"))
}

impl<'a, S: LocalSql + ?Sized> Core<'a, S> {
    pub fn open(sql: &'a S) -> Res<Self> {
        for s in SCHEMA {
            sql.exec(s, &[]).map_err(storage)?;
        }
        Ok(Self { sql })
    }

    fn get<T: serde::de::DeserializeOwned>(&self, key: &str) -> Res<Option<T>> {
        let rows = self.sql.exec("SELECT v FROM kv WHERE k = ?", &[key.into()]).map_err(storage)?;
        rows.into_iter()
            .next()
            .and_then(|r| r.get("v").and_then(Value::as_str).map(str::to_owned))
            .map(|v| serde_json::from_str(&v).map_err(|e| storage(e.to_string())))
            .transpose()
    }

    fn put<T: serde::Serialize>(&self, key: &str, value: &T) -> Res<()> {
        let v = serde_json::to_string(value).map_err(|e| storage(e.to_string()))?;
        self.sql
            .exec(
                "INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
                &[key.into(), v.into()],
            )
            .map(drop)
            .map_err(storage)
    }

    pub fn config(&self) -> Res<Option<SessionConfig>> {
        self.get("config")
    }

    fn require_config(&self) -> Res<SessionConfig> {
        self.config()?.ok_or_else(|| Refusal::new(Code::NotFound, "session not found"))
    }

    pub fn turn(&self) -> Res<Turn> {
        Ok(self.get("turn")?.unwrap_or_default())
    }

    fn set_turn(&self, turn: &Turn) -> Res<()> {
        self.put("turn", turn)
    }

    /// Keeps what the D1 index must now say, when a transition changed it. Called with no `.await` after
    /// the transition's own writes, so both land in one atomic write.
    pub fn hold_index(&self, t: &Transition) -> Res<()> {
        if !t.index_changed {
            return Ok(());
        }
        let mark = IndexMark {
            status: self.status_word(&t.turn)?,
            spent_cents: t.turn.spent_cents,
            message_id: t.turn.message_id.clone(),
        };
        self.put("index", &mark)
    }

    /// What the index has yet to be told, if anything.
    pub fn index_due(&self) -> Res<Option<IndexMark>> {
        self.get("index")
    }

    /// The index now says `mark`: forget it, unless a newer one was held meanwhile.
    pub fn index_done(&self, mark: &IndexMark) -> Res<()> {
        if self.index_due()?.as_ref() == Some(mark) {
            self.sql.exec("DELETE FROM kv WHERE k = 'index'", &[]).map_err(storage)?;
        }
        Ok(())
    }

    /// Appends one event and returns its sequence number.
    pub fn append(&self, kind: EventKind, message_id: &str, body: &Value, now_ms: i64) -> Res<i64> {
        let rows = self
            .sql
            .exec(
                "INSERT INTO event (kind, message_id, body, at_ms) VALUES (?, ?, ?, ?) RETURNING seq",
                &[kind.as_str().into(), message_id.into(), body.to_string().into(), now_ms.into()],
            )
            .map_err(storage)?;
        rows.first()
            .and_then(|r| r.get("seq"))
            .and_then(Value::as_i64)
            .ok_or_else(|| storage("append returned no seq".into()))
    }

    /// The sequence number of a message already in the log (retries of one message find it here).
    fn find_message(&self, message_id: &str) -> Res<Option<i64>> {
        let rows = self
            .sql
            .exec(
                "SELECT seq FROM event WHERE message_id = ? AND kind = 'user_message' ORDER BY seq LIMIT 1",
                &[message_id.into()],
            )
            .map_err(storage)?;
        Ok(rows.first().and_then(|r| r.get("seq")).and_then(Value::as_i64))
    }

    /// Creates the session with its first message and starts its first turn. Repeating it with the same
    /// message is answered like the first time.
    pub fn init(&self, config: &SessionConfig, message: &NewMessage, now_ms: i64) -> Res<Transition> {
        if let Some(existing) = self.config()? {
            if existing.session_id != config.session_id {
                return Err(Refusal::new(Code::Internal, "session object holds another session"));
            }
            return match self.find_message(&message.message_id)? {
                Some(seq) => Ok(Transition::accepted(&message.message_id, seq, self.turn()?)),
                None => Err(Refusal::new(Code::Conflict, "session already started")),
            };
        }
        self.put("config", config)?;
        // The run's price was paid before the object was asked to start (`driver::serve`).
        let mut turn = self.turn()?;
        turn.spent_cents = config.run_price.as_ref().map_or(0, |p| p.cents);
        self.set_turn(&turn)?;
        self.begin_turn(config, message, now_ms)
    }

    /// The turn `call` would begin, with what the wallet must admit first: `None` for a replay, a busy or
    /// stopped session, or a call that begins no turn (the call itself answers those).
    pub fn opens_turn(&self, call: &SessionCall) -> Res<Option<Opening>> {
        let (config, turn) = match call {
            SessionCall::Init(calls::Init { config, .. }) => {
                return Ok(self.config()?.is_none().then(|| Opening {
                    config: (**config).clone(),
                    spent_cents: 0,
                    first: true,
                }))
            }
            SessionCall::Send(_) | SessionCall::SetGoal(_) => match self.config()? {
                Some(config) => (config, self.turn()?),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        if turn.state != TurnState::Idle {
            return Ok(None);
        }
        if let SessionCall::Send(calls::Send { message }) = call {
            if self.find_message(&message.message_id)?.is_some() {
                return Ok(None);
            }
        }
        Ok(Some(Opening { config, spent_cents: turn.spent_cents + turn.reported_cents, first: false }))
    }

    /// Sends the next message. Refused while a turn runs (`session_busy`) and once stopped; budgets and the
    /// wallet were checked before ([`Self::opens_turn`]).
    pub fn send(&self, message: &NewMessage, now_ms: i64) -> Res<Transition> {
        let config = self.require_config()?;
        if let Some(seq) = self.find_message(&message.message_id)? {
            return Ok(Transition::accepted(&message.message_id, seq, self.turn()?));
        }
        let turn = self.turn()?;
        match turn.state {
            TurnState::Running => {
                return Err(Refusal::new(
                    Code::SessionBusy,
                    "a turn is running in this session; read it to its end (turn_finished) and retry",
                ))
            }
            TurnState::Terminated => {
                return Err(Refusal::new(
                    Code::SessionTerminated,
                    "this session is stopped; start a new session or hand it off",
                ))
            }
            TurnState::Idle => {}
        }
        self.begin_turn(&config, message, now_ms)
    }

    fn begin_turn(&self, _config: &SessionConfig, message: &NewMessage, now_ms: i64) -> Res<Transition> {
        let body = json!({ "text": message.text, "from": message.from });
        let seq = self.append(EventKind::UserMessage, &message.message_id, &body, now_ms)?;
        let mut turn = self.turn()?;
        turn.state = TurnState::Running;
        turn.message_id = Some(message.message_id.clone());
        turn.step = 0;
        turn.next_at_ms = Some(now_ms);
        turn.started_ms = now_ms;
        self.set_turn(&turn)?;
        let mut t = Transition::accepted(&message.message_id, seq, turn);
        t.alarm_at_ms = Some(now_ms);
        Ok(t)
    }

    /// One page of events after `after`, for one message's turn or for all of them.
    /// The newest event's position (0 before the first).
    pub fn last_seq(&self) -> Res<i64> {
        let last = self.sql.exec("SELECT MAX(seq) AS seq FROM event", &[]).map_err(storage)?;
        Ok(last.first().and_then(|r| r.get("seq")).and_then(Value::as_i64).unwrap_or(0))
    }

    /// Events after `after` ([`FROM_END`]: after the newest, so only what lands next).
    pub fn page(&self, after: i64, message_id: Option<&str>, limit: u32) -> Res<Page> {
        let limit = limit.clamp(1, MAX_PAGE);
        // A message this session never had would never finish: say so instead of waiting on it.
        if let Some(m) = message_id {
            if self.find_message(m)?.is_none() {
                return Err(Refusal::new(Code::NotFound, format!("no message `{m}` in this session")));
            }
        }
        let last = self.last_seq()?;
        let after = if after == FROM_END { last } else { after };
        if after > last {
            return Err(Refusal::new(
                Code::InvalidParams,
                "`cursor` is past the end of this session; pass a cursor this session gave out",
            ));
        }
        let rows = match message_id {
            Some(m) => self.sql.exec(
                "SELECT seq, kind, message_id, body, at_ms FROM event WHERE message_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                &[m.into(), after.into(), (limit as i64 + 1).into()],
            ),
            None => self.sql.exec(
                "SELECT seq, kind, message_id, body, at_ms FROM event WHERE seq > ? ORDER BY seq LIMIT ?",
                &[after.into(), (limit as i64 + 1).into()],
            ),
        }
        .map_err(storage)?;
        let has_more = rows.len() > limit as usize;
        let events: Vec<Event> =
            rows.into_iter().take(limit as usize).map(Event::from_row).collect::<Result<_, _>>().map_err(storage)?;
        let last_seq = events.last().map_or(after, |e| e.seq);
        let turn = self.turn()?;
        let turn_finished = !has_more
            && match message_id {
                Some(m) => self.turn_end_seq(m)?.is_some_and(|end| end <= last_seq),
                None => turn.state != TurnState::Running,
            };
        Ok(Page { events, last_seq, has_more, turn_finished, status: self.status_word(&turn)? })
    }

    fn turn_end_seq(&self, message_id: &str) -> Res<Option<i64>> {
        let rows = self
            .sql
            .exec("SELECT seq FROM event WHERE message_id = ? AND kind = 'turn_end' LIMIT 1", &[message_id.into()])
            .map_err(storage)?;
        Ok(rows.first().and_then(|r| r.get("seq")).and_then(Value::as_i64))
    }

    fn status_word(&self, turn: &Turn) -> Res<SessionStatus> {
        Ok(if self.config()?.is_none() { SessionStatus::Provisioning } else { turn.state.into() })
    }

    /// Ends the running turn (if any) and archives the session. Repeating it changes nothing.
    pub fn stop(&self, now_ms: i64) -> Res<Transition> {
        self.require_config()?;
        let mut turn = self.turn()?;
        if turn.state == TurnState::Terminated {
            return Ok(Transition::quiet(turn));
        }
        if let (TurnState::Running, Some(m)) = (turn.state, turn.message_id.clone()) {
            self.append(EventKind::Status, &m, &json!({ "text": "stopped by stop_session" }), now_ms)?;
            self.append(EventKind::TurnEnd, &m, &json!({ "reason": "stopped" }), now_ms)?;
        }
        turn.state = TurnState::Terminated;
        turn.next_at_ms = None;
        turn.goal_check = false;
        self.set_turn(&turn)?;
        if let Some(mut g) = self.goal()?.filter(|g| g.status == goal::GoalStatus::Active) {
            g.status = goal::GoalStatus::Cleared;
            g.stopped_reason = Some("the session was stopped".into());
            self.put("goal", &g)?;
        }
        let mut t = Transition::quiet(turn);
        t.wake = true;
        t.index_changed = true;
        Ok(t)
    }

    /// Cancels the running turn: it ends `cancelled` (a status and a `turn_end` in its transcript), what it
    /// spent so far stays counted (each step settled its own charge), a standing goal is cleared, and the
    /// session is idle again. A step still under way when this lands is dropped at its boundary
    /// ([`Self::apply`]); a runner is told by its lease. With `message_id`, only that message's turn: a
    /// repeat after it was cancelled is answered as the first time (`replayed`).
    pub fn cancel_turn(&self, message_id: Option<&str>, now_ms: i64) -> Res<(String, bool, Transition)> {
        self.require_config()?;
        let mut turn = self.turn()?;
        let running = turn.message_id.clone().filter(|_| turn.state == TurnState::Running);
        let target = match (message_id, running) {
            (None, Some(r)) => r,
            (Some(m), Some(r)) if m == r => r,
            (Some(m), _) => return self.cancelled_before(m, turn),
            (None, None) if turn.state == TurnState::Terminated => {
                return Err(Refusal::new(Code::SessionTerminated, "this session is stopped; it runs no turn to cancel"))
            }
            (None, None) => {
                return Err(Refusal::new(
                    Code::Conflict,
                    "no turn is running in this session (it is idle): there is nothing to cancel",
                ))
            }
        };
        // A tool call left unanswered (a turn paused on `ask_user`) is answered, so the conversation the next
        // turn sends a model stays well formed: each call followed by its result.
        for (call_id, name) in self.unanswered_calls(&target)? {
            let body = json!({ "call_id": call_id, "name": name, "is_error": true,
                "content": "not answered: the turn was cancelled before this call finished" });
            self.append(EventKind::ToolResult, &target, &body, now_ms)?;
        }
        self.append(EventKind::Status, &target, &json!({ "text": "the turn was cancelled" }), now_ms)?;
        self.append(EventKind::TurnEnd, &target, &json!({ "reason": TurnEnd::Cancelled }), now_ms)?;
        turn.state = TurnState::Idle;
        turn.next_at_ms = None;
        turn.goal_check = false;
        turn.harness = Value::Null;
        self.set_turn(&turn)?;
        if let Some(mut g) = self.goal()?.filter(|g| g.status == goal::GoalStatus::Active) {
            g.status = goal::GoalStatus::Cleared;
            g.stopped_reason = Some("its turn was cancelled".into());
            self.put("goal", &g)?;
        }
        let t = Transition { wake: true, index_changed: true, ..Transition::quiet(turn) };
        Ok((target, false, t))
    }

    /// The tool calls of a turn without a result yet: `(call_id, name)`, in order.
    fn unanswered_calls(&self, message_id: &str) -> Res<Vec<(String, String)>> {
        let rows = self
            .sql
            .exec(
                "SELECT kind, body FROM event WHERE message_id = ? AND kind IN ('tool_call', 'tool_result') ORDER BY seq",
                &[message_id.into()],
            )
            .map_err(storage)?;
        let mut open: Vec<(String, String)> = Vec::new();
        for r in rows {
            let body: Value =
                r.get("body").and_then(Value::as_str).and_then(|b| serde_json::from_str(b).ok()).unwrap_or_default();
            let id = body["call_id"].as_str().unwrap_or_default().to_owned();
            match r.get("kind").and_then(Value::as_str) {
                Some("tool_call") => open.push((id, body["name"].as_str().unwrap_or_default().to_owned())),
                _ => open.retain(|(call, _)| *call != id),
            }
        }
        Ok(open)
    }

    /// A cancel naming a turn that is not running: answered again if it was cancelled, else refused
    /// saying how it ended.
    fn cancelled_before(&self, message_id: &str, turn: Turn) -> Res<(String, bool, Transition)> {
        if self.find_message(message_id)?.is_none() {
            return Err(Refusal::new(Code::NotFound, format!("no message `{message_id}` in this session")));
        }
        let rows = self
            .sql
            .exec(
                "SELECT body FROM event WHERE message_id = ? AND kind = 'turn_end' ORDER BY seq DESC LIMIT 1",
                &[message_id.into()],
            )
            .map_err(storage)?;
        let reason = rows
            .first()
            .and_then(|r| r.get("body").and_then(Value::as_str))
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
            .and_then(|b| b["reason"].as_str().map(str::to_owned));
        match reason.as_deref() {
            Some("cancelled") => Ok((message_id.to_owned(), true, Transition::quiet(turn))),
            Some(other) => Err(Refusal::new(
                Code::Conflict,
                format!("the turn of message `{message_id}` already ended ({other}): there is nothing to cancel"),
            )),
            // Its turn never began (queued behind nothing) or ended without a mark: nothing runs for it.
            None => Err(Refusal::new(
                Code::Conflict,
                format!("the turn of message `{message_id}` is not running: there is nothing to cancel"),
            )),
        }
    }

    /// Adds a peer's message to the log; the agent reads it with its next turn.
    pub fn note(&self, message: &NewMessage, now_ms: i64) -> Res<Transition> {
        self.require_config()?;
        let turn = self.turn()?;
        if turn.state == TurnState::Terminated {
            return Err(Refusal::new(Code::SessionTerminated, "that session has ended"));
        }
        if self.find_message(&message.message_id)?.is_none() {
            self.append(
                EventKind::UserMessage,
                &message.message_id,
                &json!({ "text": message.text, "from": message.from }),
                now_ms,
            )?;
        }
        Ok(Transition { wake: true, ..Transition::quiet(turn) })
    }

    /// Applies a runner's report for the running turn of `message_id`: each event once, then its end.
    pub fn external(
        &self,
        message_id: &str,
        events: &[ExternalEvent],
        end: Option<TurnEnd>,
        checks: &[goal::CommandCheck],
        reported_cents: Option<i64>,
        now_ms: i64,
    ) -> Res<Transition> {
        let mut turn = self.turn()?;
        if turn.state != TurnState::Running || turn.message_id.as_deref() != Some(message_id) {
            return Err(Refusal::new(Code::Conflict, "this turn is not running any more (stopped, or finished)"));
        }
        if let Some(r) = reported_cents.filter(|r| *r > turn.reported_cents) {
            // Counted against the budget when the step is applied below.
            turn.reported_cents = r;
            self.set_turn(&turn)?;
        }
        if end.is_some() {
            // Kept for the goal check that follows this turn (and only that one).
            self.put("checks", &json!({ "message_id": message_id, "checks": checks }))?;
        }
        let mut fresh = Vec::new();
        for e in events {
            let seen =
                self.sql.exec("SELECT 1 AS one FROM ext_key WHERE k = ?", &[e.key.as_str().into()]).map_err(storage)?;
            if seen.is_empty() && !fresh.iter().any(|(k, _, _): &(String, EventKind, Value)| k == &e.key) {
                fresh.push((e.key.clone(), e.kind, e.body.clone()));
            }
        }
        for (k, _, _) in &fresh {
            self.sql.exec("INSERT INTO ext_key (k) VALUES (?)", &[k.as_str().into()]).map_err(storage)?;
        }
        let outcome = StepOutcome {
            events: fresh.into_iter().map(|(_, kind, body)| (kind, body)).collect(),
            end,
            next_in_ms: Some(RUNNER_RECHECK_MS),
            harness_state: turn.harness.clone(),
            ..StepOutcome::default()
        };
        self.apply(message_id, outcome, now_ms)
    }

    /// A turn whose harness waits on `key` (an answer to its request) continues now.
    pub fn signal(&self, key: &str, now_ms: i64) -> Res<Transition> {
        let mut turn = self.turn()?;
        let awaited = |k: &Value| k.as_str() == Some(key);
        let waits = turn.state == TurnState::Running
            && (turn.harness.get("awaiting").and_then(|a| a["request_id"].as_str()) == Some(key)
                || turn.goal_check
                    && turn
                        .harness
                        .get("goal_checkouts")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(awaited)));
        if !waits {
            return Ok(Transition { wake: true, ..Transition::quiet(turn) });
        }
        turn.next_at_ms = Some(now_ms);
        self.set_turn(&turn)?;
        Ok(Transition { wake: true, alarm_at_ms: Some(now_ms), ..Transition::quiet(turn) })
    }

    /// Deletes the log, the turn and the configuration: nothing of the session stays readable.
    pub fn purge(&self) -> Res<Transition> {
        let turn = self.turn()?;
        self.sql.exec("DELETE FROM event", &[]).map_err(storage)?;
        self.sql.exec("DELETE FROM kv", &[]).map_err(storage)?;
        let mut t = Transition::quiet(Turn { state: TurnState::Terminated, ..turn });
        t.wake = true;
        Ok(t)
    }

    /// Changes the model or thinking level used from the next turn on.
    pub fn configure(&self, model: Option<String>, thinking: Option<String>) -> Res<SessionConfig> {
        let mut config = self.require_config()?;
        if let Some(m) = model {
            config.model = m;
        }
        if let Some(t) = thinking {
            config.thinking = t;
        }
        self.put("config", &config)?;
        Ok(config)
    }

    /// What `get_session` and `collect_result` read from the object.
    pub fn summary(&self) -> Res<Summary> {
        let turn = self.turn()?;
        let rows = self
            .sql
            .exec("SELECT body FROM event WHERE kind = 'agent_message' ORDER BY seq DESC LIMIT 1", &[])
            .map_err(storage)?;
        let last_reply = rows
            .first()
            .and_then(|r| r.get("body").and_then(Value::as_str))
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
            .and_then(|b| b["text"].as_str().map(str::to_owned));
        Ok(Summary { status: self.status_word(&turn)?, spent_cents: turn.spent_cents, last_reply, turn })
    }

    /// The work the alarm should do now, if a turn is running and its next step is due.
    pub fn due(&self, now_ms: i64) -> Res<Option<(SessionConfig, Turn)>> {
        let turn = self.turn()?;
        if turn.state != TurnState::Running || turn.next_at_ms.is_some_and(|t| t > now_ms) {
            return Ok(None);
        }
        Ok(self.config()?.map(|c| (c, turn)))
    }

    /// Persists one harness step of the turn of `message_id`: its events, its charge, and the turn state
    /// after it.
    pub fn apply(&self, message_id: &str, outcome: StepOutcome, now_ms: i64) -> Res<Transition> {
        self.apply_step(message_id, outcome, now_ms).map(|(t, _)| t)
    }

    /// [`Self::apply`], saying whether the step was applied: `false` when its turn was stopped or cancelled
    /// while it ran, so what it would have announced (its end, its budget, its goal) is not its to say.
    pub fn apply_step(&self, message_id: &str, outcome: StepOutcome, now_ms: i64) -> Res<(Transition, bool)> {
        let mut turn = self.turn()?;
        if turn.state != TurnState::Running || turn.message_id.as_deref() != Some(message_id) {
            // Stopped or cancelled while the step ran (and maybe the next turn begun): its output is dropped,
            // that already ended its turn. What it was charged is settled in the ledger, so the spend counts it.
            let Some(charge) = outcome.charge.filter(|c| c.cents > 0) else {
                return Ok((Transition::quiet(turn), false));
            };
            turn.spent_cents += charge.cents;
            self.set_turn(&turn)?;
            return Ok((Transition { index_changed: true, ..Transition::quiet(turn) }, false));
        }
        let message_id = message_id.to_owned();
        for (kind, body) in &outcome.events {
            self.append(*kind, &message_id, body, now_ms)?;
        }
        turn.spent_cents += outcome.charge.as_ref().map_or(0, |c| c.cents);
        turn.step += 1;
        turn.harness = outcome.harness_state.clone();
        let budget = self.require_config()?.budget_cents;
        // What coding agent CLIs reported counts too: the session's budget is what it may cost, whoever pays.
        let over_budget = budget.is_some_and(|b| turn.spent_cents + turn.reported_cents >= b) && outcome.end.is_none();
        let end = if over_budget {
            let reported = match turn.reported_cents {
                0 => String::new(),
                r => format!(" ({r} of them reported by the agent's CLI)"),
            };
            let text = format!("budget of {} cents reached{reported}; the turn stops here", budget.unwrap_or(0));
            self.append(EventKind::Status, &message_id, &json!({ "text": text }), now_ms)?;
            Some(TurnEnd::BudgetReached)
        } else {
            outcome.end
        };
        let mut t = Transition::quiet(turn.clone());
        t.wake = true;
        // The charge is settled already; the index shows the spend at once (task budgets read it).
        t.index_changed = outcome.charge.is_some();
        match end {
            Some(reason) => {
                self.append(EventKind::TurnEnd, &message_id, &json!({ "reason": reason }), now_ms)?;
                turn.harness = Value::Null;
                t.index_changed = true;
                let goal_active = self.goal()?.filter(|g| g.status == goal::GoalStatus::Active);
                if let (Some(mut g), TurnEnd::BudgetReached) = (goal_active.clone(), reason) {
                    g.status = goal::GoalStatus::LimitReached;
                    g.stopped_reason = Some("the session's budget is spent".into());
                    self.put("goal", &g)?;
                }
                if goal_active.is_some() && matches!(reason, TurnEnd::Completed | TurnEnd::Failed) {
                    // The goal is checked as the turn's last step; the session stays busy until then.
                    turn.goal_check = true;
                    turn.next_at_ms = Some(now_ms);
                    t.alarm_at_ms = Some(now_ms);
                } else {
                    turn.state = TurnState::Idle;
                    turn.next_at_ms = None;
                }
            }
            None => {
                let at = now_ms + outcome.next_in_ms.unwrap_or(0);
                turn.next_at_ms = Some(at);
                t.alarm_at_ms = Some(at);
            }
        }
        self.set_turn(&turn)?;
        t.turn = turn;
        Ok((t, true))
    }

    /// The command criteria a runner ran at the end of the turn of `message_id`.
    pub fn turn_checks(&self, message_id: &str) -> Res<Vec<goal::CommandCheck>> {
        let saved: Option<Value> = self.get("checks")?;
        Ok(saved
            .filter(|v| v["message_id"] == message_id)
            .and_then(|v| serde_json::from_value(v["checks"].clone()).ok())
            .unwrap_or_default())
    }

    /// The standing goal, with its spend and minutes brought up to date.
    pub fn goal(&self) -> Res<Option<goal::Goal>> {
        self.get("goal")
    }

    pub fn goal_now(&self, now_ms: i64) -> Res<Option<goal::Goal>> {
        let turn = self.turn()?;
        Ok(self.goal()?.map(|mut g| {
            if g.status == goal::GoalStatus::Active {
                g.spent_cents = turn.spent_cents - g.spent_at_set;
                g.minutes = (now_ms - g.set_ms) / 60_000;
            }
            g
        }))
    }

    /// Sets (or replaces) the standing goal. An idle session starts working on it at once.
    pub fn set_goal(&self, mut g: goal::Goal, now_ms: i64) -> Res<Transition> {
        let config = self.require_config()?;
        let turn = self.turn()?;
        if turn.state == TurnState::Terminated {
            return Err(Refusal::new(Code::SessionTerminated, "this session is stopped; a goal needs a live session"));
        }
        g.status = goal::GoalStatus::Active;
        g.stopped_reason = None;
        g.iterations = 0;
        g.last_verdicts = vec![];
        g.set_ms = now_ms;
        g.spent_at_set = turn.spent_cents;
        if turn.state == TurnState::Idle {
            return self.continue_goal(&config, g, now_ms);
        }
        self.put("goal", &g)?;
        Ok(Transition::quiet(turn))
    }

    /// Starts the goal's next turn with its continuation message.
    fn continue_goal(&self, config: &SessionConfig, mut g: goal::Goal, now_ms: i64) -> Res<Transition> {
        let message = NewMessage {
            message_id: crate::rules::ids::new_id("msg"),
            text: goal::continuation(&g),
            from: Author::Goal,
        };
        g.iterations += 1;
        self.put("goal", &g)?;
        self.begin_turn(config, &message, now_ms)
    }

    /// Clears the standing goal; the session stops working on its own after the current turn.
    pub fn clear_goal(&self, now_ms: i64) -> Res<Option<goal::Goal>> {
        let Some(mut g) = self.goal_now(now_ms)? else { return Ok(None) };
        if g.status == goal::GoalStatus::Active {
            g.status = goal::GoalStatus::Cleared;
            g.stopped_reason = Some("cleared".into());
            self.put("goal", &g)?;
        }
        Ok(Some(g))
    }

    /// Keeps the goal check due while runners run its commands: it steps again when a result's key (one
    /// of `keys`) is signaled, or at `recheck_at_ms`.
    pub fn await_goal_checkouts(&self, keys: Vec<String>, recheck_at_ms: i64) -> Res<Transition> {
        let mut turn = self.turn()?;
        turn.harness = json!({ "goal_checkouts": keys });
        turn.next_at_ms = Some(recheck_at_ms);
        self.set_turn(&turn)?;
        Ok(Transition { alarm_at_ms: Some(recheck_at_ms), ..Transition::quiet(turn) })
    }

    /// Records a goal check (an event in the transcript) and either stops the goal or starts the next turn.
    /// `unaffordable` says why the next turn may not begin (a budget or the wallet), if so: the goal stops.
    pub fn finish_goal_check(
        &self,
        verdicts: Vec<goal::Verdict>,
        charge: Option<Charge>,
        unaffordable: Option<String>,
        now_ms: i64,
    ) -> Res<Transition> {
        let config = self.require_config()?;
        let mut turn = self.turn()?;
        turn.goal_check = false;
        turn.harness = Value::Null;
        turn.spent_cents += charge.as_ref().map_or(0, |c| c.cents);
        let message_id = turn.message_id.clone().unwrap_or_default();
        let Some(mut g) = self.goal()? else {
            turn.state = TurnState::Idle;
            turn.next_at_ms = None;
            self.set_turn(&turn)?;
            return Ok(Transition { index_changed: true, ..Transition::quiet(turn) });
        };
        g.last_verdicts = verdicts;
        g.spent_cents = turn.spent_cents - g.spent_at_set;
        g.minutes = (now_ms - g.set_ms) / 60_000;
        let decision = if g.status == goal::GoalStatus::Active {
            goal::decide(&g, now_ms, turn.spent_cents)
                .or_else(|| unaffordable.map(|why| (goal::GoalStatus::LimitReached, why)))
        } else {
            None
        };
        let still_active = g.status == goal::GoalStatus::Active && decision.is_none();
        if let Some((status, why)) = &decision {
            g.status = *status;
            g.stopped_reason = Some(why.clone());
        }
        let body = json!({
            "iteration": g.iterations, "verdicts": g.last_verdicts, "status": g.status, "stopped_reason": g.stopped_reason,
        });
        self.append(EventKind::GoalCheck, &message_id, &body, now_ms)?;
        self.set_turn(&turn)?;
        if still_active {
            return self.continue_goal(&config, g, now_ms);
        }
        self.put("goal", &g)?;
        turn.state = TurnState::Idle;
        turn.next_at_ms = None;
        self.set_turn(&turn)?;
        Ok(Transition { wake: true, index_changed: true, ..Transition::quiet(turn) })
    }

    /// Ends the turn of `message_id`, whose step failed for good (the harness cannot continue), visibly.
    pub fn fail(&self, message_id: &str, message: &str, now_ms: i64) -> Res<Transition> {
        let outcome = StepOutcome {
            events: vec![(EventKind::Error, json!({ "message": message }))],
            end: Some(TurnEnd::Failed),
            ..StepOutcome::default()
        };
        self.apply(message_id, outcome, now_ms)
    }

    /// The user message that started a turn.
    pub fn page_of_message(&self, message_id: &str) -> Res<Option<Event>> {
        let rows = self
            .sql
            .exec(
                "SELECT seq, kind, message_id, body, at_ms FROM event WHERE message_id = ? AND kind = 'user_message' LIMIT 1",
                &[message_id.into()],
            )
            .map_err(storage)?;
        rows.into_iter().next().map(Event::from_row).transpose().map_err(storage)
    }

    /// Every event of the session, oldest first, for harnesses that rebuild the conversation.
    pub fn history(&self, limit: u32) -> Res<Vec<Event>> {
        let rows = self
            .sql
            .exec(
                "SELECT seq, kind, message_id, body, at_ms FROM event ORDER BY seq DESC LIMIT ?",
                &[(limit as i64).into()],
            )
            .map_err(storage)?;
        let mut events: Vec<Event> =
            rows.into_iter().map(Event::from_row).collect::<Result<_, _>>().map_err(storage)?;
        events.reverse();
        Ok(events)
    }
}
