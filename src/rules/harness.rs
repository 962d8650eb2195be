//! What runs an agent's turns: the harness words, and which of them a `sky runner` runs.

use super::params::words;

words! {
    /// What runs an agent's turns.
    pub enum Harness {
        Echo = "echo",
        Openai = "openai",
        Runner = "runner",
        ClaudeCode = "claude-code",
        Codex = "codex",
    }
}

impl Harness {
    /// Its turns are claimed by a person's `sky runner`: a command of theirs (`runner`), or a coding agent
    /// CLI the runner launches itself (`claude-code`, `codex`).
    pub fn on_runner(self) -> bool {
        matches!(self, Harness::Runner | Harness::ClaudeCode | Harness::Codex)
    }

    /// [`Self::on_runner`] for a stored harness word.
    pub fn word_on_runner(word: &str) -> bool {
        Harness::from_word(word).is_some_and(Harness::on_runner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coding_agent_clis_run_on_runners_and_the_hosted_harnesses_do_not() {
        for w in ["runner", "claude-code", "codex"] {
            assert!(Harness::word_on_runner(w), "{w}");
        }
        for w in ["echo", "openai", "claude_code", ""] {
            assert!(!Harness::word_on_runner(w), "{w}");
        }
    }
}
