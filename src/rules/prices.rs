//! What model calls cost: cents per million input and output tokens, by model (`PRICES`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cents per million input and output tokens, by model; `*` is the price of any other model.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prices(pub BTreeMap<String, [i64; 2]>);

impl Default for Prices {
    fn default() -> Self {
        Self(BTreeMap::from([("*".to_owned(), [100, 400])]))
    }
}

impl Prices {
    /// Reads `{"model": [input, output], "*": [input, output]}`.
    pub fn parse(json: &str) -> Result<Self, String> {
        let mut p: BTreeMap<String, [i64; 2]> = serde_json::from_str(json).map_err(|e| format!("PRICES: {e}"))?;
        p.entry("*".into()).or_insert([100, 400]);
        Ok(Self(p))
    }

    /// What a call costs, rounded up to a whole cent.
    pub fn cents(&self, model: &str, input_tokens: i64, output_tokens: i64) -> i64 {
        (self.centimillionths(model, input_tokens, output_tokens) + 999_999) / 1_000_000
    }

    /// What a call costs in millionths of a dollar (rounded up): a coding agent CLI's turn priced from its
    /// tokens, where the CLI says no cost itself.
    pub fn micro_usd(&self, model: &str, input_tokens: i64, output_tokens: i64) -> i64 {
        (self.centimillionths(model, input_tokens, output_tokens) + 99) / 100
    }

    /// Cents per million tokens times tokens: millionths of a cent.
    fn centimillionths(&self, model: &str, input_tokens: i64, output_tokens: i64) -> i64 {
        let [pi, po] = self.0.get(model).or_else(|| self.0.get("*")).copied().unwrap_or([100, 400]);
        input_tokens.max(0).saturating_mul(pi).saturating_add(output_tokens.max(0).saturating_mul(po))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_round_up_and_fall_back_to_the_default() {
        let p = Prices::parse(r#"{"big": [1000, 3000]}"#).unwrap();
        assert_eq!(p.cents("big", 1_000_000, 0), 1000);
        assert_eq!(p.cents("big", 1, 0), 1, "any use costs at least a cent");
        assert_eq!(p.cents("other", 2_000_000, 500_000), 400);
        assert_eq!(p.cents("other", 0, 0), 0);
        assert_eq!(p.micro_usd("big", 1_000_000, 0), 10_000_000, "$10 a million");
        assert_eq!(p.micro_usd("other", 3_600, 120), 4_080, "3,600 × $1 + 120 × $4 a million");
        assert_eq!(p.micro_usd("other", 1, 0), 1, "rounded up to a millionth");
        assert!(Prices::parse("[1,2]").is_err());
    }
}
