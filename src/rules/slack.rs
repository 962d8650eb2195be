//! Slack, as a Slack app speaks it: the request signature every call from Slack carries (`v0`, an
//! HMAC-SHA256 of `v0:<timestamp>:<body>` under the app's signing secret, refused more than five minutes
//! from now against replays), the Block Kit message a request is posted as, and the value its buttons carry
//! back. Pure; the comparison is constant-time.

use crate::rules::hmac::hmac_sha256;
use serde_json::{json, Value};

/// How far a request's timestamp may be from now, as Slack's documentation checks it.
pub const MAX_SKEW_S: i64 = 5 * 60;

/// Why a call from Slack was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Stale,
    Forged,
}

/// Checks `X-Slack-Signature` (`v0=<hex>`) and `X-Slack-Request-Timestamp` against the raw body.
pub fn verify(signing_secret: &str, timestamp: &str, signature: &str, body: &[u8], now_s: i64) -> Result<(), Refused> {
    let at: i64 = timestamp.trim().parse().map_err(|_| Refused::Forged)?;
    if (now_s - at).abs() > MAX_SKEW_S {
        return Err(Refused::Stale);
    }
    let expected = sign(signing_secret, timestamp.trim(), body);
    match crate::rules::ids::constant_time_eq(&expected, signature.trim()) {
        true => Ok(()),
        false => Err(Refused::Forged),
    }
}

/// The `v0=<hex>` signature Slack sends.
pub fn sign(signing_secret: &str, timestamp: &str, body: &[u8]) -> String {
    let base = [format!("v0:{timestamp}:").as_bytes(), body].concat();
    format!("v0={}", hex::encode(hmac_sha256(signing_secret.as_bytes(), &base)))
}

/// What a button answers: the request and the answer it gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub task_id: String,
    pub request_id: String,
    pub answer: String,
}

impl Choice {
    fn value(&self) -> String {
        json!({"t": self.task_id, "r": self.request_id, "a": self.answer}).to_string()
    }

    /// A button's `value` read back; `None` when it is not one of ours.
    pub fn read(value: &str) -> Option<Choice> {
        let v: Value = serde_json::from_str(value).ok()?;
        let field = |k: &str| v[k].as_str().map(str::to_owned);
        Some(Choice { task_id: field("t")?, request_id: field("r")?, answer: field("a")? })
    }
}

/// Slack's three control characters in message text.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A request as it is posted: who asks and what, then its buttons. `answer_url` is where a decision that
/// needs a signed-in person happens (`needs_sign_in`: `always`, a production deploy or delete): such a
/// request gets "Open in agentsky" instead of buttons.
pub struct Posted<'a> {
    pub task_id: &'a str,
    pub request_id: &'a str,
    pub kind: &'a str,
    pub payload: &'a Value,
    pub agent_name: &'a str,
    pub answer_url: &'a str,
    pub needs_sign_in: bool,
}

/// The message's Block Kit blocks and its fallback text.
pub fn message(r: &Posted<'_>) -> (String, Vec<Value>) {
    let p = r.payload;
    let s = |v: &Value| escape(v.as_str().unwrap_or_default());
    let what = match r.kind {
        "access" => format!(
            "*access* to `{}` ({} {}) for *{}*\n>{}",
            s(&p["target"]),
            s(&p["provider"]),
            s(&p["env"]),
            p["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
            s(&p["reason"])
        ),
        "plan" => format!("*a plan*\n>{}", s(&p["summary"])),
        _ => format!("*{}*\n>{}", escape(r.kind), s(&p["prompt"])),
    };
    let text = format!("{} asks {what}", escape(r.agent_name));
    let button = |label: &str, answer: &str, style: Option<&str>| {
        let choice = Choice { task_id: r.task_id.into(), request_id: r.request_id.into(), answer: answer.into() };
        let mut b = json!({"type": "button", "action_id": format!("answer:{answer}"),
            "text": {"type": "plain_text", "text": label}, "value": choice.value()});
        if let Some(style) = style {
            b["style"] = json!(style);
        }
        b
    };
    let open = json!({"type": "button", "action_id": "open", "text": {"type": "plain_text", "text": "Open in agentsky"},
        "url": r.answer_url});
    let elements: Vec<Value> = match r.kind {
        _ if r.needs_sign_in => vec![open],
        "access" => {
            vec![button("Approve once", "approve", Some("primary")), button("Deny", "deny", Some("danger")), open]
        }
        "plan" => {
            vec![button("Approve plan", "approve", Some("primary")), button("Reject", "reject", Some("danger")), open]
        }
        "decision" => {
            let options = p["options"].as_array().into_iter().flatten().filter_map(Value::as_str);
            let mut b: Vec<Value> = options.take(5).map(|o| button(o, o, None)).collect();
            b.push(open);
            b
        }
        // A question wants typed words: the console takes them.
        _ => vec![open],
    };
    let blocks = vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": text}}),
        json!({"type": "actions", "block_id": format!("request:{}", r.request_id), "elements": elements}),
    ];
    (text, blocks)
}

/// The message once a request is decided: what was asked, and who decided what, without buttons.
pub fn decided(asked: &str, outcome: &str) -> Vec<Value> {
    vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": asked}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(outcome)}]}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slacks_documented_example_signature_verifies() {
        // Slack's "Verifying requests from Slack" example.
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(verify(secret, "1531420618", sig, body, 1531420618 + 60), Ok(()));
        assert_eq!(sign(secret, "1531420618", body), sig);
        assert_eq!(verify(secret, "1531420618", sig, body, 1531420618 + 301), Err(Refused::Stale));
        assert_eq!(verify("another", "1531420618", sig, body, 1531420618), Err(Refused::Forged));
        assert_eq!(verify(secret, "1531420619", sig, body, 1531420618), Err(Refused::Forged), "the time is signed");
        assert_eq!(verify(secret, "soon", sig, body, 1531420618), Err(Refused::Forged));
    }

    #[test]
    fn buttons_answer_what_is_safe_and_the_rest_opens_agentsky() {
        let payload = json!({"target": "web", "provider": "vercel", "env": "staging", "scope": ["deploy"], "reason": "ship <it>"});
        let mut r = Posted {
            task_id: "ses_1",
            request_id: "req_1",
            kind: "access",
            payload: &payload,
            agent_name: "Dev",
            answer_url: "https://x/console/w/acme#request-req_1",
            needs_sign_in: false,
        };
        let (text, blocks) = message(&r);
        assert!(text.contains("ship &lt;it&gt;"), "escaped: {text}");
        let buttons = blocks[1]["elements"].as_array().unwrap();
        assert_eq!(
            buttons.iter().map(|b| b["text"]["text"].as_str().unwrap()).collect::<Vec<_>>(),
            ["Approve once", "Deny", "Open in agentsky"]
        );
        let choice = Choice::read(buttons[0]["value"].as_str().unwrap()).unwrap();
        assert_eq!((choice.request_id.as_str(), choice.answer.as_str()), ("req_1", "approve"));
        r.needs_sign_in = true;
        let (_, blocks) = message(&r);
        assert_eq!(blocks[1]["elements"].as_array().unwrap().len(), 1, "only Open in agentsky");
        assert!(Choice::read("not json").is_none());
    }
}
